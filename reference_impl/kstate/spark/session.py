"""A SparkSession for the oracle: local (``local[*]``, every core, by default) or a cluster by master URL.

Python workers must run this interpreter (``PYSPARK_PYTHON``), find ``kstate`` (``PYTHONPATH``) and, locally,
bind to loopback (``SPARK_LOCAL_IP``); runtime notes §3. The Kafka data source is registered on the session.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import kstate

#: Every core of the machine; a cluster by its master URL (``spark://host:7077``).
DEFAULT_MASTER = "local[*]"


def prepare_environment(local: bool = True) -> None:
    """Set the environment the JVM and its Python workers inherit; call before the first session starts."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    package_root = str(Path(kstate.__file__).resolve().parent.parent)
    paths = [package_root, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))


def spark_session(master: str = DEFAULT_MASTER, app_name: str = "kstate-oracle",
                  conf: dict[str, str] | None = None) -> Any:
    """Get or create the session for ``master`` with the Kafka data source registered."""
    from pyspark.sql import SparkSession

    from kstate.spark.kafka_source import KafkaTopicDataSource

    prepare_environment(local=master.startswith("local"))
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.bindAddress", "127.0.0.1" if master.startswith("local") else "0.0.0.0")
               .config("spark.python.worker.reuse", "true"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KafkaTopicDataSource)
    return spark
