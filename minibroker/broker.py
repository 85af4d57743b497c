"""The broker's state and lifecycle: logs, topics, waiting fetches and background upkeep.

Everything here runs on one asyncio event loop and is touched by no other thread; the only
work sent to an executor is fsync (``PartitionLog.prepare_flush`` / ``FlushTicket.run``) and the
reading and writing of log compaction (``storage.cleaner``).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import ssl
import time
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Mapping

from minibroker.cluster.clock import VirtualClock, every, wall_clock_ms
from minibroker.cluster.features import FILE_NAME as FEATURES_FILE
from minibroker.cluster.features import FeatureLevels
from minibroker.cluster.features import SUPPORTED as SUPPORTED_FEATURES
from minibroker.cluster.placements import NO_LEADER, PartitionPlacement, Placements
from minibroker.cluster.producer_ids import FILE_NAME as PRODUCER_ID_FILE
from minibroker.cluster.producer_ids import ProducerIdAllocator
from minibroker.cluster.replicas import replication_problem
from minibroker.config.dynamic import BrokerConfigFileError, BrokerConfigs
from minibroker.config.dynamic import FILE_NAME as BROKER_CONFIGS_FILE
from minibroker.config.listeners import (
    Listener,
    ListenerSpec,
    advertised_addresses,
    controller_listener_names,
    default_advertised,
    is_loopback,
    parse_listeners,
)
from minibroker.config.settings import BrokerConfig
from minibroker.groups.group_configs import GroupConfigs
from minibroker.handlers import HANDLERS
from minibroker.handlers.registry import Handler
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import EncodedAnswer
from minibroker.protocol.key_partitions import partition_for
from minibroker.server.codec_cache import install as install_codec_cache
from minibroker.server.connection import KafkaConnection, close_keeping_ports, start_server
from minibroker.server.tls import server_context
from minibroker.storage.errors import InvalidConfigError, InvalidTopicError, TopicExistsError
from minibroker.storage.log_manager import LogManager, NewTopic, TopicInfo, validate_topic_name
from minibroker.storage.topic_names import (
    CONSUMER_OFFSETS_TOPIC,
    INTERNAL_TOPICS,
    SHARE_GROUP_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
)

if TYPE_CHECKING:
    from minibroker.cluster.fetch_sessions import FetchSessionCache
    from minibroker.storage.partition_log import PartitionLog
    from minibroker.storage.snapshots import SnapshotInfo, SnapshotStore
    from minibroker.acls.authorizer import Authorizer
    from minibroker.acls.ssl_mapping import PrincipalMapper
    from minibroker.control.faults import Fault, Faults
    from minibroker.groups.service import GroupService
    from minibroker.quotas.enforce import Quotas
    from minibroker.server.repeated_logs import RepeatedLogs
    from minibroker.sasl.credentials import CredentialStore
    from minibroker.sasl.session import SaslAuthority
    from minibroker.share.manager import SharePartitionManager
    from minibroker.share.state_store import ShareStateStore
    from minibroker.groups.zookeeper_offsets import ZooKeeperOffsets
    from minibroker.storage.cleaner import LogCleaner
    from minibroker.registry.server import SchemaRegistry
    from minibroker.transactions.service import TransactionService
    from minibroker.control.transcript import Transcript

log = logging.getLogger(__name__)

CHECKPOINT_INTERVAL_S = 30.0
FLUSH_CHECK_INTERVAL_S = 1.0
SHUTDOWN_GRACE_S = 5.0  # longest wait for in-flight requests and unsent answers when stopping
IDLE_SWEEP_MAX_INTERVAL_S = 5.0
FREE_PORT_RANGE_ATTEMPTS = 20

PartitionKey = tuple[str, int]


def _end_wait(waiter: asyncio.Future) -> None:
    """A Fetch's wait for data timed out (None: woken by no partition)."""
    if not waiter.done():
        waiter.set_result(None)


QUOTAS_FILE = "client-quotas.json"  # minibroker.quotas.store.FILE_NAME, named here to know without importing it


