"""The mutation analysis's worker: the suite is imported and collected once, then each mutant runs in a forked child.

Run as ``python -m kstate_conformance.mutation_worker`` by :func:`kstate_conformance.mutation.run_all`, never by hand.
A child swaps the implementation under test for its mutant and runs the collected tests in the mutant's order (the
test that killed it last time, then its family's modules, then every other test) until one fails. A mutant that no
test fails has run every collected test. The kill map only orders the tests; it never skips one.

Results are JSON lines on the file descriptor given by ``--result-fd``: one ``mutant`` line as each is decided, then
one ``control`` line: the killing tests run once more against the unmutated reference, which must pass them, or the
kill proves nothing.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pytest
from _pytest.runner import runtestprotocol

from kstate_conformance.adapter import ImplementationAdapter, ReferenceAdapter
from kstate_conformance.expectations import item_test_id
from kstate_conformance.mutants import Mutant, all_mutants
from kstate_conformance.plugin import ADAPTER_KEY, WRAPPER_KEY
from kstate_conformance.pytest_args import suite_args

#: What a child reports: whether a test failed, which one, its first line, how many tests ran.
ChildResult = dict[str, Any]


def first_line(text: str, limit: int = 300) -> str:
    """The first non-empty line of a failure's text, cut to ``limit`` characters."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:limit]


def failure_message(report: pytest.TestReport) -> str:
    """The assertion's or exception's message (pytest's ``E`` line), else the first line of the failure."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    return first_line(str(message)) if message else first_line(report.longreprtext)


def run_items(config: pytest.Config, adapter: ImplementationAdapter, order: list[pytest.Item], *,
              stop_at_first_failure: bool) -> ChildResult:
    """Run ``order`` against ``adapter`` in this (forked) process; the failing tests and how many ran."""
    config.stash[ADAPTER_KEY] = adapter
    if WRAPPER_KEY in config.stash:
        del config.stash[WRAPPER_KEY]
    failures: list[list[str]] = []
    ran = 0
    for index, item in enumerate(order):
        nextitem = order[index + 1] if index + 1 < len(order) else None
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        ran += 1
        failed = next((r for r in reports if r.failed), None)
        if failed is not None:
            failures.append([item_test_id(item), failure_message(failed)])
            if stop_at_first_failure:
                break
    return {"failures": failures, "tests_run": ran}


@dataclass
class _Child:
    pid: int
    fd: int
    key: str
    started: float
    chunks: list[bytes]


class MutantForker:
    """A pytest plugin that replaces the test loop: each mutant in a forked child, ``workers`` at a time."""

    def __init__(self, mutants: list[Mutant], *, workers: int, kill_map: dict[str, str],
                 family_modules: Callable[[str], list[str]], timeout: float, emit: Callable[[dict[str, Any]], None]):
        self.mutants = mutants
        self.workers = max(1, workers)
        self.kill_map = kill_map
        self.family_modules = family_modules
        self.timeout = timeout
        self.emit = emit

    def order_for(self, mutant: Mutant, items: list[pytest.Item]) -> list[pytest.Item]:
        """The last killer first, then the family's modules, then the rest: every item exactly once."""
        first: list[pytest.Item] = []
        killer = self.kill_map.get(mutant.name)
        if killer:
            first = [item for item in items if item_test_id(item) == killer]
        modules = self.family_modules(mutant.family)
        rank = {name: position for position, name in enumerate(modules)}
        family = sorted((item for item in items if _module_name(item) in rank),
                        key=lambda item: rank[_module_name(item)])
        seen: set[int] = set()
        ordered: list[pytest.Item] = []
        for item in [*first, *family, *items]:
            if id(item) not in seen:
                seen.add(id(item))
                ordered.append(item)
        return ordered

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        # The quick profile without shrinking: a kill needs one failing example, not the smallest one, and
        # shrinking a failure is most of the time a property takes to fail.
        from hypothesis import Phase, settings

        current = settings()
        settings.register_profile("kstate-mutation", parent=current,
                                  phases=[p for p in current.phases if p is not Phase.shrink])
        settings.load_profile("kstate-mutation")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed:
            raise session.Interrupted(f"{session.testsfailed} errors while collecting the suite")
        items = list(session.items)
        self.emit({"kind": "collected", "tests": len(items)})
        jobs: list[tuple[str, Callable[[], ChildResult]]] = [
            (m.name, _bind(session.config, m.adapter(), self.order_for(m, items), True)) for m in self.mutants]
        killers: dict[str, str] = {}
        for key, result in self._run_children(jobs):
            failures = result.get("failures", [])
            if failures:
                killers[key] = failures[0][0]
            self.emit({"kind": "mutant", "name": key, **result})
        # The control: each killing test, run on the unmutated reference, must pass.
        by_id = {item_test_id(item): item for item in items}
        control_items = [by_id[test] for test in dict.fromkeys(killers.values()) if test in by_id]
        control: ChildResult = {"failures": [], "tests_run": 0}
        if control_items:
            job = _bind(session.config, ReferenceAdapter(), control_items, False)
            control = next(iter(dict(self._run_children([("control", job)])).values()))
        self.emit({"kind": "control", **control})
        return True

    def _run_children(self, jobs: list[tuple[str, Callable[[], ChildResult]]]) -> Iterable[tuple[str, ChildResult]]:
        pending = list(reversed(jobs))
        running: dict[int, _Child] = {}
        while pending or running:
            while pending and len(running) < self.workers:
                key, job = pending.pop()
                child = _fork(key, job)
                running[child.fd] = child
            ready, _, _ = select.select(list(running), [], [], 0.5)
            for fd in ready:
                child = running[fd]
                data = os.read(fd, 65536)
                if data:
                    child.chunks.append(data)
                    continue
                del running[fd]
                os.close(fd)
                _, status = os.waitpid(child.pid, 0)
                yield child.key, _decode(child, status)
            now = time.monotonic()
            for fd, child in list(running.items()):
                if now - child.started > self.timeout:
                    os.kill(child.pid, signal.SIGKILL)
                    os.waitpid(child.pid, 0)
                    os.close(fd)
                    del running[fd]
                    yield child.key, {"failures": [], "tests_run": -1,
                                      "error": f"timed out after {self.timeout:.0f} s", "seconds": now - child.started}


