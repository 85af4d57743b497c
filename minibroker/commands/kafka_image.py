"""What the Kafka container images offer the scripts that start them, for minibroker's own image.

Testcontainers' Kafka modules (and people's own start scripts) do not run a Kafka image's default command: they copy
a start script in that calls the image's start programs and tools. The image's shell scripts in ``docker/rootfs``
keep those programs' names and call this module for the parts that need the broker's rules:

- ``properties``: the settings the environment gives (``KAFKA_*``, ``KAFKA_CFG_*``, ``MINIBROKER_*``) as the
  ``kafka.properties`` file Confluent's ``configure`` writes;
- ``kafka-storage``: Kafka's storage tool, ``random-uuid`` and ``format`` (each log directory's meta.properties);
- the lines Kafka logs once it serves, which those modules wait for (``minibroker serve --log-kafka-started``).

Run as ``python -m minibroker.commands.kafka_image PROGRAM ARGS...``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Mapping, TextIO

if TYPE_CHECKING:
    from minibroker.config.settings import BrokerConfig

ALREADY_FORMATTED = "All of the log directories are already formatted."


def started_lines(config: BrokerConfig) -> list[str]:
    """The lines Apache Kafka logs once it serves clients, which Testcontainers' modules wait for: a ZooKeeper-era
    broker's when the configuration names ZooKeeper and no KRaft roles, else a KRaft broker's."""
    node = config.node_id
    given = dict(config.given)
    zookeeper = "zookeeper.connect" in given or "zookeeper.connect" in config.unknown
    if zookeeper and "process.roles" not in given:
        return [f"[KafkaServer id={node}] started"]
    return [
        f"[BrokerLifecycleManager id={node}] The broker has been unfenced. Transitioning from RECOVERY to RUNNING.",
        f"[KafkaRaftServer nodeId={node}] Kafka Server started",
    ]


def properties_text(environ: Mapping[str, str]) -> str:
    """The settings ``environ`` gives, one ``name=value`` line each (sorted), as a properties file."""
    from minibroker.config.sources import env_settings

    items = env_settings(environ)
    return "".join(f"{name}={items[name]}\n" for name in sorted(items))


def kafka_storage(argv: list[str], out: TextIO, err: TextIO) -> int:
    """Kafka's ``kafka-storage``: ``random-uuid`` prints a new cluster id; ``format -t ID -c FILE`` writes the
    meta.properties of the data directory FILE names (``--ignore-formatted``: a formatted one is left alone, as
    Kafka leaves it). Options of Kafka's that concern the controller quorum are accepted and have no effect."""
    from minibroker.storage.uuid import random_uuid, uuid_to_str

    parser = argparse.ArgumentParser(prog="kafka-storage", description="Kafka's storage tool, as minibroker needs it.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("random-uuid", help="print a new cluster id")
    format_command = commands.add_parser("format", help="write the data directory's meta.properties")
    format_command.add_argument("-t", "--cluster-id", required=True)
    format_command.add_argument("-c", "--config", required=True, help="the broker's properties file")
    format_command.add_argument("-g", "--ignore-formatted", action="store_true")
    for flag in ("-s", "--standalone", "-N", "--no-initial-controllers"):  # the quorum's: one process has none
        format_command.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
    for option in ("-r", "--release-version", "-f", "--feature", "-I", "--initial-controllers", "--add-scram"):
        format_command.add_argument(option, action="append", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.command == "random-uuid":
        out.write(uuid_to_str(random_uuid()) + "\n")
        return 0
    try:
        formatted = format_storage(args.config, args.cluster_id, args.ignore_formatted)
    except (OSError, ValueError) as exc:
        err.write(f"kafka-storage: {exc}\n")
        return 1
    out.write(f"Formatting {formatted} with cluster id {args.cluster_id}.\n" if formatted else ALREADY_FORMATTED + "\n")
    return 0


def format_storage(config_path: str, cluster_id: str, ignore_formatted: bool) -> str | None:
    """Write meta.properties in the data directory the properties file names; the directory formatted, or None when
    it already was (and ``ignore_formatted``). A formatted directory without it, a bad cluster id, an unreadable
    file: ValueError or OSError with the reason."""
    from minibroker.config.settings import ConfigError, load_config
    from minibroker.storage.checkpoint import META_PROPERTIES, MetaProperties, write_meta_properties
    from minibroker.storage.uuid import check_uuid_string, random_uuid

    try:
        check_uuid_string(cluster_id)
    except ValueError as exc:
        raise ValueError(f"Cluster ID string {cluster_id} does not appear to be a valid UUID: {exc}") from None
    try:
        config = load_config(config_path, {}, {})
    except ConfigError as exc:
        raise ValueError(f"{config_path}: {exc}") from None
    meta_path = os.path.join(config.data_dir, META_PROPERTIES)
    if os.path.exists(meta_path):
        if ignore_formatted:
            return None
        raise ValueError(
            f"Log directory {config.data_dir} is already formatted. Use --ignore-formatted to ignore this directory "
            "and format the others."
        )
    os.makedirs(config.data_dir, exist_ok=True)
    write_meta_properties(meta_path, MetaProperties(cluster_id, config.node_id, random_uuid()))
    return config.data_dir


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    program, rest = (args[0], args[1:]) if args else ("", [])
    if program == "properties":
        sys.stdout.write(properties_text(os.environ))
        return 0
    if program == "kafka-storage":
        return kafka_storage(rest, sys.stdout, sys.stderr)
    print("usage: python -m minibroker.commands.kafka_image {properties,kafka-storage} ...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
