// _GNU_SOURCE first: it exposes posix_openpt/ptsname_r to this file.
#define _GNU_SOURCE
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include "CBluetoothShim.h"
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>

unsigned long cbt_ioctl_hcidevup(void) { return HCIDEVUP; }
unsigned long cbt_ioctl_hcidevdown(void) { return HCIDEVDOWN; }
unsigned long cbt_ioctl_hcidevreset(void) { return HCIDEVRESET; }
unsigned long cbt_ioctl_hcigetdevlist(void) { return HCIGETDEVLIST; }
unsigned long cbt_ioctl_hcigetdevinfo(void) { return HCIGETDEVINFO; }

#include <string.h>

int cbt_hci_dev_down(int fd, int index) { return ioctl(fd, HCIDEVDOWN, index); }

int cbt_hci_dev_flags(int fd, int index, unsigned int *flags) {
    struct hci_dev_info info;
    memset(&info, 0, sizeof info);
    info.dev_id = (uint16_t)index;
    if (ioctl(fd, HCIGETDEVINFO, &info) < 0) return -1;
    *flags = info.flags;
    return 0;
}

/* posix_openpt, grantpt, unlockpt and ptsname_r: hidden from Swift's Glibc module (feature macros). */

int cbt_open_pty(char *name, size_t len) {
    int fd = posix_openpt(O_RDWR | O_NOCTTY);
    if (fd < 0) return -1;
    if (grantpt(fd) < 0 || unlockpt(fd) < 0 || ptsname_r(fd, name, len) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}
