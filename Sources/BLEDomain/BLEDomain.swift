// The BLEDomain layer; see docs/ARCHITECTURE.md.
