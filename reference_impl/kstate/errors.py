"""The typed error family raised by every kstate codec and store.

Decoding hostile bytes never raises anything but a :class:`DecodeError`; invalid arguments to an
encoder raise :class:`EncodeError`. Both name the format, and a decode error names the byte offset.
"""

from __future__ import annotations


class KStateError(Exception):
    """Base of every error kstate raises on purpose."""


class CodecError(KStateError):
    """A codec refused its input; ``fmt`` names the format (for example ``"varint"``)."""

    def __init__(self, fmt: str, reason: str, offset: int | None = None) -> None:
        self.fmt = fmt
        self.reason = reason
        self.offset = offset
        where = f" at byte {offset}" if offset is not None else ""
        super().__init__(f"{fmt}: {reason}{where}")


class DecodeError(CodecError):
    """Bytes that do not decode as ``fmt``: truncated, out of range, or malformed."""


class EncodeError(CodecError):
    """A value that ``fmt`` cannot encode (a null where Kafka requires a value, an out-of-range int)."""


class NullKeyError(KStateError, ValueError):
    """A null key was given where Kafka Streams throws ``NullPointerException``."""


class InvalidArgumentError(KStateError, TypeError, ValueError):
    """An argument of the wrong type or value; ``argument`` names it (a ``TypeError`` and a ``ValueError``)."""

    def __init__(self, argument: str, reason: str) -> None:
        self.argument = argument
        self.reason = reason
        super().__init__(f"{argument}: {reason}")


class StateFileError(KStateError):
    """A file of the state directory that the kit will not read or write as it is (LAY-15): a symbolic link, a
    FIFO, a device, a directory where a file belongs, one over its size cap, or a name the file system cannot
    hold. ``path`` names the file; ``errno`` is the OS error's, if one was raised."""

    def __init__(self, path: object, reason: str, errno: int | None = None) -> None:
        self.path = str(path)
        self.reason = reason
        self.errno = errno
        super().__init__(f"{path}: {reason}")


class StateFileTooLargeError(StateFileError):
    """A state-directory file larger than the cap its reader allows (LAY-15); ``cap`` is that cap in bytes."""

    def __init__(self, path: object, size: int, cap: int) -> None:
        self.size = size
        self.cap = cap
        super().__init__(path, f"holds {size} bytes or more, over the cap of {cap} bytes for this file")
