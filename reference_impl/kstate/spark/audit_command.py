"""``kstate audit``: the instances' stores against the state the Spark oracle computes from their changelogs.

The command's orchestration: arguments checked and stores' types detected, then each store audited by its
family's :func:`family_audit` (what it needs, how its stores are read, which oracle judges them), and
the outcome printed and reported (spec/audit rules of kv-stores.md, versioned-store.md, window-store.md,
session-store.md). Neither pyspark nor confluent_kafka is imported before a store is audited.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kstate.codecs.store_types import BUILT_KV_TYPES, LEGACY_ALIASES, STORE_TYPES, UnknownFamilyError
from kstate.terminal import console, err_console

if TYPE_CHECKING:
    from kstate.codecs.store_types import StoreType
    from kstate.spark.audit_report import StoreAudit
    from kstate.spark.oracle import AuditReport, LegacyBoundary
    from kstate.spark.semantics import FamilyParameters


#: What each extra brings, for the message when one is missing.
_EXTRAS = {"confluent_kafka": ("kafka", "confluent-kafka"), "pyspark": ("spark", "pyspark, pandas and pyarrow"),
           "pandas": ("spark", "pyspark, pandas and pyarrow"), "pyarrow": ("spark", "pyspark, pandas and pyarrow")}


def _missing_extra(exc: ModuleNotFoundError, what: str) -> int:
    root = (exc.name or "").split(".")[0]
    extra, packages = _EXTRAS.get(root, ("", root))
    # The README's install command: the audit needs both extras, so both are named whichever is missing.
    hint = ("python -m pip install '.[kafka,spark]' from a clone (or the wheel, with [kafka,spark])" if extra
            else f"install the Python package {root}")
    err_console.print(f"[red]error:[/red] {escape(f'{what} needs {packages}, which is not installed: {hint}')}",
                      soft_wrap=True)
    return 2


def _audit_client_config(args: argparse.Namespace) -> dict[str, str]:
    from kstate.kafka.client_config import build_client_config

    password = os.environ.get(args.sasl_password_env) if args.sasl_password_env else None
    if args.sasl_password_env and password is None:
        from kstate.kafka.client_config import ClientConfigError

        raise ClientConfigError(f"--sasl-password-env: the environment variable {args.sasl_password_env} is not set")
    shortcuts = {
        "security.protocol": args.security_protocol, "sasl.mechanism": args.sasl_mechanism,
        "sasl.username": args.sasl_username, "sasl.password": password, "ssl.ca.location": args.ssl_ca,
        "ssl.certificate.location": args.ssl_cert, "ssl.key.location": args.ssl_key,
    }
    return build_client_config(file=args.client_config, shortcuts=shortcuts, settings=args.client_property)


def _detect_audit_store_type(state_dirs: list[str], application_id: str, store: str) -> tuple[str | None, str]:
    """The type of ``store`` as the offline inspector detects it in the instances' task directories (LAY-5)."""
    from kstate.inspect.state_dir import NotAStateDirectoryError, inspect_state_dir

    found: dict[str, str] = {}
    for state_dir in state_dirs:
        app_dir = Path(state_dir) / application_id
        if not app_dir.is_dir():
            continue
        # The application directory as a whole (LAY-1): inspecting each task directory alone made the note about
        # the application directory above it fail (issue 34).
        try:
            tasks = inspect_state_dir(app_dir).tasks
        except NotAStateDirectoryError:
            continue
        for task in tasks:
            found.update((s.store_type, s.evidence) for s in task.stores if s.name == store)
    known = {t: why for t, why in found.items() if t in audit_choices()}
    if len(known) == 1:
        return next(iter(known.items()))
    if not found:
        return None, "no such store in any task directory"
    return None, "; ".join(f"{t}: {why}" for t, why in sorted(found.items()))


