"""The conformance tests. They speak only the neutral operation vocabulary through ``implementation``."""
