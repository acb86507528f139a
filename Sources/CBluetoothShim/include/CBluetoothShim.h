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

/// LE L2CAP sockets (net/bluetooth/l2cap_sock.c) on a fixed channel, without exposing `struct sockaddr_l2`:
/// addresses are 6 bytes in bdaddr_t order (least significant byte first), address types are
/// BDADDR_LE_PUBLIC (1) or BDADDR_LE_RANDOM (2). Each returns -1 with errno set on failure.
#include <stdint.h>
enum {
    CBT_BDADDR_LE_PUBLIC = 1,
    CBT_BDADDR_LE_RANDOM = 2,
};
/// socket(AF_BLUETOOTH, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, BTPROTO_L2CAP).
int cbt_l2cap_socket(void);
/// bind() to a local adapter address (NULL: BDADDR_ANY) on fixed channel `cid`.
int cbt_l2cap_bind(int fd, const uint8_t *address, uint8_t address_type, uint16_t cid);
/// connect() to a peer on fixed channel `cid` (EINPROGRESS on a non-blocking socket).
int cbt_l2cap_connect(int fd, const uint8_t *address, uint8_t address_type, uint16_t cid);
/// accept4(…, SOCK_NONBLOCK | SOCK_CLOEXEC), writing the peer's address and type.
int cbt_l2cap_accept(int fd, uint8_t *peer_address, uint8_t *peer_address_type);
/// getsockname / getpeername as address + type.
int cbt_l2cap_local(int fd, uint8_t *address, uint8_t *address_type);
int cbt_l2cap_peer(int fd, uint8_t *address, uint8_t *address_type);
/// setsockopt(SOL_BLUETOOTH, BT_SECURITY, {level}): BT_SECURITY_LOW = 1, MEDIUM = 2, HIGH = 3.
int cbt_l2cap_set_security(int fd, uint8_t level);
/// getsockopt(SOL_SOCKET, SO_ERROR): the outcome of a non-blocking connect (0 = connected).
int cbt_socket_error(int fd, int *error);
/// The adapter's public address by index (HCIGETDEVINFO), whether or not it is up.
int cbt_hci_dev_address(int index, uint8_t *address);

/// ioctl(fd, USBDEVFS_RESET) on an open usbfs node (/dev/bus/usb/BBB/DDD). Returns -1 with errno set on failure.
int cbt_usb_reset(int fd);

#endif
