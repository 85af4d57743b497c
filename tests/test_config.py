"""Broker configuration: Kafka names from files, environment and flags, with clear errors."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from minibroker.commands.cli import address_flag_settings, build_parser, flag_settings
from minibroker.config.settings import BrokerConfig, ConfigError, build_config, load_config
from minibroker.config.sources import SettingsSyntaxError, env_name, env_settings, parse_properties, setting_name


def test_defaults_are_a_local_test_broker() -> None:
    config = BrokerConfig()
    assert config.listener == ("127.0.0.1", 9092)
    assert config.data_dir == "minibroker-data"
    assert config.log_config().segment_bytes == 1 << 30


def test_properties_file_environment_and_flags_in_that_order(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("# comment\nnum.partitions=2\nlog.retention.ms = 1000\nmessage.max.bytes: 5000\n")
    config = load_config(props, {"MINIBROKER_NUM_PARTITIONS": "4"}, {"log.retention.ms": "2000"})
    assert config.num_partitions == 4
    assert (config.log_config().retention_ms, config.log_config().max_message_bytes) == (2000, 5000)


@pytest.mark.parametrize(
    "settings, fragment",
    [
        ({"num.partitions": "zero"}, "num.partitions"),
        ({"num.partitions": "0"}, "minimum"),
        ({"auto.create.topics.enable": "maybe"}, "auto.create.topics.enable"),
        ({"listeners": "SSL://0.0.0.0:9093"}, "SSL"),
        ({"listeners": "nowhere"}, "HOST:PORT"),
        ({"log.message.timestamp.type": "Tomorrow"}, "timestamp"),
        ({"log.roll.hours": "0"}, "log.roll.hours"),
        ({"num.network.threads": "many"}, "num.network.threads"),
        ({"process.roles": "broker,observer"}, "process.roles"),
        ({"ssl.principal.mapping.rules": "RULE:^CN=(.*)$/$1/L/U"}, "ssl.principal.mapping.rules: Invalid rule"),
    ],
)
def test_invalid_settings_are_named(settings: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        build_config(settings)


def test_unknown_names_are_kept_for_a_warning_not_refused() -> None:
    config = build_config({"no.such.setting": "1"}, env_settings({"MINIBROKER_NOPE": "1", "HOME": "/root"}))
    assert config.unknown == ("no.such.setting", "nope")


def test_environment_follows_the_kafka_image_naming_rule() -> None:
    environ = {
        "KAFKA_LOG_RETENTION_HOURS": "5", "KAFKA_SOME__UNDERSCORED___AND_DASHED": "x", "KAFKA_HEAP_OPTS": "-Xmx1G",
        "KAFKA_NUM_PARTITIONS": "2", "MINIBROKER_NUM_PARTITIONS": "3", "MINIBROKER_LOG_LEVEL": "DEBUG", "HOME": "/root",
    }
    assert env_settings(environ) == {"log.retention.hours": "5", "some_underscored-and.dashed": "x", "num.partitions": "3"}
    for name in ("log.retention.hours", "some_underscored-and.dashed"):
        assert setting_name(env_name(name, "KAFKA_"), "KAFKA_") == name


@pytest.mark.parametrize(
    "settings, retention_ms, segment_ms",
    [
        ({}, 7 * 24 * 3_600_000, 7 * 24 * 3_600_000),
        ({"log.retention.hours": "2", "log.roll.hours": "3"}, 2 * 3_600_000, 3 * 3_600_000),
        ({"log.retention.hours": "2", "log.retention.minutes": "5"}, 5 * 60_000, 7 * 24 * 3_600_000),
        ({"log.retention.minutes": "5", "log.retention.ms": "7", "log.roll.ms": "9", "log.roll.hours": "1"}, 7, 9),
        ({"log.retention.hours": "-1"}, -1, 7 * 24 * 3_600_000),
    ],
)
def test_time_settings_take_kafka_precedence(settings: dict[str, str], retention_ms: int, segment_ms: int) -> None:
    log_config = build_config(settings).log_config()
    assert (log_config.retention_ms, log_config.segment_ms) == (retention_ms, segment_ms)


def test_broker_id_is_node_id_and_log_dir_a_log_dirs() -> None:
    config = build_config({"broker.id": "7", "log.dir": "/data/kafka"})
    assert (config.node_id, config.data_dir) == (7, "/data/kafka")
    assert build_config({"log.dir": "/a", "log.dirs": "/b"}).data_dir == "/b"
    with pytest.raises(ConfigError, match="broker.id"):
        build_config({"broker.id": "7", "node.id": "8"})


def test_kinds_of_settings() -> None:
    config = build_config({"compression.type": "zstd", "process.roles": "broker,controller", "num.io.threads": "4",
                           "auto.leader.rebalance.enable": "false", "log.cleaner.enable": "false"})
    assert config.log_config().compression_type == "zstd" and config.log_cleaner_enable is False
    assert config.ignored_settings() == ["auto.leader.rebalance.enable", "num.io.threads", "process.roles"]
    assert config.unknown == ()


def test_properties_syntax_error_names_the_line() -> None:
    with pytest.raises(SettingsSyntaxError, match="line 2"):
        parse_properties("a=1\njunk\n")


def test_cli_flags_become_kafka_settings() -> None:
    args = build_parser().parse_args(["serve", "--port", "0", "--data-dir", "/x", "-c", "num.partitions=3",
                                      "--advertised-host", "example", "--advertised-port", "29092"])
    items = flag_settings(args)
    assert items == {"num.partitions": "3", "log.dirs": "/x"}
    addresses = address_flag_settings(args, items)
    assert addresses == {"listeners": "PLAINTEXT://127.0.0.1:0", "advertised.listeners": "PLAINTEXT://example:29092"}
    assert build_config(items, addresses).listener == ("127.0.0.1", 0)


def test_serve_is_the_default_command() -> None:
    args = build_parser().parse_args(["--host", "0.0.0.0"])
    assert address_flag_settings(args, {})["listeners"] == "PLAINTEXT://0.0.0.0:9092"


@pytest.mark.parametrize(
    ("flags", "given", "expected"),
    [
        (["--port", "0"], {"listeners": "PLAINTEXT://0.0.0.0:9092,SASL_PLAINTEXT://0.0.0.0:9094"},
         {"listeners": "PLAINTEXT://0.0.0.0:0,SASL_PLAINTEXT://0.0.0.0:9094"}),
        (["--host", "::1"], {"listeners": "CONTROLLER://:9093,INTERNAL://0.0.0.0:9092", "controller.listener.names": "CONTROLLER"},
         {"listeners": "CONTROLLER://:9093,INTERNAL://[::1]:9092"}),
        (["--port", "19092"], {"listeners": "CONTROLLER://:9093", "controller.listener.names": "CONTROLLER"},
         {"listeners": "CONTROLLER://:9093,PLAINTEXT://127.0.0.1:19092"}),
        (["--advertised-host", "example"], {"listeners": "SASL_PLAINTEXT://0.0.0.0:9092,PLAINTEXT://127.0.0.1:9093"},
         {"advertised.listeners": "SASL_PLAINTEXT://example:0"}),
        (["--advertised-port", "32768"], {"listeners": "SSL://10.0.0.2:9093,PLAINTEXT://0.0.0.0:9092"},
         {"advertised.listeners": "SSL://10.0.0.2:32768"}),
        (["--advertised-port", "32768"], {"advertised.listeners": "PLAINTEXT://broker:9092,SSL://broker:9093"},
         {"advertised.listeners": "PLAINTEXT://broker:32768,SSL://broker:9093"}),
    ],
    ids=["port-keeps-sasl", "host-skips-controller", "port-adds-a-broker-listener", "advertised-host-first-listener",
         "advertised-port-bound-host", "advertised-port-keeps-others"],
)
def test_address_flags_change_the_first_listener_only(flags: list[str], given: dict[str, str],
                                                      expected: dict[str, str]) -> None:
    """--host/--port and --advertised-host/--advertised-port are the first broker listener's; the others stay as
    configured (advertised port 0: the port the listener binds)."""
    assert address_flag_settings(build_parser().parse_args(["serve", *flags]), given) == expected


def test_address_flags_log_what_they_change(caplog: pytest.LogCaptureFixture) -> None:
    args = build_parser().parse_args(["serve", "--port", "0"])
    with caplog.at_level(logging.INFO, logger="minibroker"):
        address_flag_settings(args, {})
        assert caplog.messages == [], "the default listeners: nothing configured was changed"
        address_flag_settings(args, {"listeners": "PLAINTEXT://127.0.0.1:0"})
        assert caplog.messages == [], "the value the configuration gave"
        address_flag_settings(args, {"listeners": "PLAINTEXT://0.0.0.0:9092,SSL://0.0.0.0:9093"})
    assert caplog.messages == [
        "--port 0 applies to listener PLAINTEXT: listeners=PLAINTEXT://0.0.0.0:0,SSL://0.0.0.0:9093 "
        "(configured: PLAINTEXT://0.0.0.0:9092,SSL://0.0.0.0:9093)"
    ]


def test_bad_config_exits_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from minibroker.commands.cli import main

    assert main(["serve", "-c", "num.partitions=-3", "--data-dir", str(tmp_path)]) == 2
    assert "num.partitions" in capsys.readouterr().err
