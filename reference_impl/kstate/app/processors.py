"""What an application instance does with each input record, chosen by the store's family: each family's
processor is ``PROCESSOR`` of its module ``kstate.app.<family>_processor``, found by that name (issue 33), so a new
family's processor needs no line here; what they share is :mod:`kstate.app.processor_base`.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kstate.app.processor_base import (
    Processor,
    ProcessorBase,
    ProcessorConfigError,
    aggregate,
    decode_stored,
    parse_aggregate,
)
from kstate.codecs.store_types import (
    STORE_TYPES,
    VALUE_DECODERS,
    Family,
    StoredValue,
    StoreType,
    UnknownFamilyError,
)

#: What a family's processor module is called: ``kstate.app.<family>_processor``.
PROCESSOR_MODULE_SUFFIX = "_processor"


@functools.cache
def processors() -> Mapping[Family, type[ProcessorBase]]:
    """The processor of each store family: ``PROCESSOR`` of every ``kstate.app.<family>_processor`` module, imported
    by its name; a module whose family another module has already is refused."""
    import kstate.app as package

    found: dict[Family, type[ProcessorBase]] = {}
    for module_info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not module_info.name.endswith(PROCESSOR_MODULE_SUFFIX):
            continue
        processor: type[ProcessorBase] = importlib.import_module(f"{package.__name__}.{module_info.name}").PROCESSOR
        if processor.FAMILY in found:
            raise RuntimeError(f"kstate.app.{module_info.name}: a second processor of the {processor.FAMILY.value} family")
        found[processor.FAMILY] = processor
    return MappingProxyType(found)


def processor_class(store_type: StoreType) -> type[ProcessorBase]:
    """The processor class of ``store_type``'s family; :class:`UnknownFamilyError` for a family without one."""
    family = STORE_TYPES[StoreType(store_type)].family
    found = processors().get(family)
    if found is None:
        raise UnknownFamilyError(family, "kstate.app.processors.processor_for")
    return found


def processor_for(store: Any, store_type: StoreType, store_options: Mapping[str, Any],
                  options: Mapping[str, int]) -> Processor:
    """The processor ``store_type``'s family applies to each input record, writing to ``store``; a family without a
    processor module is refused (:class:`UnknownFamilyError`)."""
    store_type = StoreType(store_type)
    return processor_class(store_type)(store, store_type, store_options, options)


__all__ = [
    "VALUE_DECODERS",
    "Processor",
    "ProcessorConfigError",
    "StoredValue",
    "aggregate",
    "decode_stored",
    "parse_aggregate",
    "processor_class",
    "processor_for",
    "processors",
]
