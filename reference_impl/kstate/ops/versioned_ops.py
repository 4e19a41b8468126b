"""Operations over the KIP-889 versioned store formats (spec/versioned.md, VER-*)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from itertools import pairwise
from typing import Any

from kstate.codecs import versioned as v
from kstate.errors import CodecError, KStateError
from kstate.ops import JsonDict, error_of, op, tohex, unhex, unhex_required
from kstate.ops.fields import Field, Output, Request, bool_field, deferred, nullable_hex, parse_request
from kstate.ops.inputs import as_bool

_SCENARIO = "versioned-scenario"


def _int(payload: JsonDict, name: str) -> int:
    value = payload.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise CodecError(_SCENARIO, f"field {name!r} must be an integer, got {value!r}")
    return value


def _optional_int(payload: JsonDict, name: str) -> int | None:
    return None if payload.get(name) is None else _int(payload, name)


# --- the declared fields (OPS-2, OPS-3) ------------------------------------------------------------------
# Each reads its field as the hand parsing did, so that a bad one is refused with the same typed error: an integer
# or the steps as a CodecError of the scenario format, bytes as a CodecError of the row's or key's format.


def _int_field(name: str, doc: str = "") -> Field:
    return Field(name, "int", doc, read=lambda payload, field_name, _default: _int(payload, field_name))


def _optional_int_field(name: str, doc: str) -> Field:
    """An integer that may be null or left out (both read as null)."""
    return Field(name, "int | null", doc, None,
                 read=lambda payload, field_name, _default: _optional_int(payload, field_name))


def _bytes_field(name: str, fmt: str, doc: str = "") -> Field:
    return Field(name, "hex", doc, read=lambda payload, field_name, _default: unhex_required(payload.get(field_name), fmt))


def _steps(payload: JsonDict, name: str, _default: Any) -> list[Any]:
    steps = payload.get(name)
    if not isinstance(steps, list):
        raise CodecError(_SCENARIO, f"'{name}' must be a list")
    return steps


def _store_name(payload: JsonDict, name: str, _default: Any) -> str:
    store = payload.get(name)
    if not isinstance(store, str):
        raise CodecError(v.FMT_KEY, f"'{name}' must be a string")
    return store


def _alternatives(names: tuple[str, ...]) -> str:
    return " | ".join(f'"{name}"' for name in names)


_SEGMENT_ID = _int_field("segment_id", "-1: the latest-value store")
_HISTORY_RETENTION = _int_field("history_retention")
_CONFIG_SEGMENT_INTERVAL = _optional_int_field("segment_interval", "null: Kafka's default for the retention")
_VERSION = "{index: int, valid_from: int, valid_to: int, value: hex | null}"


def _result_json(result: v.SegmentSearchResult, with_value: bool) -> JsonDict:
    out: JsonDict = {"index": result.index, "valid_from": result.valid_from, "valid_to": result.valid_to}
    if with_value:
        out["value"] = tohex(result.value)
    return out


# --- SegmentValue.scenario ---------------------------------------------------------------------------


#: The steps of a segment scenario, as ``_run_step`` dispatches them.
SEGMENT_STEP_OPS = ("new", "deserialize", "reload", "insert_as_latest", "insert_as_earliest", "insert",
                    "update_record", "find", "find_all")


def _run_step(state: v.SegmentValue | None, step: JsonDict,
              segment_class: type[v.SegmentValue] = v.SegmentValue) -> tuple[v.SegmentValue | None, JsonDict]:
    """Apply one scenario step; returns the (possibly new) segment value and the step's own fields."""
    kind = step.get("op")
    if kind == "new":
        return segment_class.new_segment_value_with_record(unhex(step.get("value")), _int(step, "valid_from"),
                                                           _int(step, "valid_to")), {}
    if kind == "deserialize":
        return segment_class.deserialize(unhex_required(step.get("bytes"), v.FMT_SEGMENT)), {}
    if state is None:
        raise CodecError(_SCENARIO, f"step {kind!r} needs a segment value; start with 'new' or 'deserialize'")
    if kind == "reload":
        return segment_class.deserialize(state.serialize()), {}
    if kind == "insert_as_latest":
        state.insert_as_latest(_int(step, "valid_from"), _int(step, "valid_to"), unhex(step.get("value")))
        return state, {}
    if kind == "insert_as_earliest":
        state.insert_as_earliest(_int(step, "timestamp"), unhex(step.get("value")))
        return state, {}
    if kind == "insert":
        state.insert(_int(step, "timestamp"), unhex(step.get("value")), _int(step, "index"))
        return state, {}
    if kind == "update_record":
        state.update_record(_int(step, "timestamp"), unhex(step.get("value")), _int(step, "index"))
        return state, {}
    if kind == "find":
        include_value = as_bool(step.get("include_value", False), "include_value")
        found = state.find(_int(step, "timestamp"), include_value)
        return state, {"result": _result_json(found, include_value)}
    if kind == "find_all":
        results = state.find_all(_int(step, "from"), _int(step, "to"))
        return state, {"results": [_result_json(r, True) for r in results]}
    raise CodecError(_SCENARIO, f"unknown step {kind!r}")