def _module_name(item: pytest.Item) -> str:
    module = getattr(item, "module", None)
    return str(getattr(module, "__name__", ""))


def _bind(config: pytest.Config, adapter: ImplementationAdapter, order: list[pytest.Item],
          stop: bool) -> Callable[[], ChildResult]:
    return lambda: run_items(config, adapter, order, stop_at_first_failure=stop)


def _fork(key: str, job: Callable[[], ChildResult]) -> _Child:
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: run, write one JSON document, and leave without pytest's or atexit's clean-up
        os.close(read_fd)
        code = 0
        try:
            result = job()
        except BaseException as exc:  # anything escaping the run is reported, never lost
            result = {"failures": [], "tests_run": -1, "error": f"{type(exc).__name__}: {exc}"}
            code = 1
        result["seconds"] = time.monotonic() - started
        payload = json.dumps(result).encode()
        view = memoryview(payload)
        while view:
            written = os.write(write_fd, view)
            view = view[written:]
        os.close(write_fd)
        os._exit(code)
    os.close(write_fd)
    return _Child(pid, read_fd, key, started, [])


def _decode(child: _Child, status: int) -> ChildResult:
    try:
        result: ChildResult = json.loads(b"".join(child.chunks))
    except ValueError:
        result = {"failures": [], "tests_run": -1,
                  "error": f"the child running {child.key} died (wait status {status}) before it reported",
                  "seconds": time.monotonic() - child.started}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kstate_conformance.mutation_worker")
    parser.add_argument("names", nargs="*")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kill-map", default="")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--result-fd", type=int, required=True)
    parser.add_argument("--mutant-module", action="append", default=[],
                        help="a module registering further mutants (tests of the analysis itself)")
    parser.add_argument("--pytest-arg", action="append", default=[], help="passed on to pytest (e.g. -k EXPR)")
    parser.add_argument("--module", action="append", default=[],
                        help="run only these test modules of the suite (tests of the analysis itself)")
    args = parser.parse_args(argv)
    for module in args.mutant_module:
        importlib.import_module(module)
    from kstate_conformance.mutation import family_modules, read_kill_map

    known = all_mutants()
    mutants = [known[n] for n in args.names] if args.names else list(known.values())
    out = os.fdopen(args.result_fd, "w", encoding="utf-8", buffering=1)

    def emit(document: dict[str, Any]) -> None:
        out.write(json.dumps(document) + "\n")

    forker = MutantForker(mutants, workers=args.workers, kill_map=read_kill_map(args.kill_map or None),
                          family_modules=family_modules, timeout=args.timeout, emit=emit)
    # pytest's own output goes to stderr: stdout is not read, and the results have their own descriptor.
    sys.stdout = sys.stderr
    selection = suite_args()
    if args.module:
        package = selection.index("kstate_conformance.tests")
        selection = [*selection[:package], *args.module, *selection[package + 1:]]
    status = pytest.main([*selection, "-q", "--no-header", "--kstate-impl", "reference",
                          "--kstate-profile", "quick", *args.pytest_arg], plugins=[forker])
    out.close()
    return int(status)


if __name__ == "__main__":
    raise SystemExit(main())
