"""The ``minibroker`` command: ``serve`` (the default), ``probe``, ``dump`` and ``config-reference``.

Each command imports what it needs when it runs, so ``probe`` and ``--help`` stay quick and ``serve``
pays only for the broker.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from functools import partial
from typing import TYPE_CHECKING

from minibroker import __version__

if TYPE_CHECKING:
    from collections.abc import Mapping

    from minibroker.config.settings import BrokerConfig

log = logging.getLogger("minibroker")

DESCRIPTION = """\
A small, fast, Kafka wire-protocol compatible broker for test suites and throwaway containers.
Real Kafka clients connect to it; it stores data in Kafka's own on-disk layout.
Without a command, minibroker serves (options as for `minibroker serve`)."""
EPILOG = """\
examples:
  minibroker                                       serve on 127.0.0.1:9092, data in ./minibroker-data
  minibroker serve --port 0 --data-dir /tmp/mb -c num.partitions=3
  minibroker probe 127.0.0.1:9092                  exit 0 once a broker answers
  minibroker dump --print-data ./minibroker-data/orders-0
  minibroker control --url http://127.0.0.1:8090 POST /v1/nodes/2/stop '{"clean": false}'
  minibroker config-reference                      every setting, its default and environment variable
  minibroker api-reference                         every implemented API and its versions
  minibroker unserved-apis                         Apache Kafka's APIs minibroker does not serve, and why

Run `minibroker COMMAND --help` for the options of a command."""
SERVE_EPILOG = """\
Settings use Apache Kafka's names. Precedence, lowest first: defaults, --config file, environment
variables (MINIBROKER_ + the name in upper case, dots as underscores, e.g. MINIBROKER_NUM_PARTITIONS=3),
then flags. `minibroker config-reference` lists every setting. --host and --port change the address of the first
listener of the setting listeners and keep the others (--advertised-host and --advertised-port: that listener's
entry of advertised.listeners); a line is logged when they change a configured value.

On SIGTERM or SIGINT the broker answers the requests in flight, flushes and closes every log, and exits 0 (1,
with a line "stopping failed: ...", when a file cannot be written then).
The line "minibroker ready on HOST:PORT ..." is logged once clients can connect."""
DUMP_EPILOG = """\
Like Kafka's kafka-dump-log: one line per batch with every header field and whether its CRC is valid;
with --print-data one line per record too (control records show as endTxnMarker: COMMIT/ABORT).
Directories of __consumer_offsets, __transaction_state and __share_group_state partitions are decoded automatically.
--json prints one JSON object per batch instead (records included with --print-data); keys, values and
header values are UTF-8 text when valid, else {"base64": ...}."""


class CommandParser(argparse.ArgumentParser):
    """The top-level parser: arguments that do not start with a command are the ``serve`` command's."""

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        argv = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(with_default_command(argv), namespace)


def terminal_columns() -> int:
    """The width ``shutil.get_terminal_size`` would give argparse, found without importing shutil (argparse's own
    formatter imports it, about a tenth of the broker's start-up)."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 80


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; ``only`` names the one command to describe (the one being run): building every command's
    options, help texts included, is a noticeable part of the broker's start-up, which needs only ``serve``'s."""
    width = terminal_columns() - 2  # as argparse does
    parser = CommandParser(
        prog="minibroker", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=partial(argparse.RawDescriptionHelpFormatter, width=width),
    )
    parser.add_argument("--version", action="version", version=f"minibroker {__version__}")
    commands = parser.add_subparsers(
        dest="command", title="commands", metavar="COMMAND", parser_class=argparse.ArgumentParser
    )
    for name, add_command in COMMAND_PARSERS.items():
        if only is None or name == only:
            add_command(commands, width)
    return parser


def add_serve_command(commands: argparse._SubParsersAction, width: int) -> None:
    serve = commands.add_parser(
        "serve", help="run the broker (the default command)", description="Run the broker until SIGTERM or SIGINT.",
        epilog=SERVE_EPILOG, formatter_class=partial(argparse.RawDescriptionHelpFormatter, width=width),
    )
    add_serve_arguments(serve)


