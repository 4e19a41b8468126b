"""kstate: reference implementation of Kafka Streams state-store formats and semantics.

Layers, bottom to top (nothing imports from a layer above it):

* ``kstate.errors`` and ``kstate.codecs``: pure codecs, bytes in and bytes out, no I/O; ``codecs.store_types``
  is the one table of store types.
* ``kstate.stores``: stores over storage engines (``stores.families`` maps a store type to its classes).
* ``kstate.ops``: the implementation-neutral operation vocabulary (JSON in, JSON out) over codecs and stores.
* ``kstate.vectors`` and ``kstate.fixtures_tool``: replay of recorded vectors and golden fixtures.
* ``kstate.app``, ``kstate.inspect``, ``kstate.spark`` and ``kstate.cli``: an application instance, the
  state-directory inspector, the changelog oracle and the ``kstate`` command.

ARCHITECTURE.md in the repository shows the layers and how a store family is added.

PYTEST_DONT_REWRITE: the reference is no test code; pytest, marking the installed kstate-kit plugin's
packages for assertion rewriting after ``kstate`` is imported, would otherwise warn that it cannot.
"""

__version__ = "0.1.0"
