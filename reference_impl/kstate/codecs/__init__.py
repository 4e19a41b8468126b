"""Pure codecs: bytes in, bytes out, no I/O. Each module cites the spec rules it implements."""
