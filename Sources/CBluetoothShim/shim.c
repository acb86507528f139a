#include "CBluetoothShim.h"
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>

unsigned long cbt_ioctl_hcidevup(void) { return HCIDEVUP; }
unsigned long cbt_ioctl_hcidevdown(void) { return HCIDEVDOWN; }
unsigned long cbt_ioctl_hcidevreset(void) { return HCIDEVRESET; }
unsigned long cbt_ioctl_hcigetdevlist(void) { return HCIGETDEVLIST; }
unsigned long cbt_ioctl_hcigetdevinfo(void) { return HCIGETDEVINFO; }