def add_probe_command(commands: argparse._SubParsersAction, width: int) -> None:
    probe = commands.add_parser(
        "probe", help="exit 0 if a broker answers ApiVersions, 1 if not",
        description="Send one ApiVersions request and wait for the answer: exit 0 if it comes, 1 otherwise. "
        "Used by the container's HEALTHCHECK and handy in scripts waiting for a broker.",
        formatter_class=partial(argparse.HelpFormatter, width=width),
    )
    probe.add_argument(
        "address", nargs="?", metavar="HOST:PORT",
        help="broker to probe (default: the listener configured by MINIBROKER_LISTENERS, 0.0.0.0 meaning 127.0.0.1)",
    )
    probe.add_argument("--timeout", type=float, default=5.0, metavar="S", help="give up after S seconds (default 5)")
    probe.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")


def add_dump_command(commands: argparse._SubParsersAction, width: int) -> None:
    dump = commands.add_parser(
        "dump", help="print segments and partitions like kafka-dump-log",
        description="Decode .log segment files, or every segment of partition directories.",
        epilog=DUMP_EPILOG, formatter_class=partial(argparse.RawDescriptionHelpFormatter, width=width),
    )
    dump.add_argument("paths", nargs="+", metavar="PATH", help="a .log file or a partition directory")
    dump.add_argument(
        "--print-data", "--print-data-log", action="store_true", help="also print every record (offset, timestamp, key, value...)"
    )
    decoders = dump.add_mutually_exclusive_group()
    decoders.add_argument(
        "--offsets-decoder", dest="decoder", action="store_const", const="offsets",
        help="decode records as __consumer_offsets commits and group metadata (implies --print-data)",
    )
    decoders.add_argument(
        "--transaction-log-decoder", dest="decoder", action="store_const", const="transaction-log",
        help="decode records as __transaction_state entries (implies --print-data)",
    )
    decoders.add_argument(
        "--share-group-state-decoder", dest="decoder", action="store_const", const="share-group-state",
        help="decode records as __share_group_state snapshots and updates (implies --print-data)",
    )
    decoders.add_argument(
        "--schemas-decoder", dest="decoder", action="store_const", const="schemas",
        help="decode records as a schema registry's _schemas records (Confluent's JSON keys and values; automatic "
        "for _schemas-N)",
    )
    dump.add_argument("--json", action="store_true", help="one JSON object per batch, for scripts")


def add_control_command(commands: argparse._SubParsersAction, width: int) -> None:
    control = commands.add_parser(
        "control", help="send one request to a broker's control listener and print the answer",
        description="A thin client of the control API (HTTP/JSON; see the README): sends METHOD PATH with an "
        "optional JSON body, prints the JSON answer, exits 0 on a 2xx answer and 1 otherwise.",
        formatter_class=partial(argparse.HelpFormatter, width=width),
    )
    control.add_argument("method", metavar="METHOD", help="GET, POST or DELETE")
    control.add_argument("path", metavar="PATH", help="e.g. /v1/health, /v1/nodes/2/stop")
    control.add_argument("body", nargs="?", metavar="JSON", help="the request body, a JSON object")
    control.add_argument(
        "--url", default=os.environ.get("MINIBROKER_CONTROL_URL", "http://127.0.0.1:8090"),
        help="the control listener (default $MINIBROKER_CONTROL_URL or http://127.0.0.1:8090)",
    )
    control.add_argument("--token", default=os.environ.get("MINIBROKER_CONTROL_TOKEN"), help="its bearer token")
    control.add_argument("--timeout", type=float, default=30.0, metavar="S", help="give up after S seconds")


def add_transcript_command(commands: argparse._SubParsersAction, width: int) -> None:
    transcript = commands.add_parser(
        "transcript", help="print a transcript file (transcript.file) as a timeline",
        description="One line per request: entry, time, node, peer, client id, API and version, correlation id, "
        "partitions, records sent, the fault that acted, and the errors of the answer.",
        formatter_class=partial(argparse.HelpFormatter, width=width),
    )
    transcript.add_argument("file", metavar="FILE", help="a JSONL transcript (the setting transcript.file)")


