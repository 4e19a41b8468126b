"""Executable models of the spec, written independently of the reference implementation.

A model predicts, from the neutral JSON vocabulary alone, what a conforming implementation answers:
the state machines drive the implementation and the model side by side and compare after every step.
Models never import ``kstate``. Each store family's module, named as the family, declares its entry in the suite's
table of families (``FAMILY``, a ``store_types.StoreFamily``): ``store_types`` finds them here by name.
"""
