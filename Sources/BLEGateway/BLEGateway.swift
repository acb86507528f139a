// The BLEGateway layer; see docs/ARCHITECTURE.md.