def add_config_reference_command(commands: argparse._SubParsersAction, width: int) -> None:
    commands.add_parser(
        "config-reference", help="print every setting as a Markdown table",
        description="Print every setting with its default, environment variable and meaning, as a Markdown table.",
        formatter_class=partial(argparse.HelpFormatter, width=width),
    )


def add_api_reference_command(commands: argparse._SubParsersAction, width: int) -> None:
    api_reference = commands.add_parser(
        "api-reference", help="print every implemented API and its versions as a Markdown table",
        description="Print every API the broker implements with the versions ApiVersions advertises, as a Markdown table.",
        formatter_class=partial(argparse.HelpFormatter, width=width),
    )
    api_reference.add_argument(
        "--kafka-version", metavar="X.Y", help="the table of a broker emulating this Apache Kafka release (kafka.version)"
    )


def add_unserved_apis_command(commands: argparse._SubParsersAction, width: int) -> None:
    commands.add_parser(
        "unserved-apis", help="print Apache Kafka's APIs minibroker does not serve, and why, as a Markdown table",
        description="Print the APIs of Apache Kafka's message definitions that the broker does not implement, grouped "
        "by why, as a Markdown table.", formatter_class=partial(argparse.HelpFormatter, width=width),
    )


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", help="address the first listener binds (default 127.0.0.1, or the one listeners gives; 0.0.0.0 for "
        "every interface)",
    )
    parser.add_argument(
        "--port", type=int, help="port the first listener binds (default 9092, or the one listeners gives; 0 picks a "
        "free port)",
    )
    parser.add_argument("--data-dir", help="data directory (default ./minibroker-data)")
    parser.add_argument(
        "--nodes", type=int, metavar="N",
        help="serve a cluster of N brokers, node k on --port + k - 1 (default 1; the setting nodes)",
    )
    parser.add_argument(
        "--control-port", type=int, metavar="PORT",
        help="serve the control API (HTTP/JSON test control) on PORT, on loopback (0: a free port; the setting "
        "control.port)",
    )
    parser.add_argument(
        "--schema-registry-port", type=int, metavar="PORT",
        help="serve a schema registry (Confluent Schema Registry's REST API) on PORT, on loopback (0: a free "
        "port; the setting schema.registry.port)",
    )
    parser.add_argument(
        "--inspect", type=int, metavar="PORT",
        help="serve the web inspector, read-only, on PORT on loopback: the control listener with control.read.only "
        "(0: a free port; with --control-port, the inspector is on that listener and may change things)",
    )
    parser.add_argument(
        "--clock", choices=("system", "virtual"),
        help="virtual: broker timeouts follow a clock that moves only through the control API (the setting clock)",
    )
    parser.add_argument(
        "--kafka-version", metavar="X.Y",
        help="emulate an Apache Kafka release: ApiVersions advertises only what it served, e.g. 3.5 (the setting "
        "kafka.version)",
    )
    parser.add_argument(
        "--advertised-host", help="host the first listener gives clients (behind NAT, in containers, port mapping)"
    )
    parser.add_argument(
        "--advertised-port", type=int, help="port the first listener gives clients (default: the port it binds)"
    )
    parser.add_argument("--config", metavar="FILE", help="a Kafka-style server.properties file")
    parser.add_argument(
        "-c", dest="settings", action="append", default=[], metavar="NAME=VALUE",
        help="any setting by its Kafka name (repeatable)",
    )
    parser.add_argument(
        "--log-kafka-started", action="store_true",
        help="once serving, also log the lines Apache Kafka logs when it has started (Kafka Server started, "
        "Transitioning from RECOVERY to RUNNING, or [KafkaServer id=N] started with zookeeper.connect), which tools "
        "such as Testcontainers wait for; the container image's Kafka start programs pass it",
    )
    parser.add_argument(
        "--log-level", default=os.environ.get("MINIBROKER_LOG_LEVEL", "INFO"), metavar="LEVEL",
        help="DEBUG, INFO, WARNING or ERROR (default INFO, or MINIBROKER_LOG_LEVEL)",
    )
    parser.add_argument(
        "--event-loop", choices=("asyncio", "uvloop"), default=os.environ.get("MINIBROKER_EVENT_LOOP", "asyncio"),
        help="asyncio (default) or uvloop, the optional extra minibroker[uvloop]: faster produce (or MINIBROKER_EVENT_LOOP)",
    )


