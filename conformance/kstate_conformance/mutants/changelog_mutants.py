"""Mutants of changelog records, restore conversions and the state layout."""

from __future__ import annotations

from kstate.ops import JsonDict, call
from kstate_conformance import store_types as types
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import alters, mutant, replaces
from kstate_conformance.store_types import TIMESTAMPED_KV, TIMESTAMPED_WINDOW, VERSIONED_KV

_TIMESTAMPED = set(types.TIMESTAMPED_TYPES)
_HEADERS = set(types.HEADERS_TYPES)


@mutant("changelog-processing-time", "timestamped stores log at the record context's timestamp, not the stored one", "changelog", rules=("CL-4", "CL-8"))
@alters("changelog.record_for_write")
def _processing_time(payload: JsonDict, out: JsonDict) -> JsonDict:
    record = out.get("record")
    if payload.get("store_type") in _TIMESTAMPED and isinstance(record, dict):
        record["timestamp"] = payload["context"]["timestamp"]
    return out


@mutant("changelog-header-value-kept", "header-aware stores log the stored value, headers prefix included", "changelog", rules=("CL-8",))
@alters("changelog.record_for_write")
def _header_value_kept(payload: JsonDict, out: JsonDict) -> JsonDict:
    record = out.get("record")
    if payload.get("store_type") in _HEADERS and isinstance(record, dict) and record["value"] is not None:
        record["value"] = payload["value"]
    return out


@mutant("restore-drops-timestamp", "restore of timestamped stores writes the changelog value as is", "changelog", rules=("CL-10", "RST-2", "TSKV-6"))
@replaces("changelog.restore_value")
def _restore_drops_timestamp(payload: JsonDict) -> JsonDict:
    if payload.get("store_type") in (TIMESTAMPED_KV, TIMESTAMPED_WINDOW):
        record = payload["record"]
        return {"key": record["key"], "value": record.get("value")}
    return call("changelog.restore_value", payload)


@mutant("put-if-absent-always-logs", "putIfAbsent logs a record even when the key was present", "changelog", rules=("CL-3",))
@replaces("changelog.record_for_write")
def _put_if_absent_always_logs(payload: JsonDict) -> JsonDict:
    if payload.get("operation") == "put_if_absent":
        return call("changelog.record_for_write", {**payload, "operation": "put"})
    return call("changelog.record_for_write", payload)


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
@replaces("changelog.record_for_write")
def _seqnum_unmasked(payload: JsonDict) -> JsonDict:
    seqnum = payload.get("seqnum", 0)
    if payload.get("retain_duplicates") and seqnum == 0x7FFFFFFF:
        out = call("changelog.record_for_write", {**payload, "seqnum": seqnum - 1})
        record = out["record"]
        if isinstance(record, dict):
            record["key"] = record["key"][:-8] + "80000000"
        out["seqnum"] = 0x80000000
        return out
    return call("changelog.record_for_write", payload)


@mutant("versioned-logs-context-time", "versioned stores log at the record context's timestamp, not the version's",
        "changelog", rules=("CL-5",))
@replaces("changelog.record_for_write")
def _versioned_logs_context_time(payload: JsonDict) -> JsonDict:
    if payload.get("store_type") == VERSIONED_KV and isinstance(payload.get("context"), dict) \
            and "timestamp" in payload["context"]:
        return call("changelog.record_for_write", {**payload, "timestamp": payload["context"]["timestamp"]})
    return call("changelog.record_for_write", payload)


@mutant("window-restore-prepends-timestamp", "restore of plain window stores prepends the record timestamp",
        "changelog", rules=("CL-9",))
@replaces("changelog.restore_value")
def _window_restore_prepends_timestamp(payload: JsonDict) -> JsonDict:
    if payload.get("store_type") == "window":
        return call("changelog.restore_value", {**payload, "store_type": TIMESTAMPED_WINDOW})
    return call("changelog.restore_value", payload)


@mutant("consistency-version-one", "the consistency header v holds 01", "changelog", rules=("CL-12",))
@alters("changelog.consistency_headers")
def _consistency_version_one(payload: JsonDict, out: JsonDict) -> JsonDict:
    if "headers" in out:
        out["headers"] = [[k, "01" if k == "v" else v] for k, v in out["headers"]]
    return out


@mutant("consistency-replaces-position", "restore replaces the store position by the record's c header", "changelog",
        rules=("CL-13",))
@replaces("changelog.apply_consistency")
def _consistency_replaces_position(payload: JsonDict) -> JsonDict:
    out = call("changelog.apply_consistency", {**payload, "position": []})
    if "error" in out:
        return out
    if not out["position"]:
        return call("changelog.apply_consistency", payload)
    return out


@mutant("changelog-topic-unchecked", "changelog topic names are not validated", "changelog", rules=("CL-14",))
@replaces("changelog.topic_name")
def _changelog_topic_unchecked(payload: JsonDict) -> JsonDict:
    parts = [payload.get("application_id"), payload.get("named_topology"), payload.get("store_name"), "changelog"]
    return {"topic": "-".join(str(p) for p in parts if p is not None)}


@mutant("changelog-topic-defaults-win", "the application's topic.* defaults override the store's own log config",
        "changelog", rules=("CL-15",))
