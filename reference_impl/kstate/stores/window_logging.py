"""The change-logging layer of window stores: Kafka's ``ChangeLoggingWindowBytesStore`` and its timestamped and
header-aware variants (spec/window-store.md WS-22 to WS-24; spec/changelog.md CL-6).

Every ``put`` sends ``[key][window start][seqnum]`` with the layer's *own* seqnum, counted as the store counts
its own but kept apart: a put the store drops (expired) or skips (a null value with duplicates) is still
logged and still counts (WS-22). The record's value, timestamp and headers follow the store type's row of
the table (WS-23). The record is built before the store is written, so a write the log would refuse
changes nothing (WS-24).
"""

from __future__ import annotations

from collections.abc import Sequence

from kstate.codecs import changelog as cl
from kstate.codecs import window_keys
from kstate.stores.changelogging import ChangelogSink, RecordContextHolder
from kstate.stores.surface import check_value, require_key
from kstate.stores.window import TimedValue, WindowBytesStore, WindowedEntry, check_time
from kstate.stores.wrapping import WrappedStore


class ChangeLoggingWindowBytesStore(WrappedStore[WindowBytesStore]):
    """Logs every ``put`` of the window store beneath; reads, restore and the life-cycle are the store's (WS-22)."""

    def __init__(self, inner: WindowBytesStore, context: RecordContextHolder, sink: ChangelogSink) -> None:
        super().__init__(inner)
        self.store_type = inner.store_type
        self.retain_duplicates = inner.retain_duplicates
        self.context = context
        self.sink = sink
        #: The layer's own duplicate counter (WS-22).
        self.seqnum = 0

    def check_write(self, key: bytes | None, value: bytes | None, window_start: int = 0) -> None:
        """Refuse, as :meth:`put` would, a write whose changelog record cannot be built (WS-24)."""
        self._record(key, value, window_start, self.seqnum)

    def _record(self, key: bytes | None, value: bytes | None, window_start: int, seqnum: int) -> cl.ChangelogRecord:
        key = require_key(key)  # None: NullKeyError; not bytes: refused by name, never bytes(key) (WS-35)
        check_time("window_start", window_start)
        return cl.window_put_record(self.store_type, key, window_start, seqnum, check_value(value),
                                    self.context.codec_context())

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        """The store's put, then the record with the layer's next seqnum (WS-22, WS-23, WS-24)."""
        seqnum = window_keys.next_seqnum(self.seqnum, self.retain_duplicates)
        record = self._record(key, value, window_start, seqnum)
        self.inner.put(key, value, window_start)
        self.seqnum = seqnum
        self.sink.append(record)

    # reads: the store's ------------------------------------------------------------------------------------------

    def fetch(self, key: bytes, time: int) -> bytes | None:
        return self.inner.fetch(key, time)

    def fetch_range(self, key: bytes, time_from: int, time_to: int, backward: bool = False) -> list[TimedValue]:
        return self.inner.fetch_range(key, time_from, time_to, backward)

    def fetch_keys(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int,
                   backward: bool = False) -> list[WindowedEntry]:
        return self.inner.fetch_keys(key_from, key_to, time_from, time_to, backward)

    def fetch_all(self, time_from: int, time_to: int, backward: bool = False) -> list[WindowedEntry]:
        return self.inner.fetch_all(time_from, time_to, backward)

    def all(self, backward: bool = False) -> list[WindowedEntry]:
        return self.inner.all(backward)

    def restore_records(self, records: Sequence[cl.ChangelogRecord]) -> None:
        """Restore goes to the store beneath, never logged again (RST-4, WS-25)."""
        self.inner.restore_records(records)


__all__ = ["ChangeLoggingWindowBytesStore"]