class _AuditProgress:
    """What ``kstate audit`` is doing, per store and stage: a rich display on a terminal, one plain line to stderr
    per stage otherwise (CI logs, pipes), nothing with ``--quiet``."""

    STAGES = ("reading stores", "reading the changelog", "computing the expected state", "comparing")
    #: Seconds between two looks at Spark's running stages (on a terminal only).
    SPARK_POLL_SECONDS = 0.5

    def __init__(self, quiet: bool) -> None:
        import threading

        from rich.progress import SpinnerColumn

        self.quiet = quiet
        self.live = not quiet and err_console.is_terminal
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=err_console, disable=not self.live)
        self.task: Any = None
        self.store = ""
        self.stage = ""
        self.detail = ""
        self.pending: dict[str, str] = {}
        self._stopped = threading.Event()
        self._watcher: threading.Thread | None = None

    def __enter__(self) -> _AuditProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        if self._watcher is not None:
            self._watcher.join()
        self.progress.__exit__(None, None, None)

    def _say(self, text: str, plain: bool = True) -> None:
        if self.live:
            self.progress.update(self.task, description=text)
        elif plain and not self.quiet:
            err_console.print(f"audit {text}", markup=False, highlight=False, soft_wrap=True)

    def begin(self, store: str, stages: int = len(STAGES)) -> None:
        """A new row (on a terminal, a new line) for ``store``'s stages."""
        self.store, self.stage, self.detail = store, "", ""
        self.task = self.progress.add_task(store, total=stages)

    def __call__(self, stage: str) -> None:
        """The oracle's progress callback: ``stage`` is one of STAGES, or a stage the oracle names anew."""
        if stage == self.stage:
            return
        self.stage, self.detail = stage, ""
        if stage in self.STAGES:
            self.progress.update(self.task, completed=self.STAGES.index(stage))
        known = self.pending.pop(stage, None)
        if known:
            self.detail = known
        self._say(f"{self.store}: {stage}" + (f" ({known})" if known else ""))

    def expect(self, stage: str, detail: str) -> None:
        """What is known of ``stage`` before it begins (the changelog's offsets), shown when it does."""
        self.pending[stage] = detail

    def note(self, detail: str, plain: bool = True) -> None:
        """Counts known during the current stage (entries dumped so far); ``plain=False``
        for a running count, shown on a terminal only (a log gets the stage's last count)."""
        self.detail = detail
        self._say(f"{self.store}: {self.stage} ({detail})", plain)

    def watch_spark(self, spark: Any) -> None:
        """On a terminal, the tasks done of the Spark stages running, beside the stage, until the run ends: the
        records read so far are not known to the driver, the tasks (one a changelog partition when reading) are."""
        if not self.live or spark is None:
            return
        import threading

        tracker = spark.sparkContext.statusTracker()

        def poll() -> None:
            while not self._stopped.wait(self.SPARK_POLL_SECONDS):
                stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
                running = [info for info in stages if info is not None]
                if running and self.stage in self.STAGES:
                    done, total = sum(i.numCompletedTasks for i in running), sum(i.numTasks for i in running)
                    shown = f"{self.detail}; " if self.detail else ""
                    self._say(f"{self.store}: {self.stage} ({shown}Spark tasks {done}/{total})", plain=False)

        self._watcher = threading.Thread(target=poll, name="kstate-audit-progress", daemon=True)
        self._watcher.start()

    def finish(self, summary: str) -> None:
        self.progress.update(self.task, completed=self.progress.tasks[-1].total)
        self.stage = "done"
        self._say(f"{self.store}: {summary}")


def _parse_store_spec(spec: str, default_type: str | None) -> tuple[str, str | None]:
    """``--store NAME[:TYPE]``: the store name and its type (its own, else ``--store-type``, else None: detect).
    A store name holds no ':' (nor can the changelog topic named after it)."""
    from kstate.errors import InvalidArgumentError

    name, _, type_name = spec.partition(":")
    if not name:
        raise InvalidArgumentError("--store", f"{spec!r}: no store name")
    if type_name and type_name not in audit_choices():
        raise InvalidArgumentError("--store", f"{spec!r}: unknown store type {type_name!r}, one of "
                                              f"{', '.join(audit_choices())}")
    return name, type_name or default_type


def _task_dirs(args: argparse.Namespace) -> Iterator[tuple[int, Path]]:
    """Every task directory of the application in the state directories, with its changelog partition, in order."""
    from kstate.codecs.layout import parse_task_dir_name

    for state_dir in args.state_dir:
        app_dir = Path(state_dir) / args.application_id
        for task_dir in sorted(app_dir.iterdir()) if app_dir.is_dir() else []:
            parsed = parse_task_dir_name(task_dir.name)
            if parsed is not None and task_dir.is_dir():
                yield parsed[1], task_dir


