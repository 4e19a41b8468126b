"""Spark's own Kafka source (``spark-sql-kafka-0-10``) as the audit's other reader of a changelog, beside the Python
Data Source of :mod:`kstate.spark.kafka_source` (``kstate audit --source spark-kafka``).

pyspark ships no Kafka connector: its jars come from Maven Central through a small pom (``system_tests/spark-kafka``,
resolved once under the kit's Maven lock, :func:`kstate.maven.run_maven`) for the installed pyspark's Scala binary
version, and go on the session's classpath when it starts (``spark.jars``; a running JVM cannot take them). The
connector of pyspark's own Spark version is taken where Central serves it, else the newest listed in
:data:`FALLBACK_VERSIONS`; :func:`read_changelog` answers the Python source's columns, so that the audit's plans are
the same whichever source read the topic.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kstate.errors import KStateError
from kstate.maven import run_maven

#: The two readers of a changelog the audit offers: the Python Data Source and Spark's own Kafka source.
SOURCES = ("python", "spark-kafka")
#: Connector releases tried, in order, when Central serves none for the installed pyspark's version (pyspark 4.3.0
#: was published before Spark 4.3.0's Maven artefacts; 4.2.0's connector speaks the same DataSource V2 API).
FALLBACK_VERSIONS = ("4.2.0",)
#: Where the pom lives when not given: ``KSTATE_SPARK_KAFKA_PROJECT``, else ``system_tests/spark-kafka`` of a checkout.
PROJECT_ENV = "KSTATE_SPARK_KAFKA_PROJECT"
MAVEN_TIMEOUT = 900.0
RETRY_AFTER_S = 86_400.0
_JAR_NAME = re.compile(r"^(.*)-(\d+(?:\.\d+)*(?:[-.][A-Za-z0-9]+)*)\.jar$")


class SparkKafkaUnavailable(KStateError):
    """Spark's Kafka source cannot be used: no Maven, no connector for this Spark, or a session started without it."""


@dataclass(frozen=True)
class Connector:
    """The connector's jars for the session (those pyspark does not ship already) and the release they are."""

    version: str
    scala: str
    jars: tuple[str, ...]

    @property
    def conf(self) -> dict[str, str]:
        """The session configuration that puts the connector on the classpath (only when the JVM starts)."""
        return {"spark.jars": ",".join(self.jars)}


def _pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


def artifact_name(jar: str) -> str:
    """``kafka-clients-3.9.2.jar`` -> ``kafka-clients``: a jar file's artefact without its version."""
    base = os.path.basename(jar)
    match = _JAR_NAME.match(base)
    return match.group(1) if match else base


def scala_binary_version(jars: Path) -> str:
    """The Scala binary version (``2.13``) of the installed Spark, from its ``scala-library`` jar."""
    for jar in sorted(jars.glob("scala-library-*.jar")):
        match = re.match(r"scala-library-(\d+\.\d+)\.", jar.name)
        if match:
            return match.group(1)
    raise SparkKafkaUnavailable(f"no scala-library jar in {jars}: cannot tell which Scala build of the connector fits")


def default_project() -> Path:
    override = os.environ.get(PROJECT_ENV)
    if override:
        return Path(override)
    import kstate

    return Path(kstate.__file__).resolve().parents[2] / "system_tests" / "spark-kafka"


def connector(project: Path | None = None) -> Connector:
    """The connector matching the installed pyspark, resolved by Maven on first use (``target/<v>_<scala>/``)."""
    import pyspark

    root = project or default_project()
    if not (root / "pom.xml").exists():
        raise SparkKafkaUnavailable(f"no connector project at {root} (pom.xml missing; set {PROJECT_ENV})")
    shipped_dir = _pyspark_jars()
    scala = scala_binary_version(shipped_dir)
    shipped = {artifact_name(j.name) for j in shipped_dir.glob("*.jar")}
    tried: list[str] = []
    for version in dict.fromkeys((os.environ.get("KSTATE_SPARK_KAFKA_VERSION") or pyspark.__version__,
                                  *FALLBACK_VERSIONS)):
        target = root / "target" / f"{version}_{scala}"
        classpath, missing = target / "classpath.txt", target / "unresolved.txt"
        # A release Central did not serve is asked for again after a day, not at every session start.
        if not classpath.exists() and missing.exists() and time.time() - missing.stat().st_mtime < RETRY_AFTER_S:
            tried.append(f"{version}: {missing.read_text(encoding='utf-8').strip()}")
            continue
        if not classpath.exists():
            problem = _resolve(root, version, scala)
            if problem is not None:
                target.mkdir(parents=True, exist_ok=True)
                missing.write_text(problem + "\n", encoding="utf-8")
                tried.append(f"{version}: {problem}")
                continue
        jars = [j for j in classpath.read_text(encoding="utf-8").strip().split(os.pathsep)
                if j and artifact_name(j) not in shipped]
        return Connector(version, scala, tuple(jars))
    raise SparkKafkaUnavailable("no spark-sql-kafka-0-10 connector for pyspark "
                                f"{pyspark.__version__} (Scala {scala}) could be resolved: " + "; ".join(tried))


