"""PySpark data source for Kafka-compatible brokers: ``format("minibroker")``, with Spark's Kafka options and schema.

Needs the ``spark`` extra (``pip install 'minibroker[spark]'``: PySpark 4.2+, pyarrow, pandas, confluent-kafka)
and Java 17+. Importing this package needs none of them, so the broker never depends on Spark;
:func:`register` and :func:`local_session` say clearly what is missing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FORMAT = "minibroker"
ALIAS = "kafka-python-source"
REQUIRED_MODULES = ("pyspark", "pyarrow", "pandas", "confluent_kafka")


class MissingDependencyError(ImportError):
    """A package of the ``spark`` extra is not installed."""


def require_dependencies() -> None:
    missing = [name for name in REQUIRED_MODULES if not _importable(name)]
    if missing:
        raise MissingDependencyError(
            f"the Spark data source needs {', '.join(missing)}: pip install 'minibroker[spark]'"
        )


def register(spark: SparkSession) -> None:
    """Register ``format("minibroker")`` and ``format("kafka-python-source")`` in ``spark``."""
    require_dependencies()
    from minibroker.spark.session import register as register_sources

    register_sources(spark)


def local_session(
    master: str = "local[2]", app_name: str = "minibroker-spark", conf: Mapping[str, str] | None = None
) -> SparkSession:
    """A local SparkSession, the source registered, workers on this interpreter (``session.local_session``)."""
    require_dependencies()
    from minibroker.spark.session import local_session as start

    return start(master, app_name, conf)


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True