def cmd_audit(args: argparse.Namespace) -> int:
    """Compare the instances' stores with the state the Spark oracle computes from the changelog topic."""
    from kstate.codecs.changelog import changelog_topic_name
    from kstate.codecs.store_types import StoreType
    from kstate.spark.audit_report import StoreAudit, report_format, write_report
    from kstate.spark.oracle import LegacyBoundary
    from kstate.spark.semantics import FamilyParameters

    boundaries: dict[int, LegacyBoundary] = {}
    for item in args.legacy:
        try:
            partition, offset, legacy_name = item.split(":")
            legacy_type = StoreType(legacy_name)
            if legacy_type not in BUILT_KV_TYPES:
                raise ValueError(legacy_name)
            boundaries[int(partition)] = LegacyBoundary(int(partition), int(offset), legacy_type)
        except ValueError:
            err_console.print(f"[red]error:[/red] --legacy {item!r}: expected PARTITION:OFFSET:TYPE, TYPE one of "
                              f"{', '.join(t.value for t in BUILT_KV_TYPES)}", soft_wrap=True)
            return 2
    missing = [d for d in args.state_dir if not Path(d).is_dir()]
    if missing:
        err_console.print(f"[red]error:[/red] no such state directory: {', '.join(missing)}", soft_wrap=True)
        return 2
    if args.report:
        report_format(args.report, args.report_format)  # an unknown format fails now, not after the audit
    elif args.report_format:
        err_console.print("[red]error:[/red] --report-format needs --report PATH", soft_wrap=True)
        return 2
    if args.source != "python" and args.engine != "spark":
        err_console.print(f"[red]error:[/red] --source {args.source} is a Spark reader: it needs --engine spark",
                          soft_wrap=True)
        return 2
    params = FamilyParameters(args.retention_ms, args.history_retention_ms, args.retain_duplicates)
    targets: list[tuple[str, StoreType]] = []
    for spec in args.store:
        name, type_name = _parse_store_spec(spec, args.store_type)
        if type_name is None:
            type_name, evidence = _detect_audit_store_type(args.state_dir, args.application_id, name)
            if type_name is None:
                err_console.print(f"[red]error:[/red] cannot tell the type of store {escape(name)} ({escape(evidence)}); "
                                  f"pass --store-type (or --store {escape(name)}:TYPE)", soft_wrap=True)
                return 2
            if not args.quiet:
                prefix = f"store {name}: " if len(args.store) > 1 else ""
                err_console.print(f"{escape(prefix)}store type {type_name} (detected: {escape(evidence)})", soft_wrap=True)
        store_type = StoreType(type_name)
        problem = family_audit(store_type).problem(args, store_type, params)
        if problem:
            err_console.print(f"[red]error:[/red] {escape(problem)}", soft_wrap=True)
            return 2
        targets.append((name, store_type))
    client_config = _audit_client_config(args)
    needs_spark = args.engine == "spark" or any(family_audit(t).spark_only for _, t in targets)
    # Fail fast, before Spark starts: the extras are there (before the broker is waited for), the configuration
    # is accepted, the broker answers.
    try:
        import confluent_kafka  # noqa: F401

        if needs_spark:
            import pyspark  # noqa: F401
        from kstate.kafka.client_config import check_reachable, partition_offsets

        topic_partitions = {name: check_reachable(args.bootstrap, client_config,
                                                  changelog_topic_name(args.application_id, name), args.connect_timeout)
                            for name, _ in targets}
    except ModuleNotFoundError as exc:
        return _missing_extra(exc, f"kstate audit --engine {args.engine}")
    audits: list[tuple[StoreAudit, str]] = []
    changelog_offsets: dict[str, dict[int, tuple[int, int]]] = {}
    with _AuditProgress(args.quiet) as progress:
        spark = None
        if needs_spark:
            from kstate.spark.session import spark_session

            progress.begin("Spark", stages=1)
            progress(f"starting on {args.master}")
            conf = {"spark.ui.showConsoleProgress": "false"}
            if args.source == "spark-kafka":
                from kstate.spark.spark_kafka import connector

                conf.update(connector().conf)
            spark = spark_session(args.master, conf=conf)
            progress.finish("ready")
            progress.watch_spark(spark)
        run = AuditRun(args, boundaries, params, spark, progress, client_config)
        for name, store_type in targets:
            topic = changelog_topic_name(args.application_id, name)
            progress.begin(name)
            offsets = partition_offsets(args.bootstrap, client_config, topic, topic_partitions[name])
            progress.expect("reading the changelog", _offsets_note(offsets))
            partitions, layout, report = family_audit(store_type).audit(run, name, store_type, topic)
            progress.finish(f"done, {report.records_read} changelog records read, {report.difference_count} differences, "
                            f"{report.seconds:.1f} s")
            audits.append((StoreAudit(name, store_type.value, topic, partitions, report), layout))
            changelog_offsets[name] = offsets
    for audit, layout in audits:
        _audit_outcome(args, audit, layout, changelog_offsets[audit.store])
    if len(audits) > 1:
        console.print(f"{len(audits)} stores audited:", markup=False, highlight=False)
        for audit, _ in audits:
            console.print(_store_summary_line(audit), markup=False, highlight=False, soft_wrap=True)
    if args.report:
        written = write_report([a for a, _ in audits], args.report, args.report_format)
        if not args.quiet:
            err_console.print(f"report ({written}) written to {escape(args.report)}", soft_wrap=True, highlight=False)
    return 0 if all(a.report.ok for a, _ in audits) else 1