def _state_fields(state: v.SegmentValue | None) -> JsonDict:
    if state is None:
        return {"bytes": None, "next_timestamp": None, "min_timestamp": None}
    row = state.serialize()
    return {"bytes": tohex(row), "next_timestamp": v.segment_next_timestamp(row),
            "min_timestamp": v.segment_min_timestamp(row)}


def replay_segment_steps(steps: list[Any], segment_class: type[v.SegmentValue] = v.SegmentValue) -> list[JsonDict]:
    """Replay scenario steps; each result carries the row state after the step, even after a refusal."""
    state: v.SegmentValue | None = None
    results: list[JsonDict] = []
    for step in steps:
        if not isinstance(step, dict):
            raise CodecError(_SCENARIO, f"a step must be an object, got {step!r}")
        try:
            state, fields = _run_step(state, step, segment_class)
        except KStateError as exc:
            fields = error_of(exc)
        results.append({**fields, **_state_fields(state)})
    return results


def _scenario_leniency(payload: JsonDict) -> str | None:
    """Kafka's -1 sentinel collision and unchecked caller preconditions (VER-13, VER-18, VER-19)."""
    steps = payload.get("steps")
    if not isinstance(steps, list):
        return None
    state: v.SegmentValue | None = None
    reasons: list[str] = []
    for step in steps:
        try:
            if state is not None and state.min_timestamp == -1 and step.get("op") in (
                    "find", "find_all", "insert_as_earliest", "insert_as_latest"):
                reasons.append("a row whose min_timestamp is -1 collides with Kafka's walk sentinel")
            state, _ = _run_step(state, step)
            if state is not None and not _orderly(state):
                reasons.append(f"step {step.get('op')!r} breaks timestamp order, which Kafka leaves to the caller")
        except KStateError:
            continue
    return "; ".join(dict.fromkeys(reasons)) or None


def _orderly(state: v.SegmentValue) -> bool:
    """Whether validFroms strictly decrease below ``next`` (the degenerate row excepted)."""
    try:
        versions = state.versions()
    except KStateError:
        return False
    if state.next_timestamp == state.min_timestamp:
        return len(versions) == 1 and versions[0].value is None
    bounds = [state.next_timestamp] + [r.valid_from for r in versions]
    return all(a > b for a, b in pairwise(bounds))


@op("versioned.segment_scenario",
    rules=["VER-4", "VER-5", "VER-6", "VER-7", "VER-8", "VER-10", "VER-11", "VER-12", "VER-13", "VER-14",
           "VER-15", "VER-16", "VER-17", "VER-18", "VER-19", "VER-20", "VER-21"],
    java=["SegmentValue.scenario"], lenient=_scenario_leniency,
    inputs=[Field("steps", f"list[{{op: {_alternatives(SEGMENT_STEP_OPS)}, value?: hex | null, valid_from?: int, "
                           "valid_to?: int, bytes?: hex, timestamp?: int, index?: int, include_value?: bool, from?: int, "
                           "to?: int}]", "new and deserialize start a row; a bad step is refused by itself",
                  read=_steps)],
    outputs=[Output("steps", "list[{bytes: hex | null, next_timestamp: int | null, min_timestamp: int | null, "
                             "result?: {index: int, valid_from: int, valid_to: int, value?: hex | null}, "
                             "results?: list[{index: int, valid_from: int, valid_to: int, value: hex}], error?: {}}]",
                    "each step's result or refusal, and the row after it")])
def segment_scenario(request: Request) -> JsonDict:
    """Replay ``steps`` against one segment value, as Kafka's ``SegmentValue`` does."""
    return {"steps": replay_segment_steps(request.steps)}


