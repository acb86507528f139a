// The BLEHost layer; see docs/ARCHITECTURE.md.