@dataclass(frozen=True)
class AuditRun:
    """What every store's audit of one ``kstate audit`` run shares."""

    args: argparse.Namespace
    boundaries: dict[int, LegacyBoundary]
    params: FamilyParameters
    spark: Any
    progress: _AuditProgress
    client_config: dict[str, str]


def _kv_problem(args: argparse.Namespace, store_type: StoreType, params: FamilyParameters) -> str | None:
    if args.legacy and len(args.store) > 1:
        return "--legacy names partitions of one store's changelog: give a single --store with it"
    return None


def _family_problem(args: argparse.Namespace, store_type: StoreType, params: FamilyParameters) -> str | None:
    from kstate.spark.semantics import AuditSetupError, check_parameters

    problem = None
    if args.legacy:
        problem = "--legacy applies to key-value stores only"
    elif args.engine != "spark":
        problem = f"--engine {args.engine}: {store_type.value} stores are audited by the Spark engine only"
    try:
        check_parameters(store_type, params)
    except AuditSetupError as exc:
        problem = problem or str(exc)
    return problem


def _audit_kv_store(run: AuditRun, name: str, store_type: StoreType, topic: str) -> tuple[int, str, AuditReport]:
    """One key-value store: the instances' stores read, then the oracle's audit; answers partitions read, layout and
    report. With Spark and one copy of each partition, Spark tasks read the stores in parallel; else they are dumped
    here (a later state directory's copy of a partition adds to and overrides an earlier one's)."""
    from kstate.spark.oracle import audit, store_directories_frame
    from kstate.store_dump import dump_store_dir

    args, spark, progress, boundaries, client_config = run.args, run.spark, run.progress, run.boundaries, run.client_config

    directories = [(partition, task_dir / "rocksdb" / name) for partition, task_dir in _task_dirs(args)
                   if (task_dir / "rocksdb" / name).is_dir()]
    partitions = [partition for partition, _ in directories]
    if args.engine == "spark" and len(set(partitions)) == len(partitions):
        progress("reading stores")
        progress.note(f"{len(directories)} store directories, read by Spark tasks")
        frame = store_directories_frame(spark, store_type, [(p, str(d)) for p, d in directories])
        report = audit(args.bootstrap, topic, store_type, frame, spark=spark, boundaries=boundaries,
                       progress=progress, client_config=client_config, source=run.args.source)
        return len(directories), "rocksdb/<store>", report
    progress("reading stores")
    actual: dict[int, dict[bytes, bytes]] = {}
    entries = 0
    for partition, path in directories:
        view = dump_store_dir(path).logical_view(store_type)
        actual.setdefault(partition, {}).update(view)
        entries += len(view)
        progress.note(f"{entries} entries from {len(actual)} partitions", plain=False)
    progress.note(f"{entries} entries from {len(actual)} partitions")
    report = audit(args.bootstrap, topic, store_type, actual, spark=spark if args.engine == "spark" else None,
                   boundaries=boundaries, progress=progress, client_config=client_config,
                   source=run.args.source)
    return len(actual), "rocksdb/<store>", report


