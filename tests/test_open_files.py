"""Running out of file descriptors: a topic too big for the broker's RLIMIT_NOFILE is refused whole with
KAFKA_STORAGE_ERROR (no half-made topic in Metadata, on disk or after a restart), and the broker goes on serving.
Index files are opened only while written, so a partition costs one descriptor, not three."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_S

OPEN_FILES = 400


def create(admin: AdminClient, name: str, partitions: int) -> Exception | None:
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(TIMEOUT_S)
    except Exception as exc:  # the client's KafkaException carrying the broker's error
        return exc
    return None


def partition_dirs(data_dir: Path, topic: str) -> list[Path]:
    return sorted(data_dir.glob(f"{topic}-*"))


def test_topic_too_big_for_the_descriptor_limit_is_refused_whole(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    broker = BrokerProcess(data_dir, max_open_files=OPEN_FILES)
    try:
        broker.start()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        assert create(admin, "fits", OPEN_FILES // 2) is None  # one descriptor per partition: 200 fit in 400
        failure = create(admin, "too-big", OPEN_FILES)
        assert failure is not None and "KAFKA_STORAGE_ERROR" in str(failure)
        assert "too-big" not in admin.list_topics(timeout=TIMEOUT_S).topics
        assert partition_dirs(data_dir, "too-big") == []
        grown = admin.create_partitions([NewPartitions("fits", OPEN_FILES)])["fits"]
        try:
            grown.result(TIMEOUT_S)
        except Exception as exc:
            assert "KAFKA_STORAGE_ERROR" in str(exc)
        else:
            raise AssertionError("growing past the descriptor limit succeeded")
        metadata = admin.list_topics(timeout=TIMEOUT_S).topics
        assert len(metadata["fits"].partitions) == OPEN_FILES // 2
        assert len(partition_dirs(data_dir, "fits")) == OPEN_FILES // 2
        assert create(admin, "small", 4) is None  # the broker keeps working
        broker.restart()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        topics = admin.list_topics(timeout=TIMEOUT_S).topics
        assert "too-big" not in topics and len(topics["fits"].partitions) == OPEN_FILES // 2
        assert len(topics["small"].partitions) == 4
    finally:
        broker.stop()
    assert "too-big" in broker.log_text() and "Too many open files" in broker.log_text()
