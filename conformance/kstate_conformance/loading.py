"""Loading the implementation under test: ``--impl reference | mutant:NAME | module:factory | cmd:COMMAND | kafka-jvm:VERSION``.

The one module that knows every kind of implementation, so that the adapter protocol, the out-of-process
testee and the mutants import one another in one direction only (adapter < testee, mutants < loading).
"""

from __future__ import annotations

import contextlib
import importlib
from pathlib import Path

from kstate_conformance import kafka_jvm
from kstate_conformance.adapter import ImplementationAdapter, ReferenceAdapter, Unsupported
from kstate_conformance.capabilities import CapabilitiesError, capabilities_of
from kstate_conformance.mutants import get_mutant
from kstate_conformance.mutants.paired_mutants import PAIRED_MUTANTS
from kstate_conformance.testee import (
    DEFAULT_START_TIMEOUT,
    ImplementationError,
    ImplementationNotFound,
    TesteeError,
    start_testee,
)

__all__ = ["ImplementationError", "ImplementationNotFound", "extend_report", "load_implementation"]

TESTEE_PREFIXES = ("cmd:", "testee:")


def load_implementation(spec: str, *, timeout: float | None = None, validate: bool = False,
                        start_timeout: float | None = None) -> ImplementationAdapter:
    """Resolve ``reference``, ``mutant:NAME``, ``cmd:COMMAND`` (a testee) or ``module:factory`` to an adapter.

    ``timeout`` (seconds per request), ``start_timeout`` (seconds for the start and the ``hello``) and
    ``validate`` (check every answer against the protocol schema) apply to out-of-process testees only
    (spec/testee-protocol.md). Anything that keeps the implementation from being built or from completing
    its handshake raises :class:`ImplementationError`, and so does a ``store.capabilities`` answer that is not the
    shape OPS-1 gives it: the capabilities are parsed once, here, as the implementation is loaded (issue 33).
    """
    adapter = _adapter(spec, timeout=timeout, validate=validate, start_timeout=start_timeout)
    try:
        # A testee that cannot answer now is asked again in the first test that needs it, as before (TP-4).
        with contextlib.suppress(TesteeError, Unsupported):
            capabilities_of(adapter)
    except CapabilitiesError as exc:
        adapter.close()
        raise ImplementationError(f"{spec}: {exc}") from exc
    return adapter


def _adapter(spec: str, *, timeout: float | None, validate: bool, start_timeout: float | None) -> ImplementationAdapter:
    """The adapter ``spec`` names, built or started (:func:`load_implementation`)."""
    if spec == "reference":
        return ReferenceAdapter()
    if kafka_jvm.names(spec):
        return kafka_jvm.load(spec, timeout=timeout, validate=validate, start_timeout=start_timeout)
    if spec.startswith(TESTEE_PREFIXES):
        command = spec.split(":", 1)[1].strip()
        if not command:
            raise ImplementationNotFound(f"{spec!r} names no command")
        return start_testee(spec, command, timeout, DEFAULT_START_TIMEOUT if start_timeout is None else start_timeout,
                            validate, "cannot start the testee")
    if spec.startswith("mutant:"):
        name = spec.split(":", 1)[1]
        if name in PAIRED_MUTANTS:  # caught only beside a model (kstate conformance --model), not by kstate mutants
            return PAIRED_MUTANTS[name].adapter()
        try:
            mutant = get_mutant(name)
        except LookupError as exc:
            raise ImplementationNotFound(str(exc)) from exc
        return mutant.adapter()
    if ":" in spec:
        return _build_factory(spec)
    raise ImplementationNotFound(
        f"unknown implementation {spec!r}: use reference, mutant:NAME, cmd:COMMAND, kafka-jvm:VERSION or module:factory")


def extend_report(report_md: Path, implementation: str, verdicts: dict[str, str]) -> None:
    """What the implementation's kind adds to a run's ``report.md``: for Apache Kafka, this run's verdict per rule
    beside the other releases' kept ones; nothing for the other kinds."""
    if kafka_jvm.names(implementation):
        from kstate_conformance.kafka_jvm.verdicts import append_release_section

        append_release_section(report_md, implementation, verdicts, kafka_jvm.project())


def _build_factory(spec: str) -> ImplementationAdapter:
    """Import ``module:factory`` and build the adapter; every way this can go wrong is an :class:`ImplementationError`."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ImplementationNotFound(f"{spec!r} is not of the form module:factory")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        where = "" if exc.name == module_name else f" (importing it needs {exc.name!r})"
        raise ImplementationNotFound(f"cannot load implementation {spec!r}: no module named {exc.name!r}{where}; "
                                     "is its directory on PYTHONPATH?") from exc
    except Exception as exc:  # any failure of a third party's import is a setup error
        raise ImplementationError(f"cannot load implementation {spec!r}: importing {module_name} raised "
                                  f"{type(exc).__name__}: {exc}") from exc
    try:
        factory = getattr(module, attr)
    except AttributeError as exc:
        raise ImplementationNotFound(f"cannot load implementation {spec!r}: module {module_name} has no "
                                     f"attribute {attr!r}") from exc
    if isinstance(factory, ImplementationAdapter):
        adapter: object = factory
    elif callable(factory):
        try:
            adapter = factory()
        except Exception as exc:  # a factory that fails is a setup error, named as such
            raise ImplementationError(f"cannot build implementation {spec!r}: {module_name}.{attr}() raised "
                                      f"{type(exc).__name__}: {exc}") from exc
    else:
        raise ImplementationError(f"cannot build implementation {spec!r}: {module_name}.{attr} is a "
                                  f"{type(factory).__name__}, neither callable nor an adapter")
    if not isinstance(adapter, ImplementationAdapter):
        raise ImplementationError(f"{spec!r} gave a {type(adapter).__name__}, not an adapter: it must subclass "
                                  "kstate_conformance.adapter.ImplementationAdapter (name, supports(op), "
                                  "call(op, input))")
    return adapter