def _audit_family_store(run: AuditRun, name: str, store_type: StoreType, topic: str) -> tuple[int, str, AuditReport]:
    """One versioned, window or session store: per version, window or session (the family oracle reads the
    store directories itself; a later state directory's copy of a partition wins, as for key-value)."""
    from kstate.codecs.layout import store_dir
    from kstate.spark.semantics import audit_stores

    args, progress = run.args, run.progress
    stores: dict[int, list[Path]] = {}
    for partition, task_dir in _task_dirs(args):
        path = task_dir / store_dir(store_type, name)
        if path.is_dir():
            stores[partition] = [path]
    progress("reading stores")
    progress.note(f"{len(stores)} partitions")
    report = audit_stores(args.bootstrap, topic, store_type, stores, run.params, spark=run.spark, progress=progress,
                          client_config=run.client_config, source=run.args.source)
    return len(stores), store_dir(store_type, "<store>"), report


@dataclass(frozen=True)
class FamilyAudit:
    """How a family's stores are audited: whether only the Spark engine can, what makes a run's setup unusable
    for them (a message, or None), and the audit of one store (partitions read, the layout looked for, report)."""

    spark_only: bool
    problem: Callable[[argparse.Namespace, StoreType, FamilyParameters], str | None]
    audit: Callable[[AuditRun, str, StoreType, str], tuple[int, str, AuditReport]]


_KEY_VALUE_AUDIT = FamilyAudit(False, _kv_problem, _audit_kv_store)
_FAMILY_ORACLE_AUDIT = FamilyAudit(True, _family_problem, _audit_family_store)


def family_audit(store_type: StoreType) -> FamilyAudit:
    """How ``store_type``'s family is audited: the key-value family's stores by the changelog oracle (either
    engine, legacy boundaries), a family with semantics of its own (``kstate.spark.<family>_semantics``) by the
    family oracle of :mod:`kstate.spark.semantics`, on Spark; any other family is refused (UnknownFamilyError)."""
    from kstate.spark.semantics import family_semantics

    family = STORE_TYPES[store_type].family
    if family in {STORE_TYPES[t].family for t in BUILT_KV_TYPES}:
        return _KEY_VALUE_AUDIT
    if family in family_semantics():
        return _FAMILY_ORACLE_AUDIT
    raise UnknownFamilyError(family, "kstate audit")


def _offsets_note(offsets: dict[int, tuple[int, int]]) -> str:
    """The changelog's extent before it is read: partitions, and the records its offsets can hold at most."""
    most = sum(high - low for low, high in offsets.values())
    return f"{len(offsets)} partitions, up to {most} records by their offsets"


def changelog_notes(offsets: dict[int, tuple[int, int]]) -> dict[int, str]:
    """Per partition whose changelog lost records or never had any, said once: empty, or its log-start offset above
    0 (records deleted by retention or DeleteRecords). A store's entries of such a partition read as unexpected."""
    notes: dict[int, str] = {}
    for partition, (low, high) in sorted(offsets.items()):
        if high == 0:
            notes[partition] = "the changelog partition is empty: no record was ever written to it"
        elif low >= high:
            notes[partition] = (f"the changelog partition is empty: its log-start offset is {low}, its end offset, "
                                f"so every record below it was deleted (by retention, or DeleteRecords?)")
        elif low > 0:
            notes[partition] = (f"the changelog partition's log-start offset is {low}, above 0: records below it were "
                                f"deleted (by retention, or DeleteRecords?)")
    return notes


def _audit_outcome(args: argparse.Namespace, audit: StoreAudit, layout: str,
                   offsets: dict[int, tuple[int, int]]) -> None:
    """Print what ``kstate audit`` found for one store (AUDIT_EPILOG): the verdict first, then what the changelog's
    offsets explain (once a partition), then the differences they do not explain."""
    from kstate.spark.oracle import LISTED_IN_SUMMARY

    console.print(f"{audit.topic}: {audit.partitions} partitions dumped from {len(args.state_dir)} state directories",
                  markup=False, highlight=False, soft_wrap=True)
    if not audit.partitions:
        # Every changelog entry will read as missing; most likely the names do not match what is on disk.
        err_console.print(f"[yellow]warning:[/yellow] no store {escape(audit.store)} of application "
                          f"{escape(args.application_id)} under {escape(', '.join(args.state_dir))} "
                          f"(<state-dir>/<application-id>/<task>/{escape(layout)})", soft_wrap=True)
    report = audit.report
    lines = report.headline()
    notes = changelog_notes(offsets)
    listed = report.listed
    folded: dict[int, int] = {}
    for difference in listed:
        if difference.partition in notes and difference.kind == "unexpected":
            folded[difference.partition] = folded.get(difference.partition, 0) + 1
    for partition, note in notes.items():
        gone = folded.get(partition, 0)
        lines.append(f"partition {partition}: {note}" + (
            f"; the store's {gone} entries of it read as unexpected (not listed)" if gone else ""))
    shown = [d for d in listed if not (d.partition in notes and d.kind == "unexpected")]
    lines += [str(d) for d in shown[:LISTED_IN_SUMMARY]]
    if len(shown) > LISTED_IN_SUMMARY:
        lines.append(f"... {len(shown) - LISTED_IN_SUMMARY} more differences (--report PATH lists them)")
    console.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)


