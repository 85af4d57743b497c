"""The ``minibroker`` command: help, probe, config errors, the default command, and graceful shutdown on SIGTERM
(in-flight requests answered, everything acknowledged still there after a restart, exit status 0)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Producer, TopicPartition
from minibroker.protocol.frames import decode_response, encode_request
from minibroker.storage.checkpoint import (
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
)

from minibroker.commands.reference import TABLES, config_table
from tests.brokerproc import BrokerProcess, wait_for_ready
from tests.clientutil import (
    FETCH,
    FETCH_VERSION,
    TIMEOUT_S,
    RawConnection,
    check_round_trip,
    confluent_consume,
    confluent_consumer,
    confluent_create_topic,
    confluent_produce,
    counts_by_partition,
    drain,
    make_messages,
    requests_read,
)
from tests.grouputil import wait_until
from tests.test_security import ALICE, ALICE_PASSWORD, metadata_broker, raw_login

MINIBROKER = [sys.executable, "-m", "minibroker"]
PROMPT_EXIT_S = 5.0


def run(*args: str, env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([*MINIBROKER, *args], capture_output=True, text=True, timeout=timeout, env=env)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---- help and small commands ----


def test_help_lists_commands_and_examples() -> None:
    result = run("--help")
    assert result.returncode == 0
    for text in ("serve", "probe", "dump", "config-reference", "examples:", "minibroker COMMAND --help"):
        assert text in result.stdout
    serve_help = run("serve", "--help").stdout
    assert "--data-dir" in serve_help and "SIGTERM" in serve_help and "MINIBROKER_" in serve_help
    assert "--print-data" in run("dump", "--help").stdout
    assert run("--version").stdout.startswith("minibroker ")


def test_config_reference_prints_the_generated_table() -> None:
    result = run("config-reference")
    assert result.returncode == 0
    assert result.stdout == config_table()
    assert "| `num.partitions` | `1` | `MINIBROKER_NUM_PARTITIONS` |" in result.stdout


@pytest.mark.parametrize("name", sorted(TABLES))
def test_each_generated_reference_table_is_printed_by_its_command(name: str) -> None:
    """The docs' reference pages are built from what ``minibroker NAME`` prints."""
    result = run(name)
    assert result.returncode == 0
    assert result.stdout == TABLES[name]()


def test_configuration_error_exits_2_with_the_setting_named(tmp_path: Path) -> None:
    result = run("serve", "--data-dir", str(tmp_path), "-c", "num.partitions=zero")
    assert result.returncode == 2
    assert "num.partitions" in result.stderr and "not an integer" in result.stderr


# ---- probe ----


def test_probe_succeeds_against_a_live_broker(broker: BrokerProcess) -> None:
    result = run("probe", broker.bootstrap)
    assert result.returncode == 0, result.stderr
    assert f"{broker.bootstrap} is up" in result.stdout
    assert run("probe", "-q", broker.bootstrap).stdout == ""


def test_probe_fails_quickly_on_a_closed_port() -> None:
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    result = run("probe", address)
    assert result.returncode == 1
    assert time.monotonic() - started < 3.0
    assert result.stderr.strip() == f"minibroker probe: cannot reach {address}: Connection refused"


def test_probe_times_out_on_a_silent_listener() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        result = run("probe", "--timeout", "0.3", address)
    assert result.returncode == 1
    assert f"{address} did not answer within 0.3s" in result.stderr
    assert time.monotonic() - started < 3.0


def test_probe_defaults_to_the_configured_listener(broker: BrokerProcess) -> None:
    env = {**os.environ, "MINIBROKER_LISTENERS": f"PLAINTEXT://0.0.0.0:{broker.port}"}
    result = run("probe", env=env)
    assert result.returncode == 0, result.stderr
    assert f"127.0.0.1:{broker.port} is up" in result.stdout


# ---- the address flags beside listeners ----

SASL_USERS = f"sasl.users={ALICE}:{ALICE_PASSWORD}"
SASL_PLAIN = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": ALICE,
              "sasl.password": ALICE_PASSWORD}