# Each command's options, in the order `minibroker --help` lists them.
COMMAND_PARSERS = {
    "serve": add_serve_command,
    "probe": add_probe_command,
    "dump": add_dump_command,
    "control": add_control_command,
    "transcript": add_transcript_command,
    "config-reference": add_config_reference_command,
    "api-reference": add_api_reference_command,
    "unserved-apis": add_unserved_apis_command,
}
COMMANDS = tuple(COMMAND_PARSERS)


def with_default_command(argv: list[str]) -> list[str]:
    """``minibroker --port 0`` means ``minibroker serve --port 0``; help and version stay top-level."""
    if argv and (argv[0] in COMMANDS or argv[0] in ("-h", "--help", "--version")):
        return argv
    return ["serve", *argv]


def main(argv: list[str] | None = None) -> int:
    argv = with_default_command(sys.argv[1:] if argv is None else list(argv))
    args = build_parser(only=argv[0] if argv[0] in COMMANDS else None).parse_args(argv)
    if args.command == "probe":
        return run_probe(args.address, args.timeout, args.quiet)
    if args.command == "dump":
        from minibroker.commands.dump import dump_paths

        try:
            return dump_paths(
                args.paths, print_data=args.print_data, decoder_name=args.decoder, as_json=args.json,
                out=sys.stdout, err=sys.stderr,
            )
        except BrokenPipeError:  # `minibroker dump ... | head`: stop quietly, as other tools do
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
    if args.command == "transcript":
        from minibroker.control.transcript import timeline

        try:
            import json

            with open(args.file, encoding="utf-8") as file:
                entries = [json.loads(line) for line in file if line.strip()]
            sys.stdout.write("".join(line + "\n" for line in timeline(entries)))
        except (OSError, ValueError, KeyError) as exc:
            print(f"minibroker transcript: {args.file}: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.command == "control":
        return run_control(args.url, args.method, args.path, args.body, args.token, args.timeout)
    if args.command == "api-reference" and args.kafka_version:
        from minibroker.config.settings import ConfigError
        from minibroker.commands.reference import api_table

        try:
            sys.stdout.write(api_table(args.kafka_version))
        except ConfigError as exc:
            print(f"minibroker api-reference: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.command in ("config-reference", "api-reference", "unserved-apis"):
        from minibroker.commands.reference import TABLES

        sys.stdout.write(TABLES[args.command]())
        return 0
    return run_serve(args)


# ---- serve ----


def flag_settings(args: argparse.Namespace) -> dict[str, str]:
    """Turn the convenience flags and ``-c`` pairs into Kafka-named settings (the address flags: see
    ``address_flag_settings``)."""
    from minibroker.config.settings import ConfigError

    items: dict[str, str] = {}
    for pair in args.settings:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"-c expects KEY=VALUE, got {pair!r}")
        items[key.strip()] = value
    if args.data_dir is not None:
        items["log.dirs"] = args.data_dir
    if args.nodes is not None:
        items["nodes"] = str(args.nodes)
    if args.control_port is not None:
        items["control.port"] = str(args.control_port)
    if args.schema_registry_port is not None:
        items["schema.registry.port"] = str(args.schema_registry_port)
    elif args.inspect is not None:
        items["control.port"] = str(args.inspect)
        items["control.read.only"] = "true"
    if args.clock is not None:
        items["clock"] = args.clock
    if args.kafka_version is not None:
        items["kafka.version"] = args.kafka_version
    return items


def address_flag_settings(args: argparse.Namespace, given: Mapping[str, str]) -> dict[str, str]:
    """--host and --port change the address of the broker's first listener in ``listeners`` (as ``given`` by the
    other sources, or the default), --advertised-host and --advertised-port that listener's entry of
    ``advertised.listeners``; every other listener is kept, so a SASL listener named beside it still serves. A
    value the configuration gave that the flags change is logged."""
    items: dict[str, str] = {}
    listener_flags = named_flags(args, "host", "port")
    advertised_flags = named_flags(args, "advertised_host", "advertised_port")
    if not listener_flags and not advertised_flags:
        return items
    from minibroker.config.listeners import (
        DEFAULT_LISTENERS,
        default_advertised,
        first_broker_endpoint,
        listener_names,
        with_endpoint,
    )

    listeners = given.get("listeners", DEFAULT_LISTENERS)
    first = first_broker_endpoint(listeners, listener_names(given.get("controller.listener.names", "")))
    name, host, port = first or ("PLAINTEXT", "127.0.0.1", 9092)
    if listener_flags:
        items["listeners"] = with_endpoint(listeners, "listeners", name, args.host, args.port, (host, port))
        log_changed_by_flags(listener_flags, name, "listeners", given, items)
    if advertised_flags:
        bound_host = host if args.host is None else args.host
        items["advertised.listeners"] = with_endpoint(
            given.get("advertised.listeners", ""), "advertised.listeners", name, args.advertised_host,
            args.advertised_port, default_advertised(bound_host, 0),  # port 0: the port the listener binds
        )
        log_changed_by_flags(advertised_flags, name, "advertised.listeners", given, items)
    return items


def named_flags(args: argparse.Namespace, *names: str) -> str:
    """The flags among ``names`` given on the command line, as typed (``--port 0``)."""
    given = [(name, getattr(args, name)) for name in names if getattr(args, name) is not None]
    return " ".join(f"--{name.replace('_', '-')} {value}" for name, value in given)


def log_changed_by_flags(
    flags: str, listener: str, setting: str, given: Mapping[str, str], items: dict[str, str]
) -> None:
    """The precedence made visible: flags changed the listener's part of a setting the configuration gave."""
    if given.get(setting) and given[setting] != items[setting]:
        log.info("%s applies to listener %s: %s=%s (configured: %s)", flags, listener, setting, items[setting],
                 given[setting])


def serve_config(args: argparse.Namespace) -> BrokerConfig:
    """Defaults, the --config file, the environment, then the flags (later wins); the address flags change what the
    others made of the listeners."""
    from minibroker.config.settings import build_config, setting_sources

    sources = [*setting_sources(args.config, os.environ), flag_settings(args)]
    given = {name: value for source in sources for name, value in source.items()}
    return build_config(*sources, address_flag_settings(args, given))


def run_serve(args: argparse.Namespace) -> int:
    # Start-up makes long-lived objects only (modules, codecs, the configuration, the logs it opens): the collector
    # would walk them a few times over for nothing (about 5 ms of a start here). serve() freezes what start-up
    # made and turns the collector back on.
    gc.disable()
    try:
        return serve_until_stopped(args)
    finally:
        gc.enable()


def serve_until_stopped(args: argparse.Namespace) -> int:
    import asyncio

    from minibroker.config.settings import ConfigError

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = serve_config(args)
    except (ConfigError, OSError) as exc:
        print(f"minibroker: configuration error: {exc}", file=sys.stderr)
        return 2
    runner = asyncio.run
    if args.event_loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            print("minibroker: --event-loop uvloop needs the uvloop package: pip install 'minibroker[uvloop]'", file=sys.stderr)
            return 2
        runner = uvloop.run
    try:
        runner(serve(config, args.log_kafka_started))
    except ConfigError as exc:  # found only when starting, e.g. an unreadable certificate
        print(f"minibroker: configuration error: {exc}", file=sys.stderr)
        return 2
    except StopFailed as exc:
        log.error("stopping failed: %s", file_problem(exc.error, config.data_dir))
        return 1
    except OSError as exc:
        log.error("cannot start: %s", file_problem(exc, config.data_dir))
        return 1
    return 0


class StopFailed(Exception):
    """Stopping after a signal failed on a file (the broker had served): told apart from a failed start."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def file_problem(exc: OSError, data_dir: str) -> str:
    """What a user needs to know of a file error: for a permission, who owns the data directory."""
    return permission_problem(exc, data_dir) if isinstance(exc, PermissionError) else str(exc)


def permission_problem(exc: PermissionError, data_dir: str) -> str:
    """What a user needs to know when the data directory cannot be written: who the process is and who owns it
    (in a container: a volume or bind mount that belongs to another user)."""
    path = os.path.abspath(exc.filename or data_dir)
    if os.path.commonpath([path, os.path.abspath(data_dir)]) != os.path.abspath(data_dir):
        return str(exc)
    try:
        stat = os.stat(data_dir)
        owner = f"it belongs to uid {stat.st_uid} gid {stat.st_gid} with mode {stat.st_mode & 0o7777:o}"
    except OSError:
        owner = "it cannot be read"
    return (
        f"the data directory {data_dir} is not writable by this process (uid {os.getuid()}, gid {os.getgid()}): "
        f"{owner}. Make it writable for this user or group, or run as its owner (a container: --user, or a volume "
        f"the user owns, e.g. podman's :U option) [{exc.strerror}: {exc.filename}]"
    )


async def serve(config: BrokerConfig, log_kafka_started: bool = False) -> None:
    """Run until SIGTERM or SIGINT, then stop gracefully (``Broker.stop`` finishes in-flight requests).
    ``log_kafka_started``: log the lines Kafka logs once it serves (``minibroker.commands.kafka_image``)."""
    import asyncio
    import signal

    from minibroker.broker import Broker
    from minibroker.server.limits import raise_open_file_limit

    raise_open_file_limit()
    # The handlers come first: a supervisor may send SIGTERM the moment it reads the readiness line, and that must
    # stop the broker gracefully too (a signal during start-up stops it once it has started).
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    broker = Broker(config)
    await broker.start()
    if log_kafka_started:
        from minibroker.commands.kafka_image import started_lines

        for line in started_lines(config):
            logging.getLogger("kafka.server").info(line)
    # What start-up made (modules, codecs, config, the logs opened) lives as long as the process: moved out of
    # the collector's reach, a full collection no longer walks it. Measured on a 2-vCPU VM: a full collection
    # took 6 ms after the imports alone and 25-30 ms with 2,000 partitions open; 0 ms after the freeze.
    gc.freeze()
    gc.enable()
    try:
        await stop.wait()
        log.info("stopping: signal received")
    finally:
        try:
            await broker.stop()
        except OSError as exc:
            raise StopFailed(exc) from exc


# ---- control ----


def run_control(url: str, method: str, path: str, body: str | None, token: str | None, timeout_s: float) -> int:
    from minibroker.control_client import ControlClient

    try:
        status, text = ControlClient(url, token, timeout_s).send(method, path, body)
    except (OSError, ValueError) as exc:
        print(f"minibroker control: {url}: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    if status >= 300:
        print(f"minibroker control: {status}", file=sys.stderr)
        return 1
    return 0


# ---- probe ----


def run_probe(address: str | None, timeout_s: float, quiet: bool) -> int:
    from minibroker.commands.probe import ProbeError, probe

    try:
        target = address or configured_address()
        result = probe(target, timeout_s)
    except (ProbeError, ValueError) as exc:
        print(f"minibroker probe: {exc}", file=sys.stderr)
        return 1
    if not quiet:
        elapsed_ms = result.elapsed_s * 1000
        print(f"{result.address} is up: ApiVersions answered in {elapsed_ms:.1f} ms ({result.api_count} APIs)")
    return 0


def configured_address() -> str:
    """The listener the environment configures (as the container sets it), reachable from this host."""
    from minibroker.config.settings import build_config
    from minibroker.config.sources import env_settings

    host, port = build_config(env_settings(os.environ)).listener
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