@replaces("changelog.topic_config")
def _changelog_topic_defaults_win(payload: JsonDict) -> JsonDict:
    defaults = payload.get("topic_defaults")
    if not isinstance(defaults, dict) or not isinstance(payload.get("log_config"), dict):
        return call("changelog.topic_config", payload)
    log_config = {k: v for k, v in payload["log_config"].items() if k not in defaults}
    return call("changelog.topic_config", {**payload, "log_config": {**log_config, **defaults}})


@mutant("changelog-log-config-replaces", "withLoggingEnabled(map) replaces the window builder's map, dropping the "
        "cleanup.policy=delete a store keeping duplicates put there", "changelog", rules=("CL-16",))
@alters("changelog.topic_config")
def _changelog_log_config_replaces(payload: JsonDict, out: JsonDict) -> JsonDict:
    config = out.get("config")
    log_config = payload.get("log_config")
    if isinstance(config, dict) and isinstance(log_config, dict) and payload.get("retain_duplicates") \
            and "cleanup.policy" not in log_config and config.get("cleanup.policy") == "delete":
        config["cleanup.policy"] = "compact,delete"
    return out


@mutant("window-retention-wraps", "retention + additional retention overflows a long instead of saturating",
        "changelog", rules=("CL-16",))
@alters("changelog.topic_config")
def _window_retention_wraps(payload: JsonDict, out: JsonDict) -> JsonDict:
    config = out.get("config")
    if isinstance(config, dict) and "retention.ms" in config and "retention_ms" in payload \
            and not (payload.get("log_config") or {}).get("retention.ms"):
        total = payload["retention_ms"] + payload.get("additional_retention_ms", 86_400_000)
        wrapped = (total + (1 << 63)) % (1 << 64) - (1 << 63)
        config["retention.ms"] = str(wrapped)
    return out


@mutant("versioned-lag-without-day", "min.compaction.lag.ms is the history retention alone", "changelog",
        rules=("CL-17",))
@alters("changelog.topic_config")
def _versioned_lag_without_day(payload: JsonDict, out: JsonDict) -> JsonDict:
    config = out.get("config")
    history = payload.get("history_retention_ms")
    if isinstance(config, dict) and "min.compaction.lag.ms" in config and isinstance(history, int):
        config["min.compaction.lag.ms"] = str(history)
    return out


@mutant("task-dir-dashed", "task directories named <subtopology>-<partition>", "layout", rules=("LAY-1",))
@alters("layout.task_dir")
def _task_dir_dashed(payload: JsonDict, out: JsonDict) -> JsonDict:
    if "error" in out:
        return out
    name = f"{payload['subtopology']}-{payload['partition']}"
    return {"task_dir": out["task_dir"][: -len(out["name"])] + name, "name": name}


@mutant("store-dir-without-rocksdb", "key-value stores live at <task>/<store>, without the rocksdb/ directory",
        "layout", rules=("LAY-2",))
@alters("layout.store_paths")
def _store_dir_without_rocksdb(payload: JsonDict, out: JsonDict) -> JsonDict:
    if str(out.get("store_dir", "")).startswith("rocksdb/"):
        out["store_dir"] = out["store_dir"][len("rocksdb/"):]
    return out


@mutant("checkpoint-file-undotted", "the task checkpoint file is named checkpoint, not .checkpoint", "layout",
        rules=("LAY-4",))
@alters("layout.store_paths")
def _checkpoint_file_undotted(payload: JsonDict, out: JsonDict) -> JsonDict:
    if "task_checkpoint_file" in out:
        out["task_checkpoint_file"] = "checkpoint"
    return out


@mutant("window-headers-cf-as-kv", "time-ordered window stores with headers use the key-value headers family name",
        "layout", rules=("LAY-5",))
@alters("layout.column_families")
def _window_headers_cf_as_kv(payload: JsonDict, out: JsonDict) -> JsonDict:
    if "open" in out:
        rename = {"windowKeyValueWithHeaders": "keyValueWithTimestampAndHeaders"}
        out["open"] = [rename.get(cf, cf) for cf in out["open"]]
        out["data_cf"] = rename.get(out["data_cf"], out["data_cf"])
    return out


@mutant("empty-legacy-family-upgrades", "a timestamped store opens in upgrade mode when the default family exists, "
        "even empty", "layout", rules=("LAY-7",))
@replaces("layout.column_families")
def _empty_legacy_family_upgrades(payload: JsonDict) -> JsonDict:
    existing = payload.get("existing")
    if payload.get("store_type") in (TIMESTAMPED_KV, TIMESTAMPED_WINDOW) and isinstance(existing, dict) \
            and existing.get("default") is False:
        return call("layout.column_families", {**payload, "existing": {**existing, "default": True}})
    return call("layout.column_families", payload)


@mutant("headers-store-ignores-default-data", "a header-aware store over a timestamped database ignores data left "
        "in the default family", "layout", rules=("LAY-8",))
@replaces("layout.column_families")
def _headers_store_ignores_default_data(payload: JsonDict) -> JsonDict:
    existing = payload.get("existing")
    if isinstance(existing, dict) and "keyValueWithTimestamp" in existing and existing.get("default"):
        return call("layout.column_families", {**payload, "existing": {**existing, "default": False}})
    return call("layout.column_families", payload)


@mutant("sidecar-unknown", "rocksdict's sidecar file is classified as an unknown file", "layout", rules=("LAY-10",))
@alters("layout.classify_store_file")
def _sidecar_unknown(payload: JsonDict, out: JsonDict) -> JsonDict:
    return {"kind": "unknown"} if out.get("kind") == "not_layout" else out
