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

/* LE L2CAP fixed-channel sockets. */

#include <sys/socket.h>
#include <errno.h>
#include <bluetooth/l2cap.h>

int cbt_l2cap_socket(void) {
    return socket(AF_BLUETOOTH, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, BTPROTO_L2CAP);
}

static void cbt_fill_l2(struct sockaddr_l2 *sa, const uint8_t *address, uint8_t address_type, uint16_t cid) {
    memset(sa, 0, sizeof *sa);
    sa->l2_family = AF_BLUETOOTH;
    if (address) memcpy(&sa->l2_bdaddr, address, 6);
    sa->l2_bdaddr_type = address_type;
    sa->l2_cid = htobs(cid);
}

int cbt_l2cap_bind(int fd, const uint8_t *address, uint8_t address_type, uint16_t cid) {
    struct sockaddr_l2 sa;
    cbt_fill_l2(&sa, address, address_type, cid);
    return bind(fd, (struct sockaddr *)&sa, sizeof sa);
}

int cbt_l2cap_connect(int fd, const uint8_t *address, uint8_t address_type, uint16_t cid) {
    struct sockaddr_l2 sa;
    cbt_fill_l2(&sa, address, address_type, cid);
    return connect(fd, (struct sockaddr *)&sa, sizeof sa);
}

static void cbt_read_l2(const struct sockaddr_l2 *sa, uint8_t *address, uint8_t *address_type) {
    memcpy(address, &sa->l2_bdaddr, 6);
    *address_type = sa->l2_bdaddr_type;
}

int cbt_l2cap_accept(int fd, uint8_t *peer_address, uint8_t *peer_address_type) {
    struct sockaddr_l2 sa;
    socklen_t len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    int c = accept4(fd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c >= 0) cbt_read_l2(&sa, peer_address, peer_address_type);
    return c;
}

int cbt_l2cap_local(int fd, uint8_t *address, uint8_t *address_type) {
    struct sockaddr_l2 sa;
    socklen_t len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0) return -1;
    cbt_read_l2(&sa, address, address_type);
    return 0;
}

int cbt_l2cap_peer(int fd, uint8_t *address, uint8_t *address_type) {
    struct sockaddr_l2 sa;
    socklen_t len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    if (getpeername(fd, (struct sockaddr *)&sa, &len) < 0) return -1;
    cbt_read_l2(&sa, address, address_type);
    return 0;
}

int cbt_l2cap_set_security(int fd, uint8_t level) {
    struct bt_security sec;
    memset(&sec, 0, sizeof sec);
    sec.level = level;
    return setsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &sec, sizeof sec);
}

int cbt_socket_error(int fd, int *error) {
    socklen_t len = sizeof *error;
    return getsockopt(fd, SOL_SOCKET, SO_ERROR, error, &len);
}

int cbt_hci_dev_address(int index, uint8_t *address) {
    int fd = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
    if (fd < 0) return -1;
    struct hci_dev_info info;
    memset(&info, 0, sizeof info);
    info.dev_id = (uint16_t)index;
    int r = ioctl(fd, HCIGETDEVINFO, &info);
    int e = errno;
    close(fd);
    if (r < 0) { errno = e; return -1; }
    memcpy(address, &info.bdaddr, 6);
    return 0;
}

/* USBDEVFS_RESET is _IO('U', 20) (linux/usbdevice_fs.h). */

#include <linux/usbdevice_fs.h>

int cbt_usb_reset(int fd) { return ioctl(fd, USBDEVFS_RESET, 0); }
