// The BLESpool layer; see docs/ARCHITECTURE.md.
