// libbluetooth (BlueZ) headers needed by BLETransport's kernel socket transports.
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
