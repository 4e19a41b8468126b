"""The Java table of store types (issue 33, item 5): the Kafka testee and the Kafka Streams instance cannot read
:mod:`kstate.codecs.store_types`, so both Maven projects compile one generated ``StoreTypes.java`` of
``java-shared/`` (each pom adds it as a source root) with one constant per store type and family, each type's
family, and the exception every switch over them ends in; beside them what the Java parts read of the table
instead of naming a family: the families in order, each family's types, and per type whether it is segmented,
its column families (LAY-5 to LAY-8) and whether its stored value keeps headers.

``python -m kstate.java_store_types`` writes it; ``--check`` changes nothing and fails when it is stale
(``tests/unit/test_store_type_dispatch.py`` runs the check).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from kstate.codecs.store_types import STORE_TYPES, Family, StoreType, StoreTypeInfo

#: The Java sources both Maven projects compile beside their own, from the repository root.
SHARED_JAVA = "java-shared/src/main/java"
#: The generated file, from the repository root, and its Java package.
JAVA_FILE = f"{SHARED_JAVA}/kstate/storetypes/StoreTypes.java"
JAVA_PACKAGE = "kstate.storetypes"
REGENERATE = "python -m kstate.java_store_types"


def shared_sources(project: Path) -> Path:
    """The shared Java sources of a Maven project two levels under the repository root (``testees/kafka-jvm``,
    ``instances/kafka-streams``), as its pom names them: a build is stale when one of them is newer."""
    return project.parent.parent / SHARED_JAVA


def _java_list(constants: Sequence[str]) -> str:
    return f"List.of({', '.join(constants)})"


def _java_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _per_type(method: str, returns: str, answer: Callable[[StoreTypeInfo], str], doc: str) -> str:
    """A ``public static`` lookup of ``method(storeType)``: one case per type, the table's error for any other."""
    cases = "\n".join(f"            case {t.name}: return {answer(STORE_TYPES[t])};" for t in StoreType)
    return f"""    /**
     * {doc};
     * {{@link UnknownStoreTypeException}} for a type the table lacks.
     */
    public static {returns} {method}(String storeType) {{
        switch (storeType) {{
{cases}
            default: throw unknown(storeType, "StoreTypes.{method}");
        }}
    }}
"""


def _column_families(info: StoreTypeInfo) -> tuple[str, tuple[str, ...]]:
    """The data column family and the legacy ones it upgrades from, in the order the plan reads them (LAY-5)."""
    if info.column_families is None:
        raise AssertionError(f"{info.store_type.value}: no column families in the table")
    return info.column_families.data_cf, tuple(u.source_cf for u in info.column_families.upgrades)


def _table_lookups() -> str:
    """The families in order, each family's types, and the per-type answers the Java parts read of the table."""
    families = _java_list([f"FAMILY_{f.name}" for f in Family])
    types_of = "\n".join(
        f"            case FAMILY_{f.name}: return {_java_list([t.name for t in StoreType if STORE_TYPES[t].family is f])};"
        for f in Family)
    lookups = [
        _per_type("segmented", "boolean", lambda i: str(not i.single_database).lower(),
                  "Whether `storeType` keeps one database per segment, not one at `rocksdb/<store>` (LAY-2, LAY-3)"),
        _per_type("dataColumnFamily", "String", lambda i: _java_string(_column_families(i)[0]),
                  "The column family `storeType` keeps its data in (LAY-5)"),
        _per_type("upgradeColumnFamilies", "List<String>",
                  lambda i: _java_list([_java_string(cf) for cf in _column_families(i)[1]]),
                  "The legacy column families `storeType` upgrades from in place, in the order it reads them (LAY-6, LAY-8)"),
        _per_type("storesHeaders", "boolean", lambda i: str(i.stores_headers).lower(),
                  "Whether the stored value of `storeType` keeps record headers (HV-6, HV-11)"),
    ]
    return f"""    /** The families, in the table's order. */
    public static final List<String> FAMILIES = {families};

    /** The store types of `family`, in the table's order; {{@link UnknownStoreTypeException}} for a family it lacks. */
    public static List<String> types(String family) {{
        switch (family) {{
{types_of}
            default: throw unknown(family, "StoreTypes.types");
        }}
    }}

""" + "\n".join(lookups)


def render(package: str = JAVA_PACKAGE) -> str:
    """The ``StoreTypes.java`` of ``package``: the table's types and families as compile-time constants, and the
    table's answers per family and type."""
    types = "\n".join(f'    public static final String {t.name} = "{t.value}";' for t in StoreType)
    families = "\n".join(f'    public static final String FAMILY_{f.name} = "{f.value}";' for f in Family)
    family_of = "\n".join(f"            case {t.name}: return FAMILY_{STORE_TYPES[t].family.name};" for t in StoreType)
    return f"""// Generated by `{REGENERATE}` from kstate.codecs.store_types: do not edit.
package {package};

import java.util.List;

/** The store types and families of the spec (kstate.codecs.store_types), and the error every switch over them ends in. */
public final class StoreTypes {{
    private StoreTypes() {{
    }}

{types}

{families}

    /** A store type or family that a switch has no branch for: a type added to the table reaches every switch. */
    public static final class UnknownStoreTypeException extends IllegalArgumentException {{
        private static final long serialVersionUID = 1L;

        UnknownStoreTypeException(String what, String where) {{
            super(where + ": no branch for the store type or family '" + what + "'");
        }}
    }}

    /** The exception that ends a switch at `where` over store types or families. */
    public static UnknownStoreTypeException unknown(String what, String where) {{
        return new UnknownStoreTypeException(what, where);
    }}

    /** The family of `storeType`; {{@link UnknownStoreTypeException}} for a type the table lacks. */
    public static String family(String storeType) {{
        switch (storeType) {{
{family_of}
            default: throw unknown(storeType, "StoreTypes.family");
        }}
    }}

{_table_lookups()}}}
"""


def is_stale(root: Path) -> bool:
    """Whether the file under ``root`` is missing or differs from what :func:`render` writes."""
    path = root / JAVA_FILE
    return not path.is_file() or path.read_text(encoding="utf-8") != render()


def write(root: Path) -> bool:
    """Write the file under ``root`` when it is stale; whether it was written."""
    stale = is_stale(root)
    if stale:
        path = root / JAVA_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(), encoding="utf-8")
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=REGENERATE, description=__doc__)
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository root (default: here)")
    parser.add_argument("--check", action="store_true", help="change nothing; fail when the file is stale")
    args = parser.parse_args(argv)
    if args.check:
        if is_stale(args.root):
            print(f"stale: {JAVA_FILE} (run {REGENERATE})", file=sys.stderr)
            return 1
        return 0
    if write(args.root):
        print(f"wrote {JAVA_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
