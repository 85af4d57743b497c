"""Where settings come from: Kafka's ``server.properties`` format and environment variables.

Two families of variables name settings. ``KAFKA_*`` follows the apache/kafka container image, so a compose
service written for that image keeps its environment; ``MINIBROKER_*`` is minibroker's own and wins when both
name the same setting. Both use the image's rule: after the prefix, ``_`` is ``.``, ``__`` is ``_`` and ``___``
is ``-``, in lower case (``KAFKA_LOG_RETENTION_HOURS`` is ``log.retention.hours``).
"""

from __future__ import annotations

from typing import Mapping

ENV_PREFIX = "MINIBROKER_"
KAFKA_ENV_PREFIX = "KAFKA_"
# minibroker's variables that are not settings (read by the CLI, the test hooks and the test suite).
NON_SETTING_VARIABLES = frozenset(
    {"MINIBROKER_LOG_LEVEL", "MINIBROKER_TEST_CRASH_POINT", "MINIBROKER_EVENT_LOOP", "MINIBROKER_SPEC_DIR",
     "MINIBROKER_STRICT_CODEC"}
)
# The apache/kafka image's KAFKA_* variables that configure the JVM and logging, not the broker.
KAFKA_IMAGE_VARIABLES = frozenset(
    {
        "KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS",
        "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
        "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_HOSTNAME",
    }
)


class SettingsSyntaxError(ValueError):
    """A settings source that cannot be read (a properties line that is not ``key=value``)."""


def parse_properties(text: str) -> dict[str, str]:
    """Kafka-style ``server.properties``: ``key=value`` lines, ``#``/``!`` comments, ``key: value`` too."""
    items: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        sep = min((i for i in (stripped.find("="), stripped.find(":")) if i >= 0), default=-1)
        if sep < 0:
            raise SettingsSyntaxError(f"line {number}: expected key=value, got {stripped!r}")
        items[stripped[:sep].strip()] = stripped[sep + 1 :].strip()
    return items


def setting_name(variable: str, prefix: str) -> str:
    """``KAFKA_LOG_RETENTION_HOURS`` -> ``log.retention.hours`` (the image's substitutions, in its order)."""
    return variable[len(prefix) :].lower().replace("_", ".").replace("...", "-").replace("..", "_")


def env_name(setting: str, prefix: str = ENV_PREFIX) -> str:
    """The variable that names ``setting``: the inverse of ``setting_name``."""
    return prefix + setting.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def env_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """Settings named by ``KAFKA_*`` and then ``MINIBROKER_*`` variables (the latter win); names are checked
    later, with the other sources."""
    items: dict[str, str] = {}
    for prefix, skip in ((KAFKA_ENV_PREFIX, KAFKA_IMAGE_VARIABLES), (ENV_PREFIX, NON_SETTING_VARIABLES)):
        for variable, value in environ.items():
            if variable.startswith(prefix) and len(variable) > len(prefix) and variable not in skip:
                items[setting_name(variable, prefix)] = value
    return items
