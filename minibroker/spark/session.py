"""A local Spark session ready for this source: Java checked up front, workers on this very interpreter.

Spark's Python workers are started by the JVM with ``PYSPARK_PYTHON``; when that is another Python they
lack this package and confluent-kafka, or differ in version from the driver, and tasks fail obscurely.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping

from pyspark.sql import SparkSession

from minibroker.spark.source import KafkaDataSource, KafkaDataSourceAlias

log = logging.getLogger(__name__)

MIN_JAVA = 17
LOCAL_DEFAULTS = {
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


class JavaNotFoundError(RuntimeError):
    """Spark needs a Java runtime (17 or newer) and none was found."""


def register(spark: SparkSession) -> None:
    """Make ``format("minibroker")`` (and its alias) available in ``spark``."""
    spark.dataSource.register(KafkaDataSource)
    spark.dataSource.register(KafkaDataSourceAlias)


def use_this_interpreter() -> None:
    """Point Spark's Python workers at the driver's interpreter (before the JVM starts, which copies the variable)."""
    current = os.environ.get("PYSPARK_PYTHON")
    if current and Path(shutil.which(current) or current).resolve() != Path(sys.executable).resolve():
        log.warning(
            "PYSPARK_PYTHON=%s replaced by %s: workers must run the driver's interpreter", current, sys.executable
        )
    os.environ["PYSPARK_PYTHON"] = sys.executable


def require_java() -> str:
    """The java Spark will start (JAVA_HOME first, then PATH), checked to be 17 or newer."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise JavaNotFoundError(
            f"Spark needs Java {MIN_JAVA}+: no 'java' on PATH"
            + (f" and none in JAVA_HOME={home}" if home else " and JAVA_HOME is not set")
        )
    output = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', output)
    major = int(match.group(1)) if match else 0
    if major == 1 and match and match.group(2):
        major = int(match.group(2))
    if major < MIN_JAVA:
        first_line = output.strip().splitlines()[0] if output.strip() else "of unknown version"
        raise JavaNotFoundError(f"Spark needs Java {MIN_JAVA}+, {java} is: {first_line}")
    return java


def local_session(
    master: str = "local[2]", app_name: str = "minibroker-spark", conf: Mapping[str, str] | None = None
) -> SparkSession:
    """A session with small local defaults (2 shuffle partitions, UTC, no UI), the source registered."""
    require_java()
    use_this_interpreter()
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**LOCAL_DEFAULTS, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark
