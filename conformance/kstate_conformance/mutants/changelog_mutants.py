"""Mutants of changelog records, restore conversions and the state layout."""

from __future__ import annotations

from kstate.ops import JsonDict, call
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant

_TIMESTAMPED = {"timestamped_kv", "timestamped_window", "timestamped_kv_with_headers", "timestamped_window_with_headers"}
_HEADERS = {"timestamped_kv_with_headers", "timestamped_window_with_headers", "session_with_headers"}


@mutant("changelog-processing-time", "timestamped stores log at the record context's timestamp, not the stored one", "changelog", rules=("CL-4", "CL-8"))
def _processing_time() -> dict[str, Handler]:
    def record_for_write(payload: JsonDict) -> JsonDict:
        out = call("changelog.record_for_write", payload)
        record = out.get("record")
        if payload.get("store_type") in _TIMESTAMPED and isinstance(record, dict):
            record["timestamp"] = payload["context"]["timestamp"]
        return out

    return {"changelog.record_for_write": record_for_write}


@mutant("changelog-header-value-kept", "header-aware stores log the stored value, headers prefix included", "changelog", rules=("CL-8",))
def _header_value_kept() -> dict[str, Handler]:
    def record_for_write(payload: JsonDict) -> JsonDict:
        out = call("changelog.record_for_write", payload)
        record = out.get("record")
        if payload.get("store_type") in _HEADERS and isinstance(record, dict) and record["value"] is not None:
            record["value"] = payload["value"]
        return out

    return {"changelog.record_for_write": record_for_write}


@mutant("restore-drops-timestamp", "restore of timestamped stores writes the changelog value as is", "changelog", rules=("CL-10", "RST-2", "TSKV-6"))
def _restore_drops_timestamp() -> dict[str, Handler]:
    def restore_value(payload: JsonDict) -> JsonDict:
        if payload.get("store_type") in ("timestamped_kv", "timestamped_window"):
            record = payload["record"]
            return {"key": record["key"], "value": record.get("value")}
        return call("changelog.restore_value", payload)

    return {"changelog.restore_value": restore_value}


@mutant("put-if-absent-always-logs", "putIfAbsent logs a record even when the key was present", "changelog", rules=("CL-3",))
def _put_if_absent_always_logs() -> dict[str, Handler]:
    def record_for_write(payload: JsonDict) -> JsonDict:
        if payload.get("operation") == "put_if_absent":
            return call("changelog.record_for_write", {**payload, "operation": "put"})
        return call("changelog.record_for_write", payload)

    return {"changelog.record_for_write": record_for_write}


@mutant("segment-dir-by-id", "segment directories are named by segment id instead of id * interval", "layout", rules=("LAY-3",))
def _segment_dir_by_id() -> dict[str, Handler]:
    def segment_dir_name(payload: JsonDict) -> JsonDict:
        return {"name": f"{payload['store_name']}.{payload['segment_id']}"}

    def store_paths(payload: JsonDict) -> JsonDict:
        out = call("layout.store_paths", payload)
        if "segment_dir" in out:
            name = payload["store_name"]
            out["segment_dir"] = f"{name}/{name}.{payload['segment_id']}"
        return out

    return {"layout.segment_dir_name": segment_dir_name, "layout.store_paths": store_paths}


@mutant("window-seqnum-unmasked", "the logging layer's duplicate counter is not masked to 31 bits", "changelog", rules=("CL-6",))
def _seqnum_unmasked() -> dict[str, Handler]:
    def record_for_write(payload: JsonDict) -> JsonDict:
        seqnum = payload.get("seqnum", 0)
        if payload.get("retain_duplicates") and seqnum == 0x7FFFFFFF:
            out = call("changelog.record_for_write", {**payload, "seqnum": seqnum - 1})
            record = out["record"]
            if isinstance(record, dict):
                record["key"] = record["key"][:-8] + "80000000"
            out["seqnum"] = 0x80000000
            return out
        return call("changelog.record_for_write", payload)

    return {"changelog.record_for_write": record_for_write}