@op("versioned.segment_versions", rules=["VER-5", "VER-6", "VER-7", "VER-8", "VER-9"],
    inputs=[_bytes_field("bytes", v.FMT_SEGMENT, "a segment row")],
    outputs=[Output("next_timestamp", "int"), Output("min_timestamp", "int"),
             Output("versions", f"list[{_VERSION}]", "newest first")])
def segment_versions(request: Request) -> JsonDict:
    """Every version of a stored row, tombstones included, newest first; a checked full read."""
    value = v.deserialize_segment_value(request.bytes)
    return {"next_timestamp": value.next_timestamp, "min_timestamp": value.min_timestamp,
            "versions": [_result_json(r, True) for r in value.versions()]}


# --- latest-value rows -------------------------------------------------------------------------------


@op("versioned.latest_from", rules=["VER-3"], java=["RocksDBVersionedStore.LatestValueFormatter.from"],
    inputs=[nullable_hex("value", "null is the codec's to refuse (VER-3)"), _int_field("timestamp")],
    outputs=[Output("bytes", "hex")])
def latest_from(request: Request) -> JsonDict:
    """``[timestamp][value]`` of a latest-value row; a null value is refused."""
    return {"bytes": tohex(v.encode_latest_value(request.value, request.timestamp))}


@op("versioned.latest_decode", rules=["VER-3"], java=["RocksDBVersionedStore.LatestValueFormatter.value+timestamp"],
    inputs=[_bytes_field("bytes", v.FMT_LATEST, "a latest-value row")],
    outputs=[Output("value", "hex"), Output("timestamp", "int")])
def latest_decode(request: Request) -> JsonDict:
    """Value and timestamp of a latest-value row."""
    value, timestamp = v.decode_latest_value(request.bytes)
    return {"value": tohex(value), "timestamp": timestamp}


# --- keys, names, placement and configuration --------------------------------------------------------


@op("versioned.segment_key", rules=["VER-1", "VER-2"], inputs=[_SEGMENT_ID, _bytes_field("key", "hex")],
    outputs=[Output("bytes", "hex")])
def segment_key(request: Request) -> JsonDict:
    """The physical key ``[segment_id int64][key]``; segment -1 is the latest-value store."""
    return {"bytes": tohex(v.segment_key(request.segment_id, request.key))}


@op("versioned.split_segment_key", rules=["VER-1"], inputs=[_bytes_field("bytes", v.FMT_KEY, "a physical key")],
    outputs=[Output("segment_id", "int"), Output("key", "hex")])
def split_segment_key(request: Request) -> JsonDict:
    """Segment id and raw key of a physical key."""
    sid, key = v.split_segment_key(request.bytes)
    return {"segment_id": sid, "key": tohex(key)}


#: Read only for a segment other than the latest-value store's, as before: segment -1 needs no interval (VER-2).
_NAME_SEGMENT_INTERVAL = deferred(replace(_int_field("segment_interval", "not read for segment -1"), optional=True))


@op("versioned.segment_name", rules=["VER-2"],
    inputs=[Field("store", "string", read=_store_name), _SEGMENT_ID, _NAME_SEGMENT_INTERVAL],
    outputs=[Output("name", "string")])
def segment_name(request: Request) -> JsonDict:
    """Logical name of segment ``segment_id`` of ``store``: -1 is ``<store>.latestValues``."""
    store, sid = request.store, request.segment_id
    if sid == v.LATEST_VALUE_SEGMENT_ID:
        return {"name": v.latest_value_store_name(store)}
    return {"name": v.segment_name(store, sid, _NAME_SEGMENT_INTERVAL.parse(request.payload))}


@op("versioned.version_segment", rules=["VER-22"],
    inputs=[_int_field("valid_from"), _optional_int_field("valid_to", "null: the latest version"),
            bool_field("tombstone", default=False), _int_field("segment_interval")],
    outputs=[Output("segment_id", "int", "-1: the latest-value store")])
def version_segment(request: Request) -> JsonDict:
    """Segment id holding a version (-1 = latest-value store); ``valid_to`` null means the latest version."""
    sid = v.version_segment_id(request.valid_from, request.valid_to, request.tombstone, request.segment_interval)
    return {"segment_id": sid}


@op("versioned.default_segment_interval", rules=["VER-23"], inputs=[_HISTORY_RETENTION],
    outputs=[Output("segment_interval", "int")])
def default_segment_interval(request: Request) -> JsonDict:
    """Kafka's default segment interval for a history retention."""
    return {"segment_interval": v.default_segment_interval(request.history_retention)}


