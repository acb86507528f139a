// The BLESimulator layer; see docs/ARCHITECTURE.md.
