"""Command line: ``minibroker [serve] [--host H] [--port P] [--data-dir D] [-c key=value ...]``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

from minibroker.config import BrokerConfig, ConfigError, load_config

log = logging.getLogger("minibroker")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="minibroker",
        description="A small, fast, Kafka wire-protocol compatible broker. Without a command it serves with defaults.",
    )
    commands = parser.add_subparsers(dest="command")
    serve = commands.add_parser("serve", help="run the broker (the default)")
    add_serve_arguments(serve)
    add_serve_arguments(parser)
    return parser


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to bind (default 9092; 0 picks a free port)")
    parser.add_argument("--data-dir", help="data directory (default ./minibroker-data)")
    parser.add_argument("--advertised-host", help="host given to clients (for containers and port mapping)")
    parser.add_argument("--advertised-port", type=int, help="port given to clients")
    parser.add_argument("--config", type=Path, help="a Kafka-style server.properties file")
    parser.add_argument(
        "-c", dest="settings", action="append", default=[], metavar="KEY=VALUE", help="any setting by its Kafka name"
    )
    parser.add_argument("--log-level", default=os.environ.get("MINIBROKER_LOG_LEVEL", "INFO"), help="logging level")


def flag_settings(args: argparse.Namespace) -> dict[str, str]:
    """Turn the convenience flags and ``-c`` pairs into Kafka-named settings."""
    items: dict[str, str] = {}
    for pair in args.settings:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"-c expects KEY=VALUE, got {pair!r}")
        items[key.strip()] = value
    if args.host is not None or args.port is not None:
        host = args.host if args.host is not None else "127.0.0.1"
        port = args.port if args.port is not None else 9092
        items["listeners"] = f"PLAINTEXT://{host}:{port}"
    if args.data_dir is not None:
        items["log.dirs"] = args.data_dir
    if args.advertised_host is not None or args.advertised_port is not None:
        items["advertised.listeners"] = f"PLAINTEXT://{args.advertised_host or '127.0.0.1'}:{args.advertised_port or 9092}"
    return items


async def serve(config: BrokerConfig) -> None:
    from minibroker.broker import Broker

    broker = Broker(config)
    await broker.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await broker.stop()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = load_config(args.config, os.environ, flag_settings(args))
    except (ConfigError, OSError) as exc:
        print(f"minibroker: configuration error: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(config))
    except OSError as exc:
        log.error("cannot start: %s", exc)
        return 1
    return 0
