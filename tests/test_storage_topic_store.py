"""The topic store file: what it is given is what a restart reads back, through replaced and removed entries (each
entry's line is kept between writes while the entry object stays the same)."""

from __future__ import annotations

from pathlib import Path

from minibroker.storage.topic_store import StoredTopic, TopicStoreFile, read_topic_store


def test_every_write_reads_back_as_written(tmp_path: Path) -> None:
    store = TopicStoreFile(tmp_path / "topic-configs.json")
    topics = {f"topic-{i}": StoredTopic(bytes([i]) * 16, i + 1, {"retention.ms": str(i)} if i % 2 else {})
              for i in range(5)}
    topics['odd "name"\\'] = StoredTopic(bytes(16), 1, {})
    store.write(topics)
    assert read_topic_store(store.path) == topics

    grown, altered = topics["topic-1"], topics["topic-2"]
    topics["topic-1"] = StoredTopic(grown.topic_id, 9, grown.overrides)  # CreatePartitions
    topics["topic-2"] = StoredTopic(altered.topic_id, altered.partitions, {"cleanup.policy": "compact"})  # AlterConfigs
    del topics["topic-3"]
    store.write(topics)
    assert read_topic_store(store.path) == topics

    topics["topic-3"] = StoredTopic(b"\x07" * 16, 2, {})  # the name again, a new topic
    store.write(topics)
    assert read_topic_store(store.path) == topics

    store.write({})
    assert read_topic_store(store.path) == {}
