"""Broker configuration: Kafka names from files, environment and flags, with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker.cli import build_parser, flag_settings
from minibroker.config import BrokerConfig, ConfigError, build_config, env_settings, load_config, parse_properties


def test_defaults_are_a_local_test_broker() -> None:
    config = BrokerConfig()
    assert config.listener == ("127.0.0.1", 9092)
    assert config.data_dir == Path("./minibroker-data")
    assert config.log_config().segment_bytes == 1 << 30


def test_properties_file_environment_and_flags_in_that_order(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("# comment\nnum.partitions=2\nlog.retention.ms = 1000\nmessage.max.bytes: 5000\n")
    config = load_config(props, {"MINIBROKER_NUM_PARTITIONS": "4"}, {"log.retention.ms": "2000"})
    assert (config.num_partitions, config.log_retention_ms, config.message_max_bytes) == (4, 2000, 5000)
    assert config.log_config().retention_ms == 2000


@pytest.mark.parametrize(
    "settings, fragment",
    [
        ({"no.such.setting": "1"}, "no.such.setting"),
        ({"num.partitions": "zero"}, "num.partitions"),
        ({"num.partitions": "0"}, "minimum"),
        ({"auto.create.topics.enable": "maybe"}, "auto.create.topics.enable"),
        ({"listeners": "SSL://0.0.0.0:9093"}, "SSL"),
        ({"listeners": "nowhere"}, "HOST:PORT"),
        ({"log.message.timestamp.type": "Tomorrow"}, "timestamp"),
    ],
)
def test_invalid_settings_are_named(settings: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        build_config(settings)


def test_unknown_environment_setting_is_an_error() -> None:
    with pytest.raises(ConfigError, match="MINIBROKER_NOPE"):
        env_settings({"MINIBROKER_NOPE": "1"})
    assert env_settings({"MINIBROKER_LOG_DIRS": "/d", "HOME": "/root"}) == {"log.dirs": "/d"}


def test_properties_syntax_error_names_the_line() -> None:
    with pytest.raises(ConfigError, match="line 2"):
        parse_properties("a=1\njunk\n")


def test_cli_flags_become_kafka_settings() -> None:
    args = build_parser().parse_args(["serve", "--port", "0", "--data-dir", "/x", "-c", "num.partitions=3",
                                      "--advertised-host", "example", "--advertised-port", "29092"])
    items = flag_settings(args)
    assert items == {
        "num.partitions": "3",
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": "/x",
        "advertised.listeners": "PLAINTEXT://example:29092",
    }
    assert build_config(items).listener == ("127.0.0.1", 0)


def test_serve_is_the_default_command() -> None:
    args = build_parser().parse_args(["--host", "0.0.0.0"])
    assert flag_settings(args)["listeners"] == "PLAINTEXT://0.0.0.0:9092"


def test_bad_config_exits_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from minibroker.cli import main

    assert main(["serve", "-c", "num.partitions=-3", "--data-dir", str(tmp_path)]) == 2
    assert "num.partitions" in capsys.readouterr().err
