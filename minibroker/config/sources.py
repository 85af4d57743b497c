"""Where settings come from: Kafka's ``server.properties`` format and environment variables.

Three families of variables name settings, later ones winning when two name the same setting. ``KAFKA_*`` follows
the apache/kafka container image, so a compose service written for that image keeps its environment: after the
prefix, ``_`` is ``.``, ``__`` is ``_`` and ``___`` is ``-``, in lower case (``KAFKA_LOG_RETENTION_HOURS`` is
``log.retention.hours``). ``KAFKA_CFG_*`` follows the Bitnami image (its libkafka.sh), whose compose files are
still common: after the prefix every ``_`` is ``.``, in lower case, except that ``sasl.ssl`` and ``sasl.plaintext``
are the listener names ``sasl_ssl`` and ``sasl_plaintext``; an empty value is skipped, as Bitnami skips it.
``MINIBROKER_*`` is minibroker's own, with the apache/kafka rule. The images' cluster id variables (``CLUSTER_ID``
of apache/kafka and Confluent's images, ``KAFKA_KRAFT_CLUSTER_ID`` of Bitnami's) are the setting ``cluster.id``, under
the families above.
"""

from __future__ import annotations

from typing import Mapping

ENV_PREFIX = "MINIBROKER_"
KAFKA_ENV_PREFIX = "KAFKA_"
BITNAMI_ENV_PREFIX = "KAFKA_CFG_"
# minibroker's variables that are not settings (read by the CLI, the test hooks and the test suite).
NON_SETTING_VARIABLES = frozenset(
    {"MINIBROKER_LOG_LEVEL", "MINIBROKER_TEST_CRASH_POINT", "MINIBROKER_EVENT_LOOP", "MINIBROKER_SPEC_DIR",
     "MINIBROKER_STRICT_CODEC"}
)
# The apache/kafka and Confluent images' KAFKA_* variables that configure the JVM and logging, not the broker.
KAFKA_IMAGE_VARIABLES = frozenset(
    {
        "KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS",
        "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
        "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_HOSTNAME", "KAFKA_JMX_PORT",
    }
)
# Prefixes of other programs' variables in those images: confluent-local's REST proxy (KAFKA_REST_BOOTSTRAP_SERVERS,
# which Testcontainers' Go module sets). No broker setting starts with "rest.".
KAFKA_IMAGE_PREFIXES = ("KAFKA_REST_",)
# The Bitnami image's own KAFKA_* variables (users, TLS files, KRaft storage set-up, ZooKeeper client security), read
# by its scripts and not settings; KAFKA_CFG_* are its settings.
BITNAMI_IMAGE_VARIABLES = frozenset(
    {
        "KAFKA_MOUNTED_CONF_DIR", "KAFKA_INTER_BROKER_USER", "KAFKA_INTER_BROKER_PASSWORD", "KAFKA_CONTROLLER_USER",
        "KAFKA_CONTROLLER_PASSWORD", "KAFKA_CERTIFICATE_PASSWORD", "KAFKA_TLS_TRUSTSTORE_FILE", "KAFKA_TLS_TYPE",
        "KAFKA_TLS_CLIENT_AUTH", "KAFKA_KRAFT_CLUSTER_ID", "KAFKA_INITIAL_CONTROLLERS",
        "KAFKA_KRAFT_VERSION", "KAFKA_SKIP_KRAFT_STORAGE_INIT", "KAFKA_CLIENT_LISTENER_NAME", "KAFKA_ENABLE_KRAFT",
        "KAFKA_CLIENT_USERS", "KAFKA_CLIENT_PASSWORDS", "KAFKA_BROKER_USER", "KAFKA_BROKER_PASSWORD",
        "KAFKA_ZOOKEEPER_PROTOCOL", "KAFKA_ZOOKEEPER_USER", "KAFKA_ZOOKEEPER_PASSWORD",
        "KAFKA_ZOOKEEPER_BOOTSTRAP_SCRAM_USERS", "KAFKA_ZOOKEEPER_TLS_KEYSTORE_PASSWORD",
        "KAFKA_ZOOKEEPER_TLS_TRUSTSTORE_PASSWORD", "KAFKA_ZOOKEEPER_TLS_TRUSTSTORE_FILE",
        "KAFKA_ZOOKEEPER_TLS_VERIFY_HOSTNAME", "KAFKA_ZOOKEEPER_TLS_TYPE",
    }
)
# The images' variables that name the cluster id of a new data directory (KAFKA_CLUSTER_ID is one by the KAFKA_ rule).
CLUSTER_ID_VARIABLES = ("CLUSTER_ID", "KAFKA_KRAFT_CLUSTER_ID")
BITNAMI_LISTENER_NAMES = (("sasl.ssl", "sasl_ssl"), ("sasl.plaintext", "sasl_plaintext"))


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


def bitnami_setting_name(variable: str) -> str:
    """``KAFKA_CFG_AUTO_CREATE_TOPICS_ENABLE`` -> ``auto.create.topics.enable`` (the Bitnami image's rule)."""
    name = variable[len(BITNAMI_ENV_PREFIX) :].replace("_", ".").lower()
    for dotted, listener in BITNAMI_LISTENER_NAMES:
        name = name.replace(dotted, listener)
    return name


def env_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """Settings named by the images' cluster id variables, then ``KAFKA_*``, ``KAFKA_CFG_*`` and ``MINIBROKER_*``
    variables (later ones win); names are checked later, with the other sources."""
    items: dict[str, str] = {"cluster.id": environ[name] for name in CLUSTER_ID_VARIABLES if environ.get(name, "").strip()}
    image_variables = KAFKA_IMAGE_VARIABLES | BITNAMI_IMAGE_VARIABLES
    for variable, value in environ.items():
        if variable.startswith(KAFKA_ENV_PREFIX) and not variable.startswith(BITNAMI_ENV_PREFIX) and \
                len(variable) > len(KAFKA_ENV_PREFIX) and variable not in image_variables and \
                not variable.startswith(KAFKA_IMAGE_PREFIXES):
            items[setting_name(variable, KAFKA_ENV_PREFIX)] = value
    for variable, value in environ.items():
        if variable.startswith(BITNAMI_ENV_PREFIX) and len(variable) > len(BITNAMI_ENV_PREFIX) and value.strip():
            items[bitnami_setting_name(variable)] = value
    for variable, value in environ.items():
        if variable.startswith(ENV_PREFIX) and len(variable) > len(ENV_PREFIX) and variable not in NON_SETTING_VARIABLES:
            items[setting_name(variable, ENV_PREFIX)] = value
    return items
