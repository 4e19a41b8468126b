"""The Spark side: Kafka topics read by a Python Data Source, and the changelog oracle (expected store state).

Needs the ``spark`` extra (pyspark, pyarrow); nothing else in ``kstate`` imports this package.
"""