class Broker:
    def __init__(self, config: BrokerConfig, clock: Callable[[], int] | None = None) -> None:
        install_codec_cache()  # compiled codecs kept between processes, like bytecode
        self.static_config = config  # as given at start-up; ``config`` is it with the dynamic broker configs
        self.broker_configs = self._read_broker_configs(config)
        config = self.broker_configs.effective(config.node_id)  # the first node's
        self.config = config
        if clock is None and config.clock.strip().lower() not in ("system", "virtual"):
            from minibroker.config.settings import ConfigError

            raise ConfigError(f"clock {config.clock!r}: system or virtual")
        self.clock = clock or (VirtualClock() if config.clock.strip().lower() == "virtual" else wall_clock_ms)
        # What ApiVersions advertises and the dispatcher serves: the handler table itself, or with kafka.version a
        # copy capped at that release's ranges, made once here so requests pay nothing for it.
        self.apis: dict[int, Handler] = HANDLERS
        # The internal-topic value versions that release wrote (value schema name -> newest version), none without.
        self.record_caps: Mapping[str, int] = {}
        if config.kafka_version.strip():
            from minibroker.handlers.emulation import emulated_apis  # only when a release is emulated
            from minibroker.config.record_versions import written_versions

            self.apis = emulated_apis(HANDLERS, config.kafka_version)
            self.record_caps = written_versions(config.kafka_version)
        self.logs = LogManager(
            config.data_dir, config.log_config(), node_id=config.node_id, cluster_id=config.cluster_id or None,
            clock=self.clock,
        )
        self.cleaner: LogCleaner | None = None  # created on its first run
        self.connections: set[KafkaConnection] = set()
        self.host, self.port = config.listener
        self.advertised_host, self.advertised_port = self.host, self.port  # those of the first listener
        self.listeners: list[Listener] = []
        self.node_ids = list(range(config.node_id, config.node_id + config.nodes))  # node k: node.id + k - 1
        self.live_nodes = set(self.node_ids)
        self.racks: dict[int, str] = {}  # node -> its broker.rack
        if config.broker_rack:
            from minibroker.cluster.racks import node_racks  # only with racks

            self.racks.update(node_racks(config.broker_rack, self.node_ids))
        self.placements = Placements(config.data_dir, self.node_ids, racks=self.racks)
        self._tls: ssl.SSLContext | None = None
        self.ssl_principal_mapper: PrincipalMapper | None = None  # ssl.principal.mapping.rules, with SSL listeners
        self.sasl: SaslAuthority | None = None
        self._scram_credentials: CredentialStore | None = None  # made with the SASL listeners, or on first use
        self.scram_changes = asyncio.Lock()  # one AlterUserScramCredentials at a time writes the credential file
        # With authorizer.class.name: the ACLs and the checks; None (the default) means every request is allowed, and
        # handlers test only this attribute, so authorization off costs nothing more.
        self.authorizer: Authorizer | None = None
        self.acl_changes: asyncio.Lock | None = None  # one CreateAcls/DeleteAcls at a time writes the ACL file
        self.producer_ids: ProducerIdAllocator | None = None
        self.features: FeatureLevels | None = None  # read from the data directory at start-up
        self._servers: list[asyncio.base_events.Server] = []
        self._held_ports: dict[int, list[socket.socket]] = {}  # listener index -> its port's keepers, node stopped
        self._tasks: list[asyncio.Task] = []
        self._waiters: dict[PartitionKey, list[asyncio.Future]] = {}
        self.fetches_woken = False  # an append woke a waiting Fetch: the request that appended answers after it
        self._creating: dict[str, asyncio.Task[tuple[ErrorCode, str | None]]] = {}  # topics whose partitions are being made
        self.marker_listeners: list[Callable[[str, int, int, bool], None]] = []
        self.leader_listeners: list[Callable[[str], None]] = []  # told the topics whose partitions' leaders changed
        self._transactions: TransactionService | None = None
        self._groups: GroupService | None = None
        self._share_partitions: SharePartitionManager | None = None
        self._share_state: ShareStateStore | None = None
        self._control: asyncio.base_events.Server | None = None
        self.control_address: tuple[str, int] | None = None  # (host, port) of the control listener, when on
        self.schema_registry: SchemaRegistry | None = None  # schema.registry.port
        self.faults: Faults | None = None  # injected faults, from the first one on
        self.transcript: Transcript | None = None  # with transcript.enabled or transcript.file
        # producer ids never go back; ACLs are not the topics' state
        self._snapshots: SnapshotStore | None = None  # made on first use (the control API)
        self.group_configs = GroupConfigs.of(config, config.data_dir)
        # The client quotas, read at start-up when the data directory has some, else made by the first request that
        # names them; None till then, so a broker without quotas never imports minibroker.quotas.
        self.quota_state: Quotas | None = self._read_quotas() if os.path.exists(self.logs.path_of(QUOTAS_FILE)) else None
        self.zookeeper_offsets: ZooKeeperOffsets | None = None  # OffsetCommit v0 of a ZooKeeper-mode release, on first use
        self.request_counts: Counter[int] = Counter()  # requests served by API key, for the inspector's rates
        self.api_versions_answers: dict[int, EncodedAnswer] = {}  # by version: the same answer for every request
        self._fetch_sessions: FetchSessionCache | None = None  # made by the first Fetch
        self._repeated_logs: RepeatedLogs | None = None  # made by the first line a client may repeat
        self._by_id: tuple[tuple[int, int], dict[bytes, TopicInfo]] = ((-1, 0), {})  # (catalog version and size, index)
        self.started_at = time.monotonic()

    @staticmethod
    def _read_broker_configs(config: BrokerConfig) -> BrokerConfigs:
        """The dynamic broker configs kept in the data directory (an unreadable file is a ConfigError)."""
        from minibroker.config.settings import ConfigError

        try:
            return BrokerConfigs(config, os.path.join(config.data_dir, BROKER_CONFIGS_FILE))
        except BrokerConfigFileError as exc:
            raise ConfigError(str(exc)) from None

    def _read_quotas(self) -> Quotas:
        """The client quotas kept in the data directory, with the quota window settings (an unreadable file is a
        ConfigError)."""
        from minibroker.config.settings import ConfigError
        from minibroker.quotas.enforce import Quotas
        from minibroker.quotas.store import QuotaStore

        path = self.logs.path_of(QUOTAS_FILE)
        given = dict(self.static_config.given)
        try:
            store = QuotaStore(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path}: malformed client quotas ({exc})") from None
        return Quotas(store, int(given.get("quota.window.num", 11)),
                      int(given.get("quota.window.size.seconds", 1)))

    @property
    def repeated_logs(self) -> RepeatedLogs:
        """The lines a misbehaving client causes on every request, each logged once per client and interval of the
        broker's clock with a count of its repeats (``minibroker.server.repeated_logs``)."""
        if self._repeated_logs is None:
            from minibroker.server.repeated_logs import RepeatedLogs

            self._repeated_logs = RepeatedLogs(self.clock)
        return self._repeated_logs

    @property
    def quotas(self) -> Quotas:
        """The client quotas (AlterClientQuotas, DescribeClientQuotas), read on first use."""
        if self.quota_state is None:
            self.quota_state = self._read_quotas()
        return self.quota_state

    def reconfigure(self) -> None:
        """Apply the dynamic broker configs at once (Kafka's DynamicBrokerConfig.updateCurrentConfig): the process's
        settings become the first node's effective ones, the defaults of topics without their own value follow, and
        so do the broker settings group configs read. Settings read when a request is served apply from the next one;
        those read at start-up only (listeners, task intervals) at the next start."""
        self.config = self.broker_configs.effective(self.node_ids[0])
        self.logs.set_default_config(self.config.log_config())
        self.group_configs.settings = self.config.kafka_items()

    @property
    def fetch_sessions(self) -> FetchSessionCache:
        """The incremental fetch sessions (KIP-227), made by the first Fetch."""
        if self._fetch_sessions is None:
            from minibroker.cluster.fetch_sessions import FetchSessionCache

            self._fetch_sessions = FetchSessionCache(self.config.max_incremental_fetch_session_cache_slots, self.clock)
        return self._fetch_sessions

    @property
    def snapshots(self) -> SnapshotStore:
        """The named snapshots of the data directory, read on first use."""
        if self._snapshots is None:
            from minibroker.acls.store import FILE_NAME as ACL_FILE
            from minibroker.sasl.credential_file import FILE_NAME as SCRAM_FILE
            from minibroker.storage.snapshots import SnapshotStore

            self._snapshots = SnapshotStore(keep=(PRODUCER_ID_FILE, ACL_FILE, FEATURES_FILE, SCRAM_FILE))
        return self._snapshots

    @property
    def scram_credentials(self) -> CredentialStore:
        """The SCRAM credentials: ``sasl.users``' under those AlterUserScramCredentials set or deleted, read from the
        data directory with the SASL listeners or on first use (an unreadable file is a ConfigError)."""
        if self._scram_credentials is None:
            from minibroker.config.settings import ConfigError
            from minibroker.sasl import credential_file
            from minibroker.sasl.credentials import CredentialStore
            from minibroker.sasl.settings import parse_users

            try:
                overrides = credential_file.load(self.config.data_dir)
            except credential_file.CredentialFileError as exc:
                raise ConfigError(str(exc)) from None
            self._scram_credentials = CredentialStore(parse_users(self.config.sasl_users), overrides=overrides)
        return self._scram_credentials

    def _feature_levels(self) -> FeatureLevels:
        """minibroker's features, or with kafka.version those of that release, finalized as a new cluster of it was."""
        release = self.config.kafka_version
        if not release.strip():
            return FeatureLevels(self.config.data_dir, SUPPORTED_FEATURES, self.config.node_id)
        from minibroker.config.releases import emulated_features, unfinalized_features

        return FeatureLevels(
            self.config.data_dir, emulated_features(release), self.config.node_id, unfinalized_features(release),
        )

    # lifecycle

    async def start(self) -> None:
        if self.config.transcript_enabled or self.config.transcript_file:
            from minibroker.control.transcript import Transcript  # only when asked for

            self.transcript = Transcript(
                self.config.transcript_max_entries, self.config.transcript_file or None,
            )
        self.producer_ids = ProducerIdAllocator(self.config.data_dir)
        self.features = self._feature_levels()
        await self._load_data("start-up")
        from minibroker.acls.settings import authorizer_enabled

        if authorizer_enabled(self.config):
            self._start_authorizer()
        await self._start_listeners()
        if self.config.control_port >= 0:
            await self._start_control()
        if self.config.schema_registry_port >= 0:
            await self.start_schema_registry(self.config.schema_registry_port)
        first = self.listeners[0]
        self.port = first.port
        self.advertised_host, self.advertised_port = first.advertised
        loop = asyncio.get_running_loop()
        idle_s = self.config.connections_max_idle_ms / 1000
        self._tasks = [
            loop.create_task(every(
                wall_clock_ms, int(min(idle_s / 4, IDLE_SWEEP_MAX_INTERVAL_S) * 1000), self.close_idle_connections,
            )),
            loop.create_task(every(self.clock, self.config.log_retention_check_interval_ms, self.enforce_retention)),
            loop.create_task(every(wall_clock_ms, int(CHECKPOINT_INTERVAL_S * 1000), self.logs.checkpoint)),
            loop.create_task(every(wall_clock_ms, int(FLUSH_CHECK_INTERVAL_S * 1000), self.flush_due)),
            loop.create_task(every(
                self.clock, self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                self.abort_timed_out_transactions,
            )),
            loop.create_task(every(self.clock, self.config.producer_id_expiration_check_interval_ms, self.expire_producers)),
            loop.create_task(every(
                self.clock, self.config.transaction_remove_expired_transaction_cleanup_interval_ms,
                self.expire_transactional_ids,
            )),
        ]
        if self.config.log_cleaner_enable:
            self._tasks.append(loop.create_task(every(wall_clock_ms, self.config.log_cleaner_backoff_ms, self.clean_logs)))
        self._log_setting_notes()
        if self.apis is not HANDLERS:
            self._log_emulation()
        control = "" if self.control_address is None else ", control http://%s:%d" % self.control_address
        log.info(
            "minibroker ready on %s:%d (advertised %s:%d)%s%s, cluster id %s, data dir %s",
            self.host, self.port, self.advertised_host, self.advertised_port, self._nodes_text(), control,
            self.logs.cluster_id, self.config.data_dir,
        )

    async def _load_data(self, reason: str, epoch_floors: dict[tuple[str, int], int] | None = None) -> None:
        """Open the data directory's topics and serve them: leaders elected, their epochs started, transactions a
        crash left half-completed finished, groups loading (at start-up, and when a snapshot is restored).
        ``epoch_floors``: leader epochs the partitions must reach, so clients never see an epoch go back."""
        self.logs.open()
        self.placements.load()
        if epoch_floors:
            self.placements.raise_epochs(epoch_floors)
        self._elect(reason)  # partitions a stopped node left offline get their leaders back
        for info in self.logs.topics.values():  # each leader's epoch is in its cache, as Kafka's makeLeader at start-up
            for partition in range(len(info.partitions)):
                self._start_epoch(info.name, partition)
        if TRANSACTION_STATE_TOPIC in self.logs.topics:  # transactions a crash left half-completed finish now
            await self.transactions.ownership.loaded()
            await self.transactions.flush()
        if CONSUMER_OFFSETS_TOPIC in self.logs.topics:  # groups answer COORDINATOR_LOAD_IN_PROGRESS until loaded
            self._start_groups()
        if SHARE_GROUP_STATE_TOPIC in self.logs.topics:  # share partitions' state, as Kafka loads its share coordinator
            await self.share_state.start()

    def _start_authorizer(self) -> None:
        """Load the stored ACLs (an unreadable file stops start-up: serving without them would allow too much)."""
        from minibroker.acls import store
        from minibroker.acls.authorizer import Authorizer
        from minibroker.acls.settings import parse_super_users
        from minibroker.config.settings import ConfigError

        try:
            acls = store.load(self.config.data_dir)
        except store.AclFileError as exc:
            raise ConfigError(str(exc)) from None
        super_users = parse_super_users(self.config.super_users)
        self.authorizer = Authorizer(super_users, self.config.allow_everyone_if_no_acl_found, acls)
        self.acl_changes = asyncio.Lock()
        log.info(
            "authorizer %s: %d ACL(s), super.users=%s, allow.everyone.if.no.acl.found=%s",
            self.config.authorizer_class_name.strip(), len(acls), ";".join(sorted(super_users)),
            str(self.config.allow_everyone_if_no_acl_found).lower(),
        )

    def _nodes_text(self) -> str:
        """For the readiness line of a broker serving several nodes: every node's first listener."""
        if len(self.node_ids) == 1:
            return ""
        first = {}
        for listener in self.listeners:
            first.setdefault(listener.node_id, listener)
        return ", nodes " + " ".join(f"{node}={first[node].spec.host}:{first[node].port}" for node in self.node_ids)

    async def _start_control(self) -> None:
        """The control listener (HTTP/JSON): loopback unless a token guards it."""
        from minibroker.config.settings import ConfigError
        from minibroker.control.api import start_control_server  # only when asked for

        host = self.config.control_host
        if not self.config.control_token and not is_loopback(host):
            for server in self._servers:
                server.close()
            raise ConfigError(f"control.host {host} is not a loopback address: set control.token to guard it")
        self._control = await start_control_server(self)
        self.control_address = self._control.sockets[0].getsockname()[:2]
        log.info("control listener on http://%s:%d%s", *self.control_address,
                 " (bearer token required)" if self.config.control_token else "")

    async def start_schema_registry(self, port: int) -> None:
        """The schema registry's listener (loopback unless schema.registry.token guards it), its state read from
        _schemas; at start-up with schema.registry.port, or later for a test that asks for it (a no-op when it is
        running)."""
        if self.schema_registry is not None:
            return
        from minibroker.config.settings import ConfigError
        from minibroker.registry.server import SchemaRegistry  # only when asked for

        host = self.config.schema_registry_host
        if not self.config.schema_registry_token and not is_loopback(host):
            for server in self._servers:
                server.close()
            raise ConfigError(f"schema.registry.host {host} is not a loopback address: set schema.registry.token")
        self.schema_registry = SchemaRegistry(self, self.config.schema_registry_token)
        await self.schema_registry.start(host, port)
        log.info("schema registry on http://%s:%d", *self.schema_registry.address)

    @property
    def schema_registry_url(self) -> str | None:
        registry = self.schema_registry
        return None if registry is None or registry.address is None else "http://%s:%d" % registry.address

    async def reset(self) -> int:
        """Forget every topic, group and transaction, and clear faults and the transcript, so one broker serves
        independent tests (the control API's POST /v1/reset); returns how many topics were deleted. Clients
        connected across it meet a broker as if new: their topics, groups and transactions are unknown. The internal
        topics are emptied rather than deleted: their hundred partitions would cost the next test their creation."""
        await self._drop_served_state()
        names = [name for name in self.logs.topics if name not in INTERNAL_TOPICS]
        self.logs.delete_topics(names)
        for name in names:
            self.placements.forget(name)
        for name in INTERNAL_TOPICS:
            info = self.logs.topics.get(name)
            for partition, partition_log in enumerate(info.partitions if info is not None else []):
                if not partition_log.empty():
                    partition_log.truncate_fully()
                    self._start_epoch(name, partition)
        if TRANSACTION_STATE_TOPIC in self.logs.topics:  # coordinators again, serving the emptied partitions
            await self.transactions.ownership.loaded()
        if CONSUMER_OFFSETS_TOPIC in self.logs.topics:
            self._start_groups()
        self.group_configs.clear()
        if self.broker_configs.clear():
            self.reconfigure()
        if self.quota_state is not None and self.quota_state.store.clear():
            self.quota_state.changed()
        if self.faults is not None:
            self.faults.clear()
        if self.transcript is not None:
            self.transcript.clear()
        if self.schema_registry is not None:  # its topic went with the others
            self.schema_registry.clear()
        log.info("reset: %d topic(s) deleted, groups and transactions forgotten", len(names))
        return len(names)

    async def snapshot(self, name: str) -> SnapshotInfo:
        """Save every topic, group and transaction as snapshot ``name`` (POST /v1/snapshots), for ``restore``.
        Faults, the transcript and the clock are the test's, not the broker's state: they are not saved."""
        await self._creations_landed()
        info = self.snapshots.save(name, self.config.data_dir, self.logs.checkpoint_files(complete=True))
        log.info("snapshot %s: %d file(s), %d bytes", name, info.files, info.bytes)
        return info

    async def restore(self, name: str) -> SnapshotInfo:
        """Put every topic, group and transaction back as snapshot ``name`` saved them (POST
        /v1/snapshots/NAME/restore). Connected clients meet it as after a restart of the broker: group members
        rejoin, and leader epochs only grow."""
        self.snapshots.get(name)  # SnapshotError before anything changes
        floors = {(topic, partition): self.placements.of(topic, partition).leader_epoch + 1
                  for topic, info in self.logs.topics.items() for partition in range(len(info.partitions))}
        await self._drop_served_state()
        self.cleaner = None  # the next run reads the restored cleaner checkpoint
        self.logs.release()
        info = self.snapshots.load(name, self.config.data_dir)
        self.group_configs.reload()
        self.broker_configs.reload()
        self.reconfigure()
        if self.quota_state is not None or os.path.exists(self.logs.path_of(QUOTAS_FILE)):
            self.quotas.store.reload()
            self.quotas.changed()
        await self._load_data("restore", floors)
        if self.schema_registry is not None:
            self.schema_registry.load()
        log.info("restored snapshot %s: %d topic(s)", name, len(self.logs.topics))
        return info

    async def _creations_landed(self) -> None:
        """Wait (up to SHUTDOWN_GRACE_S) for topics whose partitions are being made in an executor thread."""
        if self._creating:
            await asyncio.wait(list(self._creating.values()), timeout=SHUTDOWN_GRACE_S)

    async def _drop_served_state(self) -> None:
        """Before the topics go or are replaced: creations finish, the coordinators resign and stop, long polls
        answer now, and fetch sessions are forgotten (a client's next incremental fetch starts a new one)."""
        await self._creations_landed()
        if self._fetch_sessions is not None:
            self._fetch_sessions.clear()
        if self._share_partitions is not None:
            self._share_partitions.clear()
            self._share_partitions = None
        for service in (self._groups, self._transactions):
            if service is not None:
                service.ownership.resign_all()
                service.stop()
        if self._share_state is not None:
            self._share_state.stop()
        self._groups = self._transactions = self._share_state = None
        for waiters in self._waiters.values():
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)
        self._waiters.clear()

    def add_fault(self, spec: dict[str, Any]) -> Fault:
        """Inject a fault (the control API's POST /v1/faults); FaultSpecError for one that cannot be made."""
        if self.faults is None:
            from minibroker.control.faults import Faults  # only for a test that injects faults

            self.faults = Faults()
        return self.faults.add(spec, self.node_ids, self.apis)

    def node_listener(self, node_id: int, name: str) -> Listener | None:
        """The listener called ``name`` of node ``node_id``: where clients reach that node on that listener."""
        return next((lis for lis in self.listeners if lis.node_id == node_id and lis.name == name), None)

    def _log_setting_notes(self) -> None:
        """Once at start-up: names Kafka does not know (a warning each), then the Kafka settings and listeners
        that mean nothing to one process."""
        if self.static_config.unknown:
            from minibroker.config.values import unknown_setting_warnings

            for warning in unknown_setting_warnings(self.static_config):
                log.warning("%s", warning)
        ignored = self.static_config.ignored_settings()
        controllers = sorted(controller_listener_names(self.static_config))
        if controllers:
            ignored.append(f"listener {', '.join(controllers)} (controller.listener.names: not served)")
        if ignored:
            log.info("accepted, no effect here: %s", ", ".join(ignored))

    def _log_emulation(self) -> None:
        """Once at start-up: which release is emulated and which of minibroker's APIs it did not serve."""
        from minibroker.config.releases import resolve
        from minibroker.handlers.emulation import emulation_notes
        from minibroker.protocol.messages import KAFKA_APIS

        left_out = [KAFKA_APIS[key][0] for key in sorted(HANDLERS) if key not in self.apis]
        older, lacking = emulation_notes(HANDLERS, self.config.kafka_version)
        log.info(
            "emulating Apache Kafka %s: ApiVersions advertises %d APIs at the versions that release served%s%s%s",
            resolve(self.config.kafka_version), len(self.apis),
            f" (versions Kafka 4 removed, served as the release did: {', '.join(older)})" if older else "",
            f"; not served: {', '.join(left_out)}" if left_out else "",
            f"; versions of the release not served: {', '.join(lacking)}" if lacking else "",
        )

    async def _start_listeners(self) -> None:
        """Bind every listener (TLS context and SASL credentials first, so a bad file stops start-up), logging
        one line per listener before the readiness line; on failure nothing stays bound."""
        specs = parse_listeners(self.config)
        advertised = advertised_addresses(self.config)
        tls = self._tls = server_context(self.config) if any(spec.protocol.uses_tls for spec in specs) else None
        if tls is not None:
            from minibroker.acls.ssl_mapping import parse_rules  # TLS only

            self.ssl_principal_mapper = parse_rules(self.config.ssl_principal_mapping_rules)
        if any(spec.protocol.uses_sasl for spec in specs):
            from minibroker.sasl.session import SaslAuthority  # SASL only
            from minibroker.sasl.settings import parse_mechanisms

            self.sasl = SaslAuthority(
                tuple(parse_mechanisms(self.config.sasl_enabled_mechanisms)), self.scram_credentials,
                self.config.connections_max_reauth_ms, self.clock,
            )
        # With several nodes and port 0, node k takes node 1's free port + k - 1, so a restart finds every node's port
        # again; a port in that range already taken means another try with other free ports.
        several_free = len(self.node_ids) > 1 and any(spec.port == 0 for spec in specs)
        attempts = FREE_PORT_RANGE_ATTEMPTS if several_free else 1
        for attempt in range(1, attempts + 1):
            try:
                await self._bind_nodes(specs, advertised, tls)
                return
            except BaseException as exc:
                for server in self._servers:
                    server.close()
                self._servers, self.listeners = [], []
                if attempt == attempts or not isinstance(exc, OSError) or exc.errno != errno.EADDRINUSE:
                    raise
                log.info("a port of the nodes' range is taken (%s): binding other free ports", exc)

    async def _bind_nodes(
        self, specs: list[ListenerSpec], advertised: dict[str, tuple[str, int]], tls: ssl.SSLContext | None,
    ) -> None:
        first_ports: dict[str, int] = {}
        for index, node_id in enumerate(self.node_ids):
            for spec in specs:
                listener = await self._bind(spec, index, node_id, first_ports.get(spec.name, 0), advertised.get(spec.name), tls)
                first_ports.setdefault(spec.name, listener.port)

    async def _bind(
        self, spec: ListenerSpec, index: int, node_id: int, first_port: int, given: tuple[str, int] | None,
        tls: ssl.SSLContext | None,
    ) -> Listener:
        """Bind listener ``spec`` of the node at ``index``: on the listener's port + index (port 0: node 1's bound port
        ``first_port`` + index, or a free port for node 1 itself)."""
        base = spec.port or first_port
        port = base + index if base else 0
        listener = Listener(spec, port, default_advertised(spec.host, port), node_id)
        server = await start_server(self, listener, tls if spec.protocol.uses_tls else None)
        self._servers.append(server)
        listener.port = server.sockets[0].getsockname()[1]
        if given is None:
            listener.advertised = default_advertised(spec.host, listener.port)
        else:  # an advertised port given for node 1 is node k's + k - 1, as its bound port
            listener.advertised = (given[0], given[1] + index if given[1] else listener.port)
        self.listeners.append(listener)
        log.info(
            "listener %s (%s) on %s:%d, advertised %s:%d%s", spec.name, spec.protocol.value, spec.host,
            listener.port, *listener.advertised, f", node {node_id}" if len(self.node_ids) > 1 else "",
        )
        return listener

    def advertise(self, node_id: int, name: str, host: str, port: int) -> None:
        """Give clients another address for a node's listener from now on: a container started on a random port
        learns its mapped port only once it runs. Metadata and FindCoordinator answer with it, through node restarts,
        until the process stops. LookupError for a listener the node does not have."""
        listener = next((lis for lis in self.listeners if lis.node_id == node_id and lis.name == name), None)
        if listener is None:
            names = sorted({lis.name for lis in self.listeners})
            raise LookupError(f"node {node_id} has no listener {name!r}; the listeners are {', '.join(names)}")
        listener.advertised = (host, port)
        if listener is self.listeners[0]:
            self.advertised_host, self.advertised_port = host, port
        log.info("listener %s of node %d now advertised as %s:%d", name, node_id, host, port)

    # nodes of a cluster in one process

    async def stop_node(self, node_id: int, clean: bool = True) -> None:
        """Take a node down: its listeners close and its connections drop, and the partitions it led get a new leader
        among their live replicas (none: offline). A clean (controlled) shutdown moves the leaders first, so its
        clients are told where to go; a crash drops the connections first."""
        if node_id not in self.live_nodes:
            raise ValueError(f"node {node_id} is not running")
        if len(self.live_nodes) == 1:
            raise ValueError("the last running node cannot be stopped")
        self.live_nodes.discard(node_id)
        if clean:
            self._elect(f"node {node_id} shut down")
        for index, listener in enumerate(self.listeners):
            if listener.node_id == node_id:
                self._held_ports[index] = close_keeping_ports(self._servers[index])
        for connection in [c for c in self.connections if c.listener.node_id == node_id]:
            connection.close()
        if not clean:
            self._elect(f"node {node_id} crashed")
        for index, listener in enumerate(self.listeners):
            if listener.node_id == node_id:
                await self._servers[index].wait_closed()
        log.info("node %d stopped (%s)", node_id, "controlled shutdown" if clean else "crash")

    async def add_node(self) -> int:
        """A new node joins the cluster (id: the highest + 1) on the next ports of each listener (a free port where
        one is taken and the listener was given port 0); it leads nothing until topics created from now on are placed
        on it, as a Kafka broker that joins. It lasts until the process stops: a restart serves the configured
        ``nodes``."""
        node_id = max(self.node_ids) + 1
        index = len(self.node_ids)
        advertised = advertised_addresses(self.config)
        first = self.node_ids[0]
        bound = len(self.listeners)
        try:
            for spec in parse_listeners(self.config):
                first_port = next(lis.port for lis in self.listeners if lis.node_id == first and lis.name == spec.name)
                tls = self._tls if spec.protocol.uses_tls else None
                try:
                    await self._bind(spec, index, node_id, first_port, advertised.get(spec.name), tls)
                except OSError as exc:
                    if spec.port or exc.errno != errno.EADDRINUSE:
                        raise
                    log.info("port %d is taken: node %d's %s listener takes a free port", first_port + index, node_id,
                             spec.name)
                    await self._bind(spec, index, node_id, 0, advertised.get(spec.name), tls)
        except BaseException:
            for server in self._servers[bound:]:
                server.close()
            del self._servers[bound:], self.listeners[bound:]
            raise
        self.node_ids.append(node_id)
        if self.config.broker_rack:
            from minibroker.cluster.racks import rack_of

            rack = rack_of(self.config.broker_rack, index, node_id)
            if rack is not None:
                self.racks[node_id] = rack
        self.live_nodes.add(node_id)
        log.info("node %d added", node_id)
        return node_id

    async def start_node(self, node_id: int) -> None:
        """Bring a stopped node back on its ports; partitions left without a leader that it replicates get it back."""
        if node_id not in self.node_ids or node_id in self.live_nodes:
            raise ValueError(f"node {node_id} is not a stopped node of this broker")
        for index, listener in enumerate(self.listeners):
            if listener.node_id == node_id:
                tls = self._tls if listener.protocol.uses_tls else None
                self._servers[index] = await start_server(self, listener, tls)
                for keeper in self._held_ports.pop(index, ()):
                    keeper.close()
        self.live_nodes.add(node_id)
        self._elect(f"node {node_id} started")
        log.info("node %d started", node_id)

    def move_leader(self, topic: str, partition: int, node_id: int) -> int:
        """Make a live replica the partition's leader; returns the new leader epoch."""
        if node_id not in self.live_nodes:
            raise ValueError(f"node {node_id} is not running")
        placed = self.placements.move_leader(topic, partition, node_id)
        log.info("%s-%d: leader %d, epoch %d (moved)", topic, partition, placed.leader, placed.leader_epoch)
        self._start_epoch(topic, partition)
        self.leaders_changed(topic)
        return placed.leader_epoch

    def reassign(self, topic: str, partition: int, target: tuple[int, ...] | None) -> PartitionPlacement:
        """AlterPartitionReassignments for one partition (``target`` None cancels the one in progress: LookupError
        if none is); a new leader or leader epoch starts as a leadership move does."""
        info = self.logs.topics[topic]
        before = self.placements.of(topic, partition)
        placed = self.placements.reassign(topic, partition, len(info.partitions), target, self.live_nodes)
        if placed != before:
            log.info("%s-%d: replicas %s%s, leader %d, epoch %d (reassigned)", topic, partition, list(placed.replicas),
                     f" (adding {list(placed.adding)}, removing {list(placed.removing)})" if placed.reassigning else "",
                     placed.leader, placed.leader_epoch)
        if placed.leader_epoch != before.leader_epoch:
            self._start_epoch(topic, partition)
            self.leaders_changed(topic)
        return placed

    def move_coordinator(self, node_id: int, *, group: str | None = None, transactional_id: str | None = None) -> int:
        """Move the coordinator of a group or a transactional id to ``node_id``: the leader of its internal partition
        moves, and the coordinators follow it (the old one resigns, the new one loads). Returns the new epoch."""
        topic, partition = self.coordinator_partition(group=group, transactional_id=transactional_id)
        return self.move_leader(topic, partition, node_id)

    def coordinator_partition(self, *, group: str | None = None, transactional_id: str | None = None) -> tuple[str, int]:
        """The internal partition whose leader coordinates ``group`` or ``transactional_id``; LookupError while the
        internal topic does not exist."""
        if (group is None) == (transactional_id is None):
            raise ValueError("name a group or a transactional id")
        topic, key = (CONSUMER_OFFSETS_TOPIC, group) if group is not None else (TRANSACTION_STATE_TOPIC, transactional_id)
        info = self.logs.topics.get(topic)
        if info is None:
            raise LookupError(f"{topic} does not exist yet: nothing is coordinated before the first "
                              f"{'group' if group is not None else 'transaction'} is")
        assert key is not None
        return topic, partition_for(key, len(info.partitions))

    def _elect(self, reason: str) -> None:
        changed = self.placements.elect(self.live_nodes)
        for topic, partition in changed:
            placed = self.placements.of(topic, partition)
            log.info("%s-%d: leader %d, epoch %d (%s)", topic, partition, placed.leader, placed.leader_epoch, reason)
            self._start_epoch(topic, partition)
        for topic in dict.fromkeys(topic for topic, _ in changed):
            self.leaders_changed(topic)

    def _start_epoch(self, topic: str, partition: int) -> None:
        """A new leader's epoch starts at the log end, in the leader-epoch cache (Kafka's Partition.makeLeader)."""
        placed = self.placements.of(topic, partition)
        partition_log = self.partition(topic, partition)
        if placed.leader != NO_LEADER and partition_log is not None:
            partition_log.assign_leader_epoch(placed.leader_epoch)

    def leaders_changed(self, topic: str) -> None:
        """A topic was made or grew, or leaders of its partitions moved: the coordinators follow their partitions."""
        for listener in self.leader_listeners:
            listener(topic)

    def close_idle_connections(self) -> None:
        """Kafka's connections.max.idle.ms: close connections with no bytes read or written for that long."""
        limit = asyncio.get_running_loop().time() - self.config.connections_max_idle_ms / 1000
        for connection in [c for c in self.connections if c.last_active < limit]:
            log.info("closing %s: idle for more than %d ms", connection.peer, self.config.connections_max_idle_ms)
            connection.close()

    async def stop(self) -> None:
        if self._control is not None:
            self._control.close()
        if self.schema_registry is not None:
            await self.schema_registry.stop()
        if self.faults is not None:
            self.faults.clear()  # stalled requests are answered, so they do not hold up the shutdown
        for server in self._servers:
            server.close()
        if self.cleaner is not None:
            await self.cleaner.stop()
        for task in self._tasks:
            task.cancel()
        if self._groups is not None:
            self._groups.stop()
        if self._transactions is not None:
            self._transactions.stop()
        if self._share_state is not None:
            self._share_state.stop()
        await self._finish_requests()
        if self._repeated_logs is not None:
            self._repeated_logs.flush()
        await self._creations_landed()  # partitions being made in a thread land before the logs close
        for server in self._servers:
            await server.wait_closed()
        self._servers = []
        for keeper in (keeper for keepers in self._held_ports.values() for keeper in keepers):
            keeper.close()
        self._held_ports.clear()
        self.logs.close()
        if self.transcript is not None:
            self.transcript.close()
        log.info("minibroker stopped")

    async def _finish_requests(self) -> None:
        """Graceful shutdown: answer the requests being served (long-poll fetches are woken), start no new
        ones, then close each connection once its answers are written, all within SHUTDOWN_GRACE_S."""
        deadline = asyncio.get_running_loop().time() + SHUTDOWN_GRACE_S
        busy = [worker for connection in list(self.connections) if (worker := connection.stop_accepting()) is not None]
        for waiters in self._waiters.values():
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)
        self._waiters.clear()
        if busy:
            await asyncio.wait(busy, timeout=SHUTDOWN_GRACE_S)
        closed = [connection.closed for connection in self.connections]
        for connection in list(self.connections):
            connection.close()
        if closed:
            await asyncio.wait(closed, timeout=max(deadline - asyncio.get_running_loop().time(), 0.1))

    # coordinators: created on first use, so a broker that never sees a group or a transaction neither imports
    # their modules nor creates their internal topics

    @property
    def transactions(self) -> TransactionService:
        """The transaction coordinators; on creation each starts loading the ``__transaction_state`` partitions its node
        leads (half-completed transactions are finished as they load, their markers to be flushed by the caller)."""
        if self._transactions is None:
            from minibroker.transactions.service import TransactionService

            self._transactions = TransactionService(self)
            self._transactions.start()
        return self._transactions

    @property
    def groups(self) -> GroupService:
        """The group coordinator; loading of ``__consumer_offsets`` starts when it is created."""
        return self._groups or self._start_groups()

    def _start_groups(self) -> GroupService:
        from minibroker.groups.service import GroupService

        self._groups = GroupService(self)
        self._groups.start()
        return self._groups

    @property
    def share_partitions(self) -> SharePartitionManager:
        """The share partitions this node leads (KIP-932), kept in ``__share_group_state``; made on first use."""
        if self._share_partitions is None:
            from minibroker.share.manager import SharePartitionManager

            self._share_partitions = SharePartitionManager(self, self.share_state)
        return self._share_partitions

    @property
    def loaded_share_partitions(self) -> SharePartitionManager | None:
        return self._share_partitions

    @property
    def share_state(self) -> ShareStateStore:
        """The share partitions' persisted state (``__share_group_state``); its user awaits ``start()`` first, which
        creates the topic when the first share partition is initialized, as in Kafka."""
        if self._share_state is None:
            from minibroker.share.state_store import ShareStateStore

            self._share_state = ShareStateStore(self)
        return self._share_state

    @property
    def loaded_groups(self) -> GroupService | None:
        """The group coordinator if something has used it already (None: there are no groups to update)."""
        return self._groups

    @property
    def loaded_transactions(self) -> TransactionService | None:
        """The transaction coordinators if something has used them already (None: there are no transactional ids)."""
        return self._transactions

    async def abort_timed_out_transactions(self) -> None:
        if self._transactions is not None:
            await self._transactions.abort_timed_out()

    async def expire_transactional_ids(self) -> None:
        if self._transactions is not None:
            await self._transactions.expire_transactional_ids()

    # topics and partitions

    def topic(self, name: str) -> TopicInfo | None:
        return self.logs.topics.get(name)

    def topic_by_id(self, topic_id: bytes) -> TopicInfo | None:
        """The topic of a KIP-516 id. A deleted topic's id finds nothing, even once a topic of its name is made again
        (that one has a new id). The index is rebuilt when the catalog changes."""
        topics = self.logs.topics
        version, by_id = self._by_id
        if version != (self.logs.catalog_version, len(topics)):
            by_id = {info.topic_id: info for info in topics.values()}
            self._by_id = ((self.logs.catalog_version, len(topics)), by_id)
        return by_id.get(topic_id)

    def topic_name(self, topic_id: bytes) -> str | None:
        info = self.topic_by_id(topic_id)
        return None if info is None else info.name

    def partition(self, topic: str, index: int) -> PartitionLog | None:
        info = self.logs.topics.get(topic)
        if info is None or not 0 <= index < len(info.partitions):
            return None
        return info.partitions[index]

    async def create_topic(
        self, name: str, num_partitions: int, overrides: dict[str, str], validate_only: bool = False,
        replication_factor: int = 1, replicas: list[tuple[int, ...]] | None = None,
    ) -> tuple[ErrorCode, str | None]:
        """Create a topic the way CreateTopics, auto-creation and the coordinators need: (error code, message). The
        partition directories are made in an executor thread; until they are, the name is taken but the topic is
        not visible (``topic_created`` waits for it). Its replicas are ``replicas``, else placed on the nodes."""
        problem = validate_topic_name(name)
        if problem is not None:
            return ErrorCode.INVALID_TOPIC_EXCEPTION, problem
        if name in self.logs.topics or name in self._creating:
            return ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
        if num_partitions < 1:
            return ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."
        problem = None if replicas is not None else replication_problem(replication_factor, len(self.live_nodes))
        if problem is not None:
            return ErrorCode.INVALID_REPLICATION_FACTOR, problem
        try:
            self.logs.default_config.with_overrides(overrides)
        except InvalidConfigError as exc:
            return ErrorCode.INVALID_CONFIG, str(exc)
        if validate_only:
            return ErrorCode.NONE, None
        try:
            new = self.logs.begin_topic(name, num_partitions, overrides)
        except InvalidTopicError as exc:
            return ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)
        except TopicExistsError as exc:
            return ErrorCode.TOPIC_ALREADY_EXISTS, str(exc)
        placed = replicas or self.placements.assign(num_partitions, replication_factor, self.live_nodes)
        # A task of its own: a requester that goes away (its connection closed) must not leave the name taken.
        self._creating[name] = creation = asyncio.get_running_loop().create_task(self._make_partitions(new, placed))
        return await asyncio.shield(creation)

    async def _make_partitions(self, new: NewTopic, replicas: list[tuple[int, ...]]) -> tuple[ErrorCode, str | None]:
        name = new.info.name
        try:
            partitions = await asyncio.get_running_loop().run_in_executor(None, new.build)
        except Exception as exc:
            error = self.logs.abandon_topic(new, exc)
            if not isinstance(exc, OSError):
                log.exception("%s", error)
                return ErrorCode.UNKNOWN_SERVER_ERROR, str(error)
            log.error("%s", error)
            return ErrorCode.KAFKA_STORAGE_ERROR, str(error)
        finally:
            del self._creating[name]
        self.placements.put(name, replicas)
        self.logs.finish_topic(new, partitions)
        self.leaders_changed(name)
        log.info("created topic %s with %d partitions%s", name, new.num_partitions,
                 f" {new.info.overrides}" if new.info.overrides else "")
        return ErrorCode.NONE, None

    async def delete_topics(self, names: list[str]) -> None:
        """DeleteTopics (and the inspector's delete): the topics go, and as in Kafka groups forget their offsets and
        the share coordinator the state of their share partitions."""
        topic_ids = {info.topic_id for name in names if (info := self.logs.topics.get(name)) is not None}
        for name in names:
            self.logs.delete_topic(name)
            self.placements.forget(name)
            log.info("deleted topic %s", name)
        groups = self.loaded_groups  # None: no group has used the broker, so no offsets to forget
        if names and groups is not None:
            groups.delete_topic_offsets(set(names))
            await groups.flush()
        if topic_ids and self._share_partitions is not None:
            self._share_partitions.topics_deleted(topic_ids)
        share_state = self._share_state
        if topic_ids and share_state is not None and share_state.started and share_state.delete_topics(topic_ids):
            await share_state.flush()

    async def topic_created(self, name: str) -> TopicInfo | None:
        """The topic, once a creation of it that is under way has finished; None if there is no such topic."""
        creation = self._creating.get(name)
        if creation is not None:
            await asyncio.shield(creation)
        return self.logs.topics.get(name)

    # fetch wake-ups

    def notify_append(self, key: PartitionKey) -> None:
        waiters = self._waiters.pop(key, None)
        if waiters:
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(key)
                    self.fetches_woken = True

    async def wait_for_append(self, keys: list[PartitionKey], timeout_s: float) -> bool:
        """Wait until one of ``keys`` gets new data or the timeout passes; True if woken by data.

        The Fetch awaits the waiter itself and a timer ends the wait (asyncio.wait_for would put two more turns of
        the event loop between an append and the answer)."""
        if timeout_s <= 0:
            return False
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        timer = loop.call_later(timeout_s, _end_wait, waiter)
        for key in keys:
            self._waiters.setdefault(key, []).append(waiter)
        try:
            return await waiter is not None
        finally:
            timer.cancel()
            for key in keys:
                waiters = self._waiters.get(key)
                if waiters and waiter in waiters:
                    waiters.remove(waiter)
                    if not waiters:
                        del self._waiters[key]

    # upkeep

    async def flush_log(self, partition_log: PartitionLog) -> None:
        """fsync in the default executor; the event loop only prepares and completes the ticket."""
        ticket = partition_log.prepare_flush()
        if ticket is None:
            return
        await asyncio.get_running_loop().run_in_executor(None, ticket.run)
        partition_log.complete_flush(ticket)

    async def flush_due(self) -> None:
        now = self.clock()
        for info in list(self.logs.topics.values()):
            for partition_log in info.partitions:
                if partition_log.needs_flush(now):
                    await self.flush_log(partition_log)

    async def clean_logs(self) -> None:
        """Compact the logs that are due; the cleaner's modules are imported on its first run, off the start-up path."""
        if self.cleaner is None:
            from minibroker.storage.cleaner import LogCleaner

            self.cleaner = LogCleaner(self.logs, self.clock)
        await self.cleaner.clean_due_logs()

    def expire_producers(self) -> None:
        expired = sum(
            partition_log.remove_expired_producers(self.config.producer_id_expiration_ms)
            for info in list(self.logs.topics.values())
            for partition_log in info.partitions
        )
        if expired:
            log.info("forgot %d producer state(s) idle for producer.id.expiration.ms", expired)

    def enforce_retention(self) -> None:
        for info in list(self.logs.topics.values()):
            for partition_log in info.partitions:
                partition_log.enforce_retention()
