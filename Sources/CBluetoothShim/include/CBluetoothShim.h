// What Swift cannot import from the BlueZ headers: function-like ioctl request macros,
// and constants the installed headers do not define on every distribution.
#ifndef CBLUETOOTHSHIM_H
#define CBLUETOOTHSHIM_H

#include <sys/ioctl.h>

/// HCIDEVUP, HCIDEVDOWN, HCIDEVRESET, HCIGETDEVLIST, HCIGETDEVINFO (`_IOW('H', …)` in hci.h).
unsigned long cbt_ioctl_hcidevup(void);
unsigned long cbt_ioctl_hcidevdown(void);
unsigned long cbt_ioctl_hcidevreset(void);
unsigned long cbt_ioctl_hcigetdevlist(void);
unsigned long cbt_ioctl_hcigetdevinfo(void);

/// ioctl wrappers (Swift cannot call the variadic ioctl): HCIDEVDOWN, and HCIGETDEVINFO's flags.
/// Return -1 with errno set on failure.
int cbt_hci_dev_down(int fd, int index);
int cbt_hci_dev_flags(int fd, int index, unsigned int *flags);

/// Opens a pseudo-terminal master and writes its slave's path to `name`: a stand-in UART.
/// Returns the master fd, or -1 with errno set.
#include <stddef.h>
int cbt_open_pty(char *name, size_t len);

/// HCI socket channels (linux/net/bluetooth/hci_sock.c).
enum {
    CBT_HCI_CHANNEL_RAW = 0,
    CBT_HCI_CHANNEL_USER = 1,
    CBT_HCI_CHANNEL_MONITOR = 2,
    CBT_HCI_CHANNEL_CONTROL = 3,
};

#endif