@op("versioned.store_config", rules=["VER-23", "VER-24"], inputs=[_HISTORY_RETENTION, _CONFIG_SEGMENT_INTERVAL],
    outputs=[Output("history_retention", "int"), Output("segment_interval", "int"), Output("grace_period", "int")])
def store_config(request: Request) -> JsonDict:
    """Validated configuration: retention, segment interval (default if null) and grace period."""
    config = v.store_config(request.history_retention, request.segment_interval)
    return {"history_retention": config.history_retention, "segment_interval": config.segment_interval,
            "grace_period": config.grace_period}


# --- the per-key store procedure ---------------------------------------------------------------------


def _record_json(record: v.VersionedRecord | None) -> JsonDict | None:
    if record is None:
        return None
    return {"value": tohex(record.value), "timestamp": record.timestamp, "valid_to": record.valid_to}


#: The steps of a key scenario, as ``_store_step`` dispatches them.
STORE_STEP_OPS = ("put", "delete", "get", "get_as_of")


def _store_step(history: v.KeyVersions, step: JsonDict) -> JsonDict:
    kind = step.get("op")
    actions: dict[str, Callable[[], JsonDict]] = {
        "put": lambda: {"result": history.put(unhex(step.get("value")), _int(step, "timestamp"))},
        "delete": lambda: {"result": _record_json(history.delete(_int(step, "timestamp")))},
        "get": lambda: {"result": _record_json(history.get())},
        "get_as_of": lambda: {"result": _record_json(history.get_as_of(_int(step, "timestamp")))},
    }
    action = actions.get(str(kind))
    if action is None:
        raise CodecError(_SCENARIO, f"unknown store step {kind!r}")
    return action()


# The key and steps are read once the configuration is validated, as before, so that a bad configuration is refused
# first (VER-23, VER-24).
_KEY_SCENARIO_KEY = deferred(_bytes_field("key", "hex", "the record key"))
_KEY_SCENARIO_STEPS = deferred(Field(
    "steps", f"list[{{op: {_alternatives(STORE_STEP_OPS)}, value?: hex | null, timestamp?: int}}]",
    "a bad step is refused by itself", read=_steps))
KEY_SCENARIO_INPUTS = (_HISTORY_RETENTION, _CONFIG_SEGMENT_INTERVAL, _KEY_SCENARIO_KEY, _KEY_SCENARIO_STEPS)


def replay_key_scenario(payload: JsonDict, history_class: type[v.KeyVersions] = v.KeyVersions) -> JsonDict:
    """Replay put/delete/get/get_as_of ``steps`` on one key; see :func:`key_scenario` (mutants pass their class)."""
    return _replay_key_scenario(parse_request(KEY_SCENARIO_INPUTS, payload), history_class)


def _replay_key_scenario(request: Request, history_class: type[v.KeyVersions]) -> JsonDict:
    config = v.store_config(request.history_retention, request.segment_interval)
    key = _KEY_SCENARIO_KEY.parse(request.payload)
    steps = _KEY_SCENARIO_STEPS.parse(request.payload)
    history = history_class(config)
    results: list[JsonDict] = []
    for step in steps:
        if not isinstance(step, dict):
            raise CodecError(_SCENARIO, f"a step must be an object, got {step!r}")
        try:
            fields = _store_step(history, step)
        except KStateError as exc:
            fields = error_of(exc)
        rows: list[Any] = [[tohex(k), tohex(r)] for k, r in history.physical_rows(key)]
        results.append({**fields, "observed_stream_time": history.observed_stream_time, "rows": rows})
    return {"steps": results}


@op("versioned.key_scenario",
    rules=["VER-1", "VER-2", "VER-22", "VER-25", "VER-26", "VER-27", "VER-28", "VER-29", "VER-30", "VER-31",
           "VER-32", "VER-33"],
    inputs=KEY_SCENARIO_INPUTS,
    outputs=[Output("steps", "list[{result?: int | {value: hex, timestamp: int, valid_to: int | null} | null, "
                             "error?: {}, observed_stream_time: int, rows: list[[hex, hex]]}]",
                    "each step's result or refusal, the stream time and the key's physical rows after it")])
def key_scenario(request: Request) -> JsonDict:
    """Replay put/delete/get/get_as_of ``steps`` on one key of a running versioned store.

    Each result has the step's ``result`` (or an error), ``observed_stream_time`` and the key's
    physical ``rows`` as ``[physical key, row]`` in store order.
    """
    return _replay_key_scenario(request, v.KeyVersions)
