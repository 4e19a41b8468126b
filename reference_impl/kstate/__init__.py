"""kstate: reference implementation of Kafka Streams state-store formats and semantics.

Layers, bottom to top (nothing imports from a layer above it):

* ``kstate.errors`` and ``kstate.codecs``: pure codecs, bytes in and bytes out, no I/O.
* ``kstate.ops``: the implementation-neutral operation vocabulary (JSON in, JSON out) over the codecs.
* ``kstate.vectors`` and ``kstate.fixtures_tool``: replay of recorded vectors and golden fixtures.
* ``kstate.cli``: the ``kstate`` command.

PYTEST_DONT_REWRITE: the reference is no test code; pytest, marking the installed kstate-kit plugin's
packages for assertion rewriting after ``kstate`` is imported, would otherwise warn that it cannot.
"""

__version__ = "0.1.0"
