"""The Spark side: Kafka topics read by a Python Data Source, and the changelog oracle (expected store state).

Needs the ``spark`` extra (pyspark, pyarrow), imported only when a store is audited; ``kstate audit``'s orchestration
(:mod:`kstate.spark.audit_command`) is what the command line imports.
"""
