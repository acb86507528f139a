// The BLEPublishing layer; see docs/ARCHITECTURE.md.
