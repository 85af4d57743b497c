"""LogManager: directory lock, identity, checkpoints and topic administration across restarts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from minibroker.protocol.records import build_batch, validate_batches
from minibroker.storage.checkpoint import read_meta_properties, read_partition_metadata
from minibroker.storage.config import LogConfig
from minibroker.storage.errors import (
    InconsistentTopicIdError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidTopicError,
    LogDirLockedError,
    PartitionCreationError,
    StorageError,
    TopicExistsError,
    UnknownTopicError,
)
from minibroker.storage.log_manager import LogManager, delete_dir_name, parse_partition_dir
from minibroker.storage.partition_log import PartitionLog
from minibroker.storage.topic_names import validate_topic_name
from minibroker.storage.uuid import uuid_to_str


def produce(manager: LogManager, topic: str, partition: int, count: int) -> None:
    log = manager.get_log(topic, partition)
    assert log is not None
    for _ in range(count):
        buf = bytearray(build_batch([(b"k", b"value", [], 1000)]))
        log.append(buf, validate_batches(buf))


def opened(data_dir: Path, **kwargs: object) -> LogManager:
    manager = LogManager(data_dir, LogConfig(), **kwargs)
    manager.open()
    return manager


def test_lock_prevents_a_second_manager(tmp_path: Path) -> None:
    first = opened(tmp_path)
    with pytest.raises(LogDirLockedError, match="lock"):
        opened(tmp_path)
    first.close()
    second = opened(tmp_path)
    assert (tmp_path / ".lock").exists()
    second.close()


def test_meta_properties_and_cluster_id_persist(tmp_path: Path) -> None:
    manager = opened(tmp_path, node_id=3)
    cluster_id = manager.cluster_id
    assert len(cluster_id) == 22
    meta = read_meta_properties(tmp_path / "meta.properties")
    assert meta is not None and meta.node_id == 3 and meta.cluster_id == cluster_id
    keys = {line.split("=")[0] for line in (tmp_path / "meta.properties").read_text().splitlines()
            if not line.startswith("#")}
    assert keys == {"version", "cluster.id", "node.id", "directory.id"}
    manager.close()
    again = opened(tmp_path, node_id=3)
    assert again.cluster_id == cluster_id and again.directory_id == meta.directory_id
    again.close()
    with pytest.raises(StorageError, match="node.id"):
        opened(tmp_path, node_id=4)
    opened(tmp_path, node_id=3).close()  # the failed open released the lock


def test_given_cluster_id_is_used(tmp_path: Path) -> None:
    manager = opened(tmp_path, cluster_id="MkU3OEVBNTcwNTJENDM2Qk")
    assert manager.cluster_id == "MkU3OEVBNTcwNTJENDM2Qk"
    manager.close()


def test_topics_survive_restart(tmp_path: Path) -> None:
    manager = opened(tmp_path)
    info = manager.create_topic("my.topic-with-dashes", 3, {"retention.ms": "1000", "cleanup.policy": "compact"})
    assert info.config.retention_ms == 1000 and info.config.compact
    assert [p.topic_id for p in info.partitions] == [info.topic_id] * 3
    for p in range(3):
        metadata = (tmp_path / f"my.topic-with-dashes-{p}" / "partition.metadata").read_bytes()
        assert metadata == b"version: 0\ntopic_id: " + uuid_to_str(info.topic_id).encode()
    produce(manager, "my.topic-with-dashes", 1, 5)
    manager.create_topic("other", 1)
    manager.close()

    manager = opened(tmp_path)
    assert sorted(manager.topics) == ["my.topic-with-dashes", "other"]
    again = manager.topics["my.topic-with-dashes"]
    assert again.topic_id == info.topic_id
    assert again.overrides == {"retention.ms": "1000", "cleanup.policy": "compact"}
    assert again.config.retention_ms == 1000
    assert [p.log_end_offset for p in again.partitions] == [0, 5, 0]
    assert manager.topics["other"].topic_id != info.topic_id
    manager.close()


def test_checkpoint_files(tmp_path: Path) -> None:
    manager = opened(tmp_path)
    manager.create_topic("orders", 2)
    produce(manager, "orders", 0, 4)
    produce(manager, "orders", 1, 3)
    manager.get_log("orders", 1).delete_records_before(2)
    manager.close()
    assert (tmp_path / "recovery-point-offset-checkpoint").read_bytes() == b"0\n2\norders 0 4\norders 1 3\n"
    assert (tmp_path / "replication-offset-checkpoint").read_bytes() == b"0\n2\norders 0 4\norders 1 3\n"
    assert (tmp_path / "log-start-offset-checkpoint").read_bytes() == b"0\n1\norders 1 2\n"
    manager = opened(tmp_path)
    log = manager.get_log("orders", 1)
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (2, 3, 3)
    manager.close()


def test_a_topic_that_fails_half_way_is_not_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """All or nothing: a failure at the third partition closes and removes the two made before, forgets the topic
    (also after a restart), and leaves a directory that was there before alone."""
    manager = opened(tmp_path)
    stray = tmp_path / "half-2"
    stray.mkdir()
    (stray / "keep.me").write_text("not ours")
    real_assign = PartitionLog.assign_topic_id

    def failing_assign(log: PartitionLog, topic_id: bytes) -> None:
        if log.directory.name == "half-2":
            raise InconsistentTopicIdError(f"{log.directory} already belongs to another topic id")
        real_assign(log, topic_id)

    monkeypatch.setattr(PartitionLog, "assign_topic_id", failing_assign)
    with pytest.raises(PartitionCreationError, match="could not create topic half"):
        manager.create_topic("half", 4)
    monkeypatch.undo()
    assert "half" not in manager.topics
    assert sorted(p.name for p in tmp_path.glob("half-*")) == ["half-2"] and (stray / "keep.me").exists()
    manager.create_topic("whole", 2)
    manager.close()
    shutil.rmtree(stray)
    again = opened(tmp_path)
    assert sorted(again.topics) == ["whole"]
    again.close()


def test_create_topic_validation(tmp_path: Path) -> None:
    manager = opened(tmp_path)
    manager.create_topic("a.b", 1)
    with pytest.raises(TopicExistsError):
        manager.create_topic("a.b", 1)
    with pytest.raises(InvalidTopicError, match="collides"):
        manager.create_topic("a_b", 1)
    with pytest.raises(InvalidTopicError):
        manager.create_topic("bad name", 1)
    with pytest.raises(InvalidPartitionsError):
        manager.create_topic("zero", 0)
    with pytest.raises(InvalidConfigError):
        manager.create_topic("cfg", 1, {"retention.ms": "-5"})
    assert sorted(manager.topics) == ["a.b"]
    assert not list(tmp_path.glob("cfg-*")) and not list(tmp_path.glob("zero-*"))
    manager.close()


def test_add_partitions(tmp_path: Path) -> None:
    manager = opened(tmp_path)
    info = manager.create_topic("t", 2)
    with pytest.raises(InvalidPartitionsError):
        manager.add_partitions("t", 2)
    with pytest.raises(InvalidPartitionsError):
        manager.add_partitions("t", 1)
    with pytest.raises(UnknownTopicError):
        manager.add_partitions("nope", 3)
    manager.add_partitions("t", 4)
    assert len(info.partitions) == 4 and info.partitions[3].topic_id == info.topic_id
    manager.close()
    manager = opened(tmp_path)
    assert len(manager.topics["t"].partitions) == 4
    assert read_partition_metadata(tmp_path / "t-3") == info.topic_id
    manager.close()


def test_delete_topic(tmp_path: Path) -> None:
    manager = opened(tmp_path)
    manager.create_topic("gone", 2)
    manager.create_topic("kept", 1)
    produce(manager, "gone", 0, 2)
    manager.delete_topic("gone")
    with pytest.raises(UnknownTopicError):
        manager.delete_topic("gone")
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["kept-0"]
    (tmp_path / "kept-0.0123456789abcdef0123456789abcdef-delete").mkdir()  # left by a crash
    (tmp_path / "kept-0-future").mkdir()
    manager.close()
    manager = opened(tmp_path)
    assert sorted(manager.topics) == ["kept"]
    assert not (tmp_path / "kept-0.0123456789abcdef0123456789abcdef-delete").exists()
    assert (tmp_path / "kept-0-future").exists()
    manager.create_topic("gone", 1)  # the name is free again, with a new id
    manager.close()


def test_alter_config_applies_to_open_logs_and_persists(tmp_path: Path) -> None:
    manager = opened(tmp_path)
    manager.create_topic("t", 1, {"retention.ms": "1000"})
    manager.alter_config("t", {"message.timestamp.type": "LogAppendTime"})
    assert manager.get_log("t", 0).config.log_append_time
    assert manager.get_log("t", 0).config.retention_ms == LogConfig().retention_ms
    with pytest.raises(InvalidConfigError):
        manager.alter_config("t", {"segment.bytes": "1"})
    manager.close()
    manager = opened(tmp_path)
    assert manager.topics["t"].overrides == {"message.timestamp.type": "LogAppendTime"}
    manager.close()


def test_partition_dirs_without_store_are_adopted(tmp_path: Path) -> None:
    manager = opened(tmp_path)
    manager.create_topic("t", 1)
    topic_id = manager.topics["t"].topic_id
    manager.close()
    (tmp_path / "topic-configs.json").unlink()
    manager = opened(tmp_path)
    assert manager.topics["t"].topic_id == topic_id and manager.topics["t"].overrides == {}
    manager.close()


def test_topic_created_before_a_crash_is_completed(tmp_path: Path) -> None:
    manager = opened(tmp_path)
    info = manager.create_topic("t", 3)
    manager.close()
    for p in (1, 2):
        for child in (tmp_path / f"t-{p}").iterdir():
            child.unlink()
        (tmp_path / f"t-{p}").rmdir()
    manager = opened(tmp_path)
    assert [p.topic_id for p in manager.topics["t"].partitions] == [info.topic_id] * 3
    assert (tmp_path / "t-2" / "partition.metadata").exists()
    manager.close()


def test_topic_name_rules() -> None:
    assert validate_topic_name("orders") is None
    assert validate_topic_name("a" * 249) is None
    assert validate_topic_name("__consumer_offsets") is None
    for bad in ("", ".", "..", "a" * 250, "with space", "slash/", "ümlaut"):
        assert validate_topic_name(bad)


def test_dir_names() -> None:
    assert parse_partition_dir("my-topic-12") == ("my-topic", 12)
    assert parse_partition_dir("a.b-0") == ("a.b", 0)
    assert parse_partition_dir("noint-x") is None
    assert parse_partition_dir("nodash") is None
    name = delete_dir_name("x" * 249, 7)
    assert len(name) == 255 and name.endswith("-delete") and "-7." in name
    assert delete_dir_name("t", 0).startswith("t-0.") and len(delete_dir_name("t", 0)) == len("t-0.") + 32 + 7