def listeners_from(source: str, listeners: str, tmp_path: Path) -> dict:
    """BrokerProcess arguments that configure ``listeners`` through ``source``."""
    if source == "-c":
        return {"settings": [f"listeners={listeners}"]}
    if source == "environment":
        return {"env": {"MINIBROKER_LISTENERS": listeners}}
    properties = tmp_path / "server.properties"
    properties.write_text(f"listeners={listeners}\n")
    return {"config_file": properties}


@pytest.mark.parametrize("source", ["-c", "environment", "--config"])
def test_port_flag_moves_the_first_listener_and_keeps_a_sasl_one(source: str, tmp_path: Path, topic_name: str) -> None:
    """--port 0 beside a listeners setting with a second, SASL listener: the first listener takes the flag's port, the
    SASL one still serves (a SASL client produces and consumes on it), and the change is logged."""
    configured = "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:0"
    given = listeners_from(source, configured, tmp_path)
    broker = BrokerProcess(tmp_path / "data", *given.get("settings", []), SASL_USERS, env=given.get("env"),
                           config_file=given.get("config_file"), flags=("--port", "0"))
    try:
        broker.start()
        assert list(broker.listener_ports) == ["PLAINTEXT", "SASL_PLAINTEXT"]
        assert broker.port == broker.listener_ports["PLAINTEXT"]
        assert (f"--port 0 applies to listener PLAINTEXT: listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0 "
                f"(configured: {configured})") in broker.log_text()
        confluent_create_topic(broker.bootstrap, topic_name, partitions=1)
        sasl_bootstrap = f"127.0.0.1:{broker.listener_ports['SASL_PLAINTEXT']}"
        messages = make_messages(20)
        placements = confluent_produce(sasl_bootstrap, topic_name, messages, **SASL_PLAIN)
        consumed = confluent_consume(sasl_bootstrap, topic_name, counts_by_partition(placements), partitions=1,
                                     **SASL_PLAIN)
        check_round_trip(messages, placements, consumed)
    finally:
        broker.stop()


def test_advertised_host_flag_is_the_first_listeners_and_keeps_the_others(tmp_path: Path) -> None:
    """--advertised-host beside advertised.listeners naming only the SASL listener: the first listener advertises the
    flag's host with the port it bound, the SASL listener keeps its configured address."""
    broker = BrokerProcess(
        tmp_path / "data", "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "advertised.listeners=SASL_PLAINTEXT://broker.example:29093", SASL_USERS, flags=("--advertised-host", "localhost"),
    )
    try:
        broker.start()
        with RawConnection(broker.bootstrap) as conn:
            assert metadata_broker(conn) == ("localhost", broker.port)
        with RawConnection(f"127.0.0.1:{broker.listener_ports['SASL_PLAINTEXT']}") as conn:
            assert raw_login(conn, "PLAIN", ALICE, ALICE_PASSWORD)["error_code"] == 0
            assert metadata_broker(conn) == ("broker.example", 29093)
        assert ("--advertised-host localhost applies to listener PLAINTEXT: advertised.listeners="
                "SASL_PLAINTEXT://broker.example:29093,PLAINTEXT://localhost:0 (configured: "
                "SASL_PLAINTEXT://broker.example:29093)") in broker.log_text()
    finally:
        broker.stop()


# ---- serving and stopping ----


def test_default_command_serves_and_sigterm_exits_0(tmp_path: Path) -> None:
    log_path = tmp_path / "broker.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen([*MINIBROKER, "--port", "0", "--data-dir", str(tmp_path / "data")], stdout=log, stderr=subprocess.STDOUT)
    try:
        port = wait_for_ready(log_path, proc)
        assert run("probe", f"127.0.0.1:{port}").returncode == 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(PROMPT_EXIT_S) == 0
        assert "minibroker stopped" in log_path.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()



