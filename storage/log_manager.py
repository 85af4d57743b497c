"""All partition logs of one data directory, with Kafka's directory-level files and topic metadata.

The data directory is exclusively locked (``.lock``, like Kafka) while a LogManager has it open. Its path is a string
handled with ``os.path`` (see ``checkpoint``: pathlib is not loaded for a start-up); each partition log keeps its own
directory as a ``pathlib.Path``.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .clock import Clock, wall_clock_ms
from .checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    MetaProperties,
    StrPath,
    offset_checkpoint_bytes,
    read_meta_properties,
    read_offset_checkpoint,
    write_atomically,
    write_meta_properties,
)
from .config import LogConfig
from .errors import (
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
from .topic_names import collides, validate_topic_name
from .topic_store import TOPIC_STORE_FILE, StoredTopic, TopicStoreFile, read_topic_store
from .uuid import random_uuid, uuid_to_str

if TYPE_CHECKING:
    from .partition_log import PartitionLog

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"
METADATA_TOPIC = "__cluster_metadata"
_MAX_DIR_NAME = 255


class TopicInfo:
    """A topic as the broker sees it: id, config overrides (by Kafka name), effective config and logs. (A plain class:
    making a dataclass costs start-up as much as importing a module.)"""

    __slots__ = ("name", "topic_id", "overrides", "config", "partitions")

    def __init__(
        self, name: str, topic_id: bytes, overrides: dict[str, str], config: LogConfig, partitions: list[PartitionLog]
    ) -> None:
        self.name = name
        self.topic_id = topic_id
        self.overrides = overrides
        self.config = config
        self.partitions = partitions


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``<topic>-<partition>`` split on the last '-' (topic names may contain '-'), or None."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not partition.isdigit() or validate_topic_name(topic) is not None:
        return None
    return topic, int(partition)


def delete_dir_name(topic: str, partition: int) -> str:
    """Kafka's LogFileUtils.logDeleteDirName: ``<topic>-<p>.<uuid hex>-delete``, topic cut to fit 255 chars."""
    suffix = f"-{partition}.{random_uuid().hex()}{DELETE_DIR_SUFFIX}"
    return topic[: min(len(topic), _MAX_DIR_NAME - len(suffix))] + suffix


