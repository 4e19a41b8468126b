"""``kstate inspect``: an offline, read-only inspector of a Kafka Streams state directory (spec/layout.md, LAY-*)."""

from kstate.inspect.state_dir import (
    DatabaseReport,
    InspectError,
    NotAStateDirectoryError,
    Report,
    StoreReport,
    TaskReport,
    Violation,
    dump_store,
    dump_store_lines,
    inspect_state_dir,
    json_line,
)

__all__ = [
    "DatabaseReport",
    "InspectError",
    "NotAStateDirectoryError",
    "Report",
    "StoreReport",
    "TaskReport",
    "Violation",
    "dump_store",
    "dump_store_lines",
    "inspect_state_dir",
    "json_line",
]