def _store_summary_line(audit: StoreAudit) -> str:
    """One line a store for a run over several: verdict, counts, and the differences by kind."""
    r = audit.report
    kinds = ", ".join(f"{kind} {n}" for kind, n in audit.counts.items())
    return (f"  {audit.store} ({audit.store_type}): {'ok' if r.ok else 'DIFFERENCES'}, {r.records_read} changelog "
            f"records, {r.expected_keys} expected {r.entity}, {r.actual_keys} actual {r.entity}, "
            f"{audit.total} differences" + (f" ({kinds})" if kinds else ""))


#: ``kstate audit --store-type``: the key-value store types the reference builds (the oracle knows their state), and
#: the legacy alias.
AUDIT_STORE_TYPES = [t.value for t in BUILT_KV_TYPES] + list(LEGACY_ALIASES)

AUDIT_EPILOG = """\
output (stdout): "<topic>: N partitions dumped from M state directories", then "<engine> oracle:
R changelog records, E expected keys, A actual keys, D differences in S s", then once a changelog
partition that is empty or whose log-start offset is above 0 (records deleted by retention?)
"partition P: the changelog partition is empty ..." (its store entries read as unexpected are counted
there, not listed), then one line per other difference (the first 50): "partition P key <hex>
(missing|unexpected|different): expected <hex or absent>, actual <hex or absent>". Errors and progress
go to stderr.

versioned, window and session stores (--history-retention-ms, or --retention-ms and for windows
--retain-duplicates, as the store was configured): the entries the stores answer queries with at the
changelog's stream time are compared, "... E expected versions|windows|sessions, A actual ...", then
"differences by kind: missing N, unexpected N, different value|valid_to|timestamp|headers|duplicates N",
then one line per difference: "partition P key <hex> valid_from=T | window_start=T seqnum=S | start=S
end=E (kind): expected <fields>, actual <fields>". Without --store-type the type is detected from the
state directories as `kstate inspect` detects it.

several stores (--store repeated, each NAME or NAME:TYPE; --store-type is the type of those without
one, the others are detected): each store's output as above, then "N stores audited:" and one line
a store: "  <store> (<type>): ok|DIFFERENCES, R changelog records, E expected ..., A actual ...,
D differences (<kind> N, ...)". The retention options apply to every store of the run.

--report PATH writes a report (--report-format md|html|jsonl, default by suffix): stores and counts
per store and kind of difference, then the differences (md, html: the first 1000 a store, with a note
of how many more); jsonl: one object per listed difference {store, store_type, partition, key (hex),
entry, kind, expected, actual}, expected/actual hex for key-value stores, the compared fields
otherwise, null when absent. Progress goes to stderr: a live display on a terminal, one line a stage
otherwise ("audit <store>: <stage>"), nothing with --quiet. Spark runs on --master (local[*]).

exit codes: 0 the stores hold exactly the state the changelog implies; 1 differences were found;
2 a usage or setup error (a missing extra, a refused client configuration, no broker answering at
--bootstrap, no changelog topic, a missing state directory), reported in one line.

client configuration: --client-config FILE is read first, then the shortcut options, then every
-X key=value in order; the last setting of a property wins. Properties are librdkafka's
(https://github.com/confluentinc/librdkafka/blob/master/CONFIGURATION.md), not the Java client's.
"""

def audit_choices() -> list[str]:
    """What ``kstate audit --store-type`` takes: AUDIT_STORE_TYPES and the versioned, window and session types
    the family oracle reads (kstate.spark.semantics)."""
    from kstate.spark.semantics import family_audit_types

    return list(dict.fromkeys(AUDIT_STORE_TYPES + [t.value for t in family_audit_types()]))