def remove_tree(path: StrPath) -> None:
    """Remove a directory and everything in it, as far as possible (shutil is imported only when needed: it is
    not cheap to import at start-up)."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def open_partition(directory: StrPath, config: LogConfig, clock: Clock, **recovered: int) -> PartitionLog:
    """``PartitionLog.open``; the partition code (record batches, segments, producer state) is imported with the first
    partition, so a broker with none yet starts without it."""
    from .partition_log import PartitionLog

    return PartitionLog.open(directory, config, clock=clock, **recovered)


def open_new_partitions(data_dir: str, info: TopicInfo, indexes: range, clock: Clock) -> list[PartitionLog]:
    """Make and open the directories of new partitions: all of them, or (on an OSError such as too many open files
    or a full disk, or any other failure) none, the directories made so far removed again. Touches nothing but
    those new directories."""
    from .leader_epochs import INITIAL_LEADER_EPOCH  # loaded with the first partition, as EpochEntry is needed then

    opened: list[PartitionLog] = []
    created: list[str] = []
    try:
        for partition in indexes:
            directory = os.path.join(data_dir, f"{info.name}-{partition}")
            if not os.path.exists(directory):
                created.append(directory)
            partition_log = open_partition(directory, info.config, clock)
            opened.append(partition_log)
            partition_log.assign_topic_id(info.topic_id)
            # Kafka's makeLeader of a new partition: its first epoch checkpointed (fsynced) here, where the partition
            # is made (an executor thread for CreateTopics), instead of on the event loop at the first append
            partition_log.assign_leader_epoch(INITIAL_LEADER_EPOCH)
    except Exception:
        for partition_log in opened:
            partition_log.close(snapshot=False)
        for directory in created:  # never a directory that was there before
            remove_tree(directory)
        raise
    return opened


class NewTopic:
    """A topic whose name is reserved and metadata persisted, its partition directories still to be made. ``build``
    touches only those new directories, so the broker runs it in an executor thread: creating thousands of
    partitions (and their fsyncs) does not stall the event loop. (A plain class: a NamedTuple compiles its
    constructor when its module loads, a cost every start-up pays.)"""

    __slots__ = ("info", "num_partitions", "data_dir", "clock")

    def __init__(self, info: TopicInfo, num_partitions: int, data_dir: str, clock: Clock) -> None:
        self.info = info
        self.num_partitions = num_partitions
        self.data_dir = data_dir
        self.clock = clock

    def build(self) -> list[PartitionLog]:
        return open_new_partitions(self.data_dir, self.info, range(self.num_partitions), self.clock)


class LogManager:
    """Owns the data directory: lock, meta.properties, checkpoints, topic metadata and every PartitionLog.
    ``cluster_id``: the id a new directory is formatted with (random if None); a formatted one keeps its own."""

    def __init__(
        self,
        data_dir: StrPath,
        default_config: LogConfig,
        *,
        node_id: int = 1,
        cluster_id: str | None = None,
        clock: Clock = wall_clock_ms,
    ) -> None:
        self.data_dir = os.fspath(data_dir)
        self.default_config = default_config
        self.node_id = node_id
        self._new_cluster_id = cluster_id
        self._clock = clock
        self._lock_fd = -1
        self._meta: MetaProperties | None = None
        self._stored: dict[str, StoredTopic] = {}
        self._store_file = TopicStoreFile(self.path_of(TOPIC_STORE_FILE))
        self.topics: dict[str, TopicInfo] = {}
        self.catalog_version = 0  # changes whenever a topic is created, deleted or grows: cached views compare it

    def path_of(self, name: str) -> str:
        """The path of a file or directory of the data directory."""
        return os.path.join(self.data_dir, name)

    # ---- opening ----

    def open(self) -> None:
        """Lock the directory, load its identity and checkpoints, and open every partition log."""
        os.makedirs(self.data_dir, exist_ok=True)
        self._lock()
        try:
            self._meta = self._load_meta()
            self._stored = read_topic_store(self.path_of(TOPIC_STORE_FILE))
            recovery_points = read_offset_checkpoint(self.path_of(RECOVERY_POINT_CHECKPOINT))
            start_offsets = read_offset_checkpoint(self.path_of(LOG_START_OFFSET_CHECKPOINT))
            found = self._scan_partition_dirs()
            for name in sorted(set(found) | set(self._stored)):
                self._open_topic(name, found.get(name, {}), recovery_points, start_offsets)
        except BaseException:
            self._close_logs()
            self._unlock()
            raise
        log.info("Opened %s: cluster %s, %d topic(s)", self.data_dir, self.cluster_id, len(self.topics))

    def _lock(self) -> None:
        path = self.path_of(LOCK_FILE)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LogDirLockedError(
                f"Failed to acquire lock on file {path}. Another broker (process or LogManager) is using {self.data_dir}."
            ) from None
        self._lock_fd = fd

    def _unlock(self) -> None:
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1

    def _load_meta(self) -> MetaProperties:
        path = self.path_of(META_PROPERTIES)
        meta = read_meta_properties(path)
        if meta is None:
            cluster_id = self._new_cluster_id or uuid_to_str(random_uuid())
            meta = MetaProperties(cluster_id=cluster_id, node_id=self.node_id, directory_id=random_uuid())
            write_meta_properties(path, meta)
            return meta
        if meta.node_id != self.node_id:
            raise StorageError(f"{path}: stored node.id {meta.node_id} doesn't match the configured {self.node_id}")
        if self._new_cluster_id is not None and meta.cluster_id != self._new_cluster_id:
            log.warning(
                "%s keeps its cluster id %s: the cluster id %s applies to new data directories only (as kafka-storage "
                "format --ignore-formatted leaves a formatted one)", self.data_dir, meta.cluster_id, self._new_cluster_id,
            )
        return meta

    def _scan_partition_dirs(self) -> dict[str, dict[int, str]]:
        found: dict[str, dict[int, str]] = {}
        with os.scandir(self.data_dir) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
        for entry in entries:
            if not entry.is_dir():
                continue
            path, name = entry.path, entry.name
            if name.endswith(DELETE_DIR_SUFFIX):
                log.info("Removing %s, left over from a topic deletion", path)
                remove_tree(path)
                continue
            if name.endswith((FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)):
                log.info("Ignoring %s", path)
                continue
            parsed = parse_partition_dir(name)
            if parsed is None or parsed[0] == METADATA_TOPIC:
                log.warning("Ignoring %s: not a <topic>-<partition> directory", path)
                continue
            found.setdefault(parsed[0], {})[parsed[1]] = path
        return found

    def _open_topic(
        self,
        name: str,
        dirs: dict[int, str],
        recovery_points: dict[tuple[str, int], int],
        start_offsets: dict[tuple[str, int], int],
    ) -> None:
        stored = self._stored.get(name)
        overrides = dict(stored.overrides) if stored else {}
        unknown = sorted(name for name in overrides if not self.default_config.knows(name))
        if unknown:  # configs of an emulated Kafka release this start does not emulate: Kafka 4 ignores them too
            log.warning("Topic %s: ignoring stored configs this broker does not know: %s", name, ", ".join(unknown))
            overrides = {key: value for key, value in overrides.items() if key not in unknown}
        try:
            config = self.default_config.with_overrides(overrides)
        except InvalidConfigError as exc:
            log.error("Topic %s: ignoring its stored config overrides: %s", name, exc)
            config = self.default_config
        count = max(max(dirs, default=-1) + 1, stored.partitions if stored else 0)
        logs = [
            open_partition(
                dirs.get(p, self.path_of(f"{name}-{p}")), config,
                self._clock,
                recovery_point=recovery_points.get((name, p), 0),
                log_start_offset=start_offsets.get((name, p), 0),
            )
            for p in range(count)
        ]
        topic_id = self._topic_id_for(name, logs, stored)
        for partition_log in logs:
            try:
                partition_log.assign_topic_id(topic_id)
            except InconsistentTopicIdError:
                log.error("%s has a different topic id than topic %s (%s)", partition_log.directory, name,
                          uuid_to_str(topic_id))
        self.topics[name] = TopicInfo(name, topic_id, overrides, config, logs)
        if stored is None or stored.partitions != count or stored.topic_id != topic_id:
            self._stored[name] = StoredTopic(topic_id, count, dict(stored.overrides) if stored else {})  # all it had
            self._save_store()

    @staticmethod
    def _topic_id_for(name: str, logs: list[PartitionLog], stored: StoredTopic | None) -> bytes:
        """The id in partition.metadata wins (it is what clients saw); then the store; else a new one."""
        ids = {partition_log.topic_id for partition_log in logs} - {None}
        if len(ids) > 1:
            log.error("Topic %s: partitions disagree on the topic id", name)
        if logs and logs[0].topic_id is not None:
            return logs[0].topic_id
        if ids:
            return ids.pop()
        return stored.topic_id if stored else random_uuid()

    # ---- queries ----

    @property
    def cluster_id(self) -> str:
        if self._meta is None:
            raise StorageError("LogManager is not open")
        return self._meta.cluster_id

    @property
    def directory_id(self) -> bytes:
        if self._meta is None:
            raise StorageError("LogManager is not open")
        return self._meta.directory_id

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        info = self.topics.get(topic)
        if info is None or not 0 <= partition < len(info.partitions):
            return None
        return info.partitions[partition]

    def logs(self) -> Iterator[tuple[str, int, PartitionLog]]:
        for name, info in self.topics.items():
            for partition, partition_log in enumerate(info.partitions):
                yield name, partition, partition_log

    # ---- topic administration ----

    def create_topic(self, name: str, num_partitions: int, overrides: dict[str, str] | None = None) -> TopicInfo:
        """CreateTopics in one step, on the calling thread (``begin_topic`` and ``NewTopic.build`` split it)."""
        new = self.begin_topic(name, num_partitions, overrides)
        try:
            partitions = new.build()
        except Exception as exc:
            raise self.abandon_topic(new, exc) from exc
        return self.finish_topic(new, partitions)

    def begin_topic(self, name: str, num_partitions: int, overrides: dict[str, str] | None = None) -> NewTopic:
        """Validate, reserve the name and persist the topic's metadata; its partitions are made by ``NewTopic.build``
        (in any thread) and installed by ``finish_topic``, or the reservation is dropped by ``abandon_topic``."""
        reason = validate_topic_name(name)
        if reason is not None:
            raise InvalidTopicError(reason)
        if name in self._stored:  # existing, or being created
            raise TopicExistsError(f"Topic '{name}' already exists.")
        for other in self._stored:
            if collides(name, other):
                raise InvalidTopicError(f"Topic '{name}' collides with existing topic: {other}")
        if num_partitions < 1:
            raise InvalidPartitionsError("Number of partitions was set to an invalid non-positive value.")
        overrides = dict(overrides or {})
        config = self.default_config.with_overrides(overrides)
        topic_id = random_uuid()
        self._stored[name] = StoredTopic(topic_id, num_partitions, overrides)
        self._save_store()
        return NewTopic(TopicInfo(name, topic_id, overrides, config, []), num_partitions, self.data_dir, self._clock)

    def finish_topic(self, new: NewTopic, partitions: list[PartitionLog]) -> TopicInfo:
        info = new.info
        info.partitions = partitions
        self.topics[info.name] = info
        self.catalog_version += 1
        log.debug("Created topic %s (%s) with %d partition(s)", info.name, uuid_to_str(info.topic_id), len(partitions))
        return info

    def abandon_topic(self, new: NewTopic, cause: Exception) -> PartitionCreationError:
        """Forget a topic whose partitions could not be made; returns the error to raise."""
        del self._stored[new.info.name]
        self._save_store()
        return PartitionCreationError(f"could not create topic {new.info.name}: {cause}")

    def add_partitions(self, name: str, new_total: int) -> TopicInfo:
        """CreatePartitions: grow a topic to ``new_total`` partitions."""
        info = self._topic(name)
        current = len(info.partitions)
        if new_total == current:
            raise InvalidPartitionsError(f"Topic already has {current} partition(s).")
        if new_total < current:
            raise InvalidPartitionsError(
                f"The topic {name} currently has {current} partition(s); {new_total} would not be an increase."
            )
        stored = self._stored[name]
        self._stored[name] = StoredTopic(stored.topic_id, new_total, stored.overrides)
        self._save_store()
        try:
            info.partitions += open_new_partitions(self.data_dir, info, range(current, new_total), self._clock)
        except Exception as exc:
            self._stored[name] = stored
            self._save_store()
            raise PartitionCreationError(f"could not add partitions to {name}: {exc}") from exc
        self.catalog_version += 1
        return info

    def delete_topic(self, name: str) -> None:
        """DeleteTopics: forget the topic, rename its directories to ``*-delete``, then remove them."""
        self.delete_topics([name])

    def delete_topics(self, names: list[str]) -> None:
        """Delete several topics, writing the topic store once (a reset deletes every topic)."""
        infos = [self._topic(name) for name in names]
        for name in names:
            del self.topics[name]
            del self._stored[name]
        self.catalog_version += 1
        self._save_store()
        for info in infos:
            for partition, partition_log in enumerate(info.partitions):
                partition_log.close(snapshot=False)
                doomed = self.path_of(delete_dir_name(info.name, partition))
                os.replace(partition_log.directory, doomed)
                remove_tree(doomed)
            log.info("Deleted topic %s", info.name)

    def alter_config(self, name: str, overrides: dict[str, str]) -> TopicInfo:
        """Replace a topic's config overrides (the full set) and apply them to its open logs."""
        info = self._topic(name)
        config = self.default_config.with_overrides(overrides)
        info.overrides = dict(overrides)
        info.config = config
        stored = self._stored[name]
        self._stored[name] = StoredTopic(stored.topic_id, stored.partitions, dict(overrides))
        self._save_store()
        for partition_log in info.partitions:
            partition_log.update_config(config)
        return info

    def set_default_config(self, default_config: LogConfig) -> None:
        """New topic defaults (dynamic broker configs): every open topic's effective config follows them where its
        own overrides do not, at once, as Kafka's DynamicLogConfig reconfigures its logs."""
        self.default_config = default_config
        for info in self.topics.values():
            try:
                config = default_config.with_overrides(info.overrides)
            except InvalidConfigError as exc:
                log.error("Topic %s: ignoring its config overrides: %s", info.name, exc)
                config = default_config
            info.config = config
            for partition_log in info.partitions:
                partition_log.update_config(config)

    def _topic(self, name: str) -> TopicInfo:
        info = self.topics.get(name)
        if info is None:
            raise UnknownTopicError(f"Topic {name} does not exist")
        return info

    def _save_store(self) -> None:
        self._store_file.write(self._stored)

    # ---- checkpoints and shutdown ----

    def checkpoint(self) -> None:
        """Write the recovery-point, log-start-offset and replication-offset (high watermark) checkpoints."""
        for name, data in self.checkpoint_files().items():
            write_atomically(self.path_of(name), data)

    def checkpoint_files(self, *, complete: bool = False) -> dict[str, bytes]:
        """The three checkpoint files' contents. ``complete``: for a copy of the logs taken between two writes, so
        with every record; its recovery points are the log ends, and opening it recovers nothing."""
        recovery_points: dict[tuple[str, int], int] = {}
        start_offsets: dict[tuple[str, int], int] = {}
        high_watermarks: dict[tuple[str, int], int] = {}
        for name, partition, partition_log in self.logs():
            key = (name, partition)
            recovery_points[key] = partition_log.log_end_offset if complete else partition_log.recovery_point
            high_watermarks[key] = partition_log.log_end_offset
            # Like Kafka, only starts that segment base offsets alone would not restore.
            if partition_log.log_start_offset > partition_log.segment_base_offsets[0]:
                start_offsets[key] = partition_log.log_start_offset
        return {
            RECOVERY_POINT_CHECKPOINT: offset_checkpoint_bytes(recovery_points),
            LOG_START_OFFSET_CHECKPOINT: offset_checkpoint_bytes(start_offsets),
            REPLICATION_OFFSET_CHECKPOINT: offset_checkpoint_bytes(high_watermarks),
        }

    def close(self) -> None:
        """Flush every log, checkpoint, close the logs and release the directory lock."""
        if self._lock_fd < 0:
            return
        try:
            for _, _, partition_log in self.logs():
                partition_log.flush_now()
            self.checkpoint()
        finally:
            self._close_logs()
            self._unlock()

    def release(self) -> None:
        """Close every log without flushing or snapshotting and unlock the directory: its files are about to be
        replaced (a snapshot restored), so nothing of the open logs needs to reach them."""
        for _, _, partition_log in self.logs():
            partition_log.close(snapshot=False)
        self.topics = {}
        self.catalog_version += 1
        self._unlock()

    def _close_logs(self) -> None:
        for _, _, partition_log in self.logs():
            partition_log.close()
        self.topics = {}
