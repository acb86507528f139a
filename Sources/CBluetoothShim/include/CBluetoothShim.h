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

/// HCI socket channels (linux/net/bluetooth/hci_sock.c).
enum {
    CBT_HCI_CHANNEL_RAW = 0,
    CBT_HCI_CHANNEL_USER = 1,
    CBT_HCI_CHANNEL_MONITOR = 2,
    CBT_HCI_CHANNEL_CONTROL = 3,
};

#endif
