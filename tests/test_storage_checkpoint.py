"""Checkpoint files, meta.properties, partition.metadata and Uuid strings, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from minibroker.storage.checkpoint import (
    MetaProperties,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
    write_meta_properties,
    write_offset_checkpoint,
    write_partition_metadata,
)
from minibroker.storage.errors import CorruptFileError
from minibroker.storage.uuid import random_uuid, uuid_from_str, uuid_to_str


def test_offset_checkpoint_is_byte_exact(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_offset_checkpoint(path, {("orders", 1): 999, ("orders", 0): 1234})
    assert path.read_bytes() == b"0\n2\norders 0 1234\norders 1 999\n"
    assert read_offset_checkpoint(path) == {("orders", 0): 1234, ("orders", 1): 999}
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()


def test_empty_and_missing_checkpoints(tmp_path: Path) -> None:
    path = tmp_path / "log-start-offset-checkpoint"
    assert read_offset_checkpoint(path) == {}
    write_offset_checkpoint(path, {})
    assert path.read_bytes() == b"0\n0\n"
    assert read_offset_checkpoint(path) == {}


@pytest.mark.parametrize("content", [b"1\n0\n", b"0\n2\nt 0 1\n", b"0\n1\nt zero 1\n", b"0\n1\nt 0 1 2\n", b""])
def test_malformed_checkpoint_is_an_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "cp"
    path.write_bytes(content)
    with pytest.raises(CorruptFileError):
        read_offset_checkpoint(path)


def test_meta_properties(tmp_path: Path) -> None:
    path = tmp_path / "meta.properties"
    directory_id = uuid_from_str("J8aAPcfLQt2bqs1JT_rMgQ")
    write_meta_properties(path, MetaProperties("MkU3OEVBNTcwNTJENDM2Qk", 1, directory_id))
    lines = path.read_text().split("\n")
    assert lines[0] == "#" and lines[1].startswith("#") and lines[-1] == ""
    assert sorted(lines[2:-1]) == sorted([
        "node.id=1", "directory.id=J8aAPcfLQt2bqs1JT_rMgQ", "version=1", "cluster.id=MkU3OEVBNTcwNTJENDM2Qk",
    ])
    assert read_meta_properties(path) == MetaProperties("MkU3OEVBNTcwNTJENDM2Qk", 1, directory_id)
    assert read_meta_properties(tmp_path / "missing") is None


def test_meta_properties_written_by_kafka_parses(tmp_path: Path) -> None:
    path = tmp_path / "meta.properties"
    path.write_text("#\n#Tue Jun 17 12:00:00 UTC 2026\nnode.id=3\ndirectory.id=J8aAPcfLQt2bqs1JT_rMgQ\n"
                    "version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n")
    meta = read_meta_properties(path)
    assert meta is not None and meta.node_id == 3 and meta.cluster_id == "MkU3OEVBNTcwNTJENDM2Qk"


def test_partition_metadata_is_byte_exact(tmp_path: Path) -> None:
    topic_id = uuid_from_str("5PhkXjN5QxqONjp5qF2K0A")
    write_partition_metadata(tmp_path, topic_id)
    assert (tmp_path / "partition.metadata").read_bytes() == b"version: 0\ntopic_id: 5PhkXjN5QxqONjp5qF2K0A"
    assert read_partition_metadata(tmp_path) == topic_id
    assert read_partition_metadata(tmp_path / "nowhere") is None


def test_uuid_strings() -> None:
    for _ in range(200):
        value = random_uuid()
        text = uuid_to_str(value)
        assert len(text) == 22 and not text.startswith("-") and "=" not in text
        assert uuid_from_str(text) == value
    assert uuid_to_str(bytes(16)) == "AAAAAAAAAAAAAAAAAAAAAA"
    for bad in ("short", "5PhkXjN5QxqONjp5qF2K0A==", "5PhkXjN5QxqONjp5qF2K0!"):
        with pytest.raises(ValueError):
            uuid_from_str(bad)