def test_a_port_in_use_is_reported_as_a_failed_start(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = run("serve", "--port", str(taken.getsockname()[1]), "--data-dir", str(tmp_path / "data"))
    assert result.returncode == 1
    assert "ERROR minibroker: cannot start: [Errno 98]" in result.stderr, result.stderr


def test_a_file_error_while_stopping_is_reported_as_a_failed_stop(fresh_broker: BrokerProcess) -> None:
    """The data directory removed under a running broker (as root too): the checkpoints a stop writes cannot be
    written, and the log says that stopping failed, not starting, with exit status 1."""
    fresh_broker.start()
    shutil.rmtree(fresh_broker.data_dir)
    assert fresh_broker.stop() == 1
    text = fresh_broker.log_text()
    assert f"ERROR minibroker: stopping failed: [Errno 2] No such file or directory: '{fresh_broker.data_dir}/" in text
    assert "cannot start" not in text and "minibroker stopped" not in text


def test_sigterm_answers_a_request_in_flight(fresh_broker: BrokerProcess) -> None:
    """A long-poll Fetch waiting when SIGTERM arrives still gets its (empty) answer before the connection closes."""
    fresh_broker.settings.append("control.port=0")  # to see when the broker has read the Fetch
    fresh_broker.start()
    confluent_create_topic(fresh_broker.bootstrap, "waiting", partitions=1)
    request = {
        "replica_id": -1, "max_wait_ms": 20000, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "topics": [{"topic": "waiting", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}],
    }
    with RawConnection(fresh_broker.bootstrap, timeout=10) as conn:
        conn.send(encode_request(FETCH, FETCH_VERSION, 7, "in-flight", request))
        wait_until(lambda: requests_read(fresh_broker.control, "Fetch") == 1, "the broker to read (and park) the Fetch")
        started = time.monotonic()
        fresh_broker.proc.send_signal(signal.SIGTERM)
        correlation_id, answer = decode_response(FETCH, FETCH_VERSION, conn.recv_frame())
        assert correlation_id == 7
        assert answer["responses"][0]["partitions"][0]["error_code"] == 0
        assert conn.closed_by_peer(within=PROMPT_EXIT_S)
    assert fresh_broker.proc.wait(PROMPT_EXIT_S) == 0
    assert time.monotonic() - started < PROMPT_EXIT_S


def test_sigterm_during_acks_all_produce_loses_nothing_acknowledged(fresh_broker: BrokerProcess) -> None:
    fresh_broker.start()
    topic = "busy"
    confluent_create_topic(fresh_broker.bootstrap, topic, partitions=2)
    acknowledged: dict[tuple[int, int], bytes] = {}
    stop_sending = threading.Event()
    enough = threading.Event()

    def on_delivery(err, msg) -> None:
        if err is None:
            acknowledged[(msg.partition(), msg.offset())] = msg.value()
            if len(acknowledged) >= 300:
                enough.set()

    producer = Producer({
        "bootstrap.servers": fresh_broker.bootstrap, "acks": "all", "linger.ms": 1,
        "message.timeout.ms": 3000, "retries": 0, "reconnect.backoff.max.ms": 100,
    })

    def send() -> None:
        i = 0
        while not stop_sending.is_set():
            try:
                producer.produce(topic, value=f"value {i}".encode(), on_delivery=on_delivery)
                i += 1
            except BufferError:
                pass
            producer.poll(0.001)

    sender = threading.Thread(target=send, name="sender")
    sender.start()
    try:
        assert enough.wait(TIMEOUT_S), "the producer never got going"
        started = time.monotonic()
        fresh_broker.proc.send_signal(signal.SIGTERM)
        assert fresh_broker.proc.wait(PROMPT_EXIT_S) == 0
        assert time.monotonic() - started < PROMPT_EXIT_S
    finally:
        stop_sending.set()
        sender.join()
        producer.purge()
        producer.flush(1)
        producer.close()

    recovery_points = read_offset_checkpoint(fresh_broker.data_dir / RECOVERY_POINT_CHECKPOINT)
    log_ends = read_offset_checkpoint(fresh_broker.data_dir / REPLICATION_OFFSET_CHECKPOINT)
    assert {(topic, p): log_ends[(topic, p)] for p in (0, 1)} == {(topic, p): recovery_points[(topic, p)] for p in (0, 1)}, (
        "a graceful stop fsyncs every log: recovery points must reach the log end offsets"
    )

    fresh_broker.start()
    consumer = confluent_consumer(fresh_broker.bootstrap)
    try:
        counts = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT_S)[1] for p in (0, 1)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in counts])
        stored = {(c.partition, c.offset): c.message.value for c in drain(consumer, counts)}
    finally:
        consumer.close()
    missing = [key for key, value in acknowledged.items() if stored.get(key) != value]
    assert not missing, f"{len(missing)} acknowledged messages lost or changed, e.g. {missing[:5]}"
