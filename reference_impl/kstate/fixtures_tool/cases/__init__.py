"""Reference fixture cases, one module per family; each exposes ``cases() -> list[CaseSpec]``."""
