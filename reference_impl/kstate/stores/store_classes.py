"""What a family module declares about its store types' classes (KV-1): :class:`StoreClasses` and its options.

Each store family's own module (``kstate.stores.<family>``) builds its entries from these;
:mod:`kstate.stores.families` collects them. Kept apart from that collector so that a family module can import
them without importing every other family.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kstate.codecs.store_types import StoreType
from kstate.errors import KStateError
from kstate.stores.api import StateStore
from kstate.stores.surface import ChangelogSink, RecordContextHolder


class StoreTypeNotBuiltError(KStateError, ValueError):
    """A store type of the spec that the reference cannot open yet; ``store_type`` names it."""

    def __init__(self, store_type: StoreType) -> None:
        self.store_type = store_type
        super().__init__(f"the reference implementation has no {store_type.value} store yet")


#: A change-logging layer's constructor: ``(inner, store_type, context, sink)``; the inner store is of the type's
#: family (:class:`~kstate.stores.changelogging.ChangeLoggingStore`).
LoggingConstructor = Callable[[Any, StoreType, RecordContextHolder, ChangelogSink], StateStore]


class StoreOptionError(KStateError, ValueError):
    """An option a store type does not take, a required one missing, or one of the wrong kind; ``option`` names it."""

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        super().__init__(f"store option {option!r}: {message}")


@dataclass(frozen=True)
class OpenOption:
    """An option of a store family, passed to its classes by keyword (retention, segment interval, ...)."""

    name: str
    kind: type[int] | type[bool]
    #: A required option has no default; an optional one absent is not passed (the class's default applies).
    required: bool = False


@dataclass(frozen=True)
class StoreClasses:
    """The classes of one store type: bytes stores per backend, change-logging layer, typed facade, and the
    options its constructors take beyond the common ones.

    ``rocksdb(name, task_dir, *, options=RocksDBOptions(...), **family_options)`` and
    ``memory(name, **family_options)`` build the bytes store.
    """

    rocksdb: type[Any]
    memory: type[Any]
    logging: LoggingConstructor
    facade: type[Any] | None = None
    options: tuple[OpenOption, ...] = ()

    def check_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """``given`` checked against :attr:`options`: :class:`StoreOptionError` naming any unknown, missing or
        ill-typed option."""
        known = {o.name: o for o in self.options}
        for name in given:
            if name not in known:
                accepted = ", ".join(sorted(known)) or "none"
                raise StoreOptionError(str(name), f"not an option of this store type (accepted: {accepted})")
        out: dict[str, Any] = {}
        for option in self.options:
            if option.name not in given:
                if option.required:
                    raise StoreOptionError(option.name, "required")
                continue
            value = given[option.name]
            # bool is an int in Python: an int option refuses it, a bool option takes nothing else.
            if isinstance(value, bool) is not (option.kind is bool) or not isinstance(value, option.kind):
                raise StoreOptionError(option.name, f"expected {option.kind.__name__}, got {value!r:.80}")
            out[option.name] = value
        return out


__all__ = ["LoggingConstructor", "OpenOption", "StoreClasses", "StoreOptionError", "StoreTypeNotBuiltError"]