def _resolve(root: Path, version: str, scala: str) -> str | None:
    """Run Maven for one connector release; answers what went wrong, or None."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SparkKafkaUnavailable("Spark's Kafka source needs Maven on PATH to fetch its jars (mvn not found)")
    try:
        done = run_maven(mvn, root / "pom.xml", f"-Dspark.version={version}", f"-Dscala.binary.version={scala}",
                         "dependency:build-classpath", timeout=MAVEN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"Maven took over {MAVEN_TIMEOUT:.0f} s"
    if done.returncode != 0:
        lines = [line for line in (done.stdout + done.stderr).splitlines() if "ERROR" in line]
        return (lines[0] if lines else f"mvn exit {done.returncode}").strip()[:300]
    return None


def read_changelog(spark: Any, bootstrap: str, topic: str, partitions: Iterable[int] | None = None,
                   client_config: Mapping[str, Any] | None = None, *, latest_per_key: bool = False,
                   ends: Mapping[int, int] | None = None, header_bytes: bool = False) -> Any:
    """The changelog through Spark's Kafka source with the Python source's columns and options (see
    :func:`kstate.spark.oracle.read_changelog_frame`): read_committed, as the Python source's clients read; a
    compacted topic's missing offsets are not data loss. ``client_config`` goes to the source as ``kafka.*``
    options (Java client property names)."""
    from pyspark.sql import functions as F

    from kstate.spark.expressions import header_bytes as header_bytes_of
    from kstate.spark.kafka_source import COUNT_COLUMN, HEADER_BYTES_COLUMN

    reader = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("includeHeaders", "true").option("startingOffsets", "earliest")
              .option("kafka.isolation.level", "read_committed").option("failOnDataLoss", "false"))
    chosen = None if partitions is None else sorted(set(partitions))
    if chosen is None and ends:
        chosen = sorted(ends)
    if chosen is None:
        reader = reader.option("subscribe", topic)
    else:
        reader = reader.option("assign", json.dumps({topic: chosen}))
    if ends:
        reader = reader.option("endingOffsets", json.dumps({topic: {str(p): ends.get(p, -1) for p in chosen or []}}))
    else:
        reader = reader.option("endingOffsets", "latest")
    for key, value in (client_config or {}).items():
        reader = reader.option(f"kafka.{key}", str(value))
    try:
        frame = reader.load()
    except Exception as exc:  # py4j and pyspark raise several types for a source that is not on the classpath
        if "kafka" in str(exc).lower() and ("find data source" in str(exc).lower()
                                            or "DATA_SOURCE_NOT_FOUND" in str(exc)):
            raise SparkKafkaUnavailable("the SparkSession was started without Spark's Kafka source on its classpath "
                                        "(start it with connector().conf)") from exc
        raise
    frame = frame.select("topic", "partition", "offset", F.unix_millis("timestamp").alias("timestamp"),
                         "timestampType", "key", "value", "headers")
    fields = ["topic", "offset", "timestamp", "timestampType", "value", "headers"]
    if header_bytes:
        frame = frame.withColumn(HEADER_BYTES_COLUMN, header_bytes_of(F.col("headers")))
        fields.append(HEADER_BYTES_COLUMN)
    if not latest_per_key:
        return frame
    # RST-1: the latest record by offset per (partition, key), with the number of records it stands for.
    latest = (frame.groupBy("partition", "key")
              .agg(F.max_by(F.struct(*fields), "offset").alias("r"), F.count(F.lit(1)).alias(COUNT_COLUMN)))
    columns = ["topic", "partition", "offset", "timestamp", "timestampType", "key", "value", "headers",
               *([HEADER_BYTES_COLUMN] if header_bytes else []), COUNT_COLUMN]
    return latest.select(*(F.col(c) if c in ("partition", "key", COUNT_COLUMN) else F.col(f"r.{c}").alias(c)
                           for c in columns))
