"""Topic administration: CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords and the config APIs (topic, group,
broker and broker logger resources)."""

from __future__ import annotations

import functools
import logging
import re
from collections import Counter
from typing import Any, Callable

from minibroker.acls.model import CLUSTER_DENIED, GROUP_DENIED, TOPIC_DENIED
from minibroker.acls.operations import (
    ALTER,
    ALTER_CONFIGS,
    CLUSTER,
    CLUSTER_NAME,
    CREATE,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    GROUP,
    TOPIC,
)
from minibroker.cluster.replicas import replication_problem
from minibroker.config import loggers as broker_loggers
from minibroker.config.dynamic import BrokerConfigError, broker_synonyms, listener_base, loggable
from minibroker.config.resources import (
    BROKER as BROKER_RESOURCE,
    BROKER_LOGGER as BROKER_LOGGER_RESOURCE,
    GROUP as GROUP_RESOURCE,
    TOPIC as TOPIC_RESOURCE,
    request_refusal,
    resource_refusal,
)
from minibroker.config.settings import TOPIC_SYNONYMS, BrokerConfig, is_secret
from minibroker.groups.group_configs import GroupConfigError
from minibroker.handlers.registry import api
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext
from minibroker.storage.errors import InvalidConfigError, OffsetOutOfRangeError, PartitionCreationError

log = logging.getLogger(__name__)

SOURCE_DYNAMIC_TOPIC = 1
SOURCE_DYNAMIC_BROKER = 2
SOURCE_DYNAMIC_DEFAULT = 3
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
SOURCE_BROKER_LOGGER = 6
SOURCE_GROUP = 8  # GROUP_CONFIG
INTEGER = re.compile(r"[+-]?[0-9]+")  # what Java's Integer.parseInt reads

CONFIG_TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7, "CLASS": 8, "PASSWORD": 9}
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3


def config_entries(ctx: RequestContext, overrides: dict[str, str], names: list[str] | None, synonyms: bool) -> list[dict]:
    """A topic's effective configs, each with the source and synonyms Kafka reports: the topic's override, the
    broker settings given for it (their order is Kafka's precedence), then the broker default."""
    given = dict(ctx.broker.static_config.given)
    effective = ctx.broker.logs.default_config.with_overrides(overrides).to_kafka_configs()
    retired = {spec.name for spec, _ in ctx.broker.logs.default_config.retired}  # an emulated 3.x release's
    entries = []
    for name, value in effective.items():
        if names is not None and name not in names:
            continue
        found = []
        if name in overrides:
            found.append({"name": name, "value": value, "source": SOURCE_DYNAMIC_TOPIC})
        if name not in retired:
            broker_names = [broker for broker, _ in TOPIC_SYNONYMS.get(name, ())]
            defaults = broker_defaults(broker_names)
        else:
            broker_names, defaults = retired_synonyms(ctx.broker.config.kafka_version, name)
        broker = dynamic_synonyms(ctx, broker_names)
        broker += [{"name": b, "value": given[b], "source": SOURCE_STATIC_BROKER} for b in broker_names if b in given]
        broker += [{"name": b, "value": d, "source": SOURCE_DEFAULT} for b, d in defaults]
        found += from_first_named(broker, broker_names[0]) if broker_names else []
        entry = {
            "name": name,
            "value": value,
            "read_only": False,
            "config_source": found[0]["source"] if found else SOURCE_DEFAULT,
            "is_sensitive": False,
            "synonyms": found if synonyms else [],
            "config_type": config_type("topic", name),
            "documentation": None,
        }
        entries.append(entry)
    return entries


def from_first_named(synonyms: list[dict], name: str) -> list[dict]:
    """ConfigHelper.configSynonyms' last step: the synonyms from the first one named ``name`` on, so a config whose
    own broker setting has no value shows none of its longer-unit synonyms (retention.ms with only
    log.retention.hours set: no synonyms, source DEFAULT_CONFIG; log.retention.hours hides log.retention.ms' values)."""
    for position, synonym in enumerate(synonyms):
        if synonym["name"] == name:
            return synonyms[position:]
    return []


def retired_synonyms(kafka_version: str, name: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The broker setting behind a topic config 4.0 removed, and its default, as the emulated release had them."""
    from minibroker.config.legacy_settings import REMOVED_TOPIC_CONFIGS, removed_broker_settings

    synonym = REMOVED_TOPIC_CONFIGS[name][1]
    default = removed_broker_settings(kafka_version)[synonym][1]
    return [synonym], [] if default is None else [(synonym, default)]


def dynamic_synonyms(ctx: RequestContext, names: list[str]) -> list[dict]:
    """The dynamic values of these broker settings for the node asked, in Kafka's precedence: its own
    (DYNAMIC_BROKER_CONFIG), then the cluster default's (DYNAMIC_DEFAULT_BROKER_CONFIG)."""
    configs = ctx.broker.broker_configs
    layers = ((configs.layer(ctx.node_id), SOURCE_DYNAMIC_BROKER), (configs.layer(None), SOURCE_DYNAMIC_DEFAULT))
    return [{"name": n, "value": layer[n], "source": source} for layer, source in layers for n in names if n in layer]


def config_type(kind: str, name: str) -> int:
    """DescribeConfigs' ConfigType of a topic, broker or group config, from Kafka's ConfigDef of that kind (the
    generated ``kafka_settings``, or for one 4.0 removed its 3.x definition); UNKNOWN (0) where Kafka has none, as
    minibroker's own settings."""
    from minibroker.config.kafka_settings import BROKER_SETTINGS, GROUP_SETTINGS, TOPIC_SETTINGS  # facts, read when asked

    table: dict[str, tuple] = {"topic": TOPIC_SETTINGS, "broker": BROKER_SETTINGS, "group": GROUP_SETTINGS}[kind]
    spec = table.get(name)
    if spec is None and kind != "group":
        from minibroker.config.legacy_settings import removed_config_kind  # shown only under an emulated 3.x release

        return CONFIG_TYPES.get(removed_config_kind(kind, name), 0)
    return CONFIG_TYPES.get(spec[0], 0) if spec is not None else 0


def broker_defaults(names: list[str]) -> list[tuple[str, str]]:
    """Kafka's defaults of these broker settings, those that have one."""
    from minibroker.config.kafka_settings import BROKER_SETTINGS

    return [(name, BROKER_SETTINGS[name][1]) for name in names if BROKER_SETTINGS[name][1] is not None]


def assignment_problem(assignments: list[list[int]], nodes: list[int]) -> str | None:
    """Kafka's checks of explicit replica assignments: known brokers, no broker twice, the same count for each."""
    for broker_ids in assignments:
        if not broker_ids or len(set(broker_ids)) != len(broker_ids):
            return f"Replica assignment {broker_ids} must name distinct brokers."
        unknown = sorted(set(broker_ids) - set(nodes))
        if unknown:
            return f"Replica assignment {broker_ids} names unknown broker(s) {unknown}."
    if len({len(broker_ids) for broker_ids in assignments}) > 1:
        return "All partitions should have the same number of replicas."
    return None


def refused_topic(name: str, error: ErrorCode, message: str | None) -> dict[str, Any]:
    """A CreateTopics result before (or without) a topic: no id, no configs, as Kafka's controller answers."""
    return {"name": name, "topic_id": bytes(16), "error_code": error, "error_message": message, "configs": []}


async def create_one(ctx: RequestContext, request: dict[str, Any], validate_only: bool) -> dict[str, Any]:
    broker = ctx.broker
    name = request["name"]
    result = refused_topic(name, ErrorCode.NONE, None)
    assignments = request["assignments"]
    partitions = len(assignments) if assignments else request["num_partitions"]
    if partitions == -1:
        partitions = broker.config.num_partitions
    factor = request["replication_factor"]
    if factor == -1:
        factor = len(assignments[0]["broker_ids"]) if assignments else broker.config.default_replication_factor
    if factor == 0 or factor < -1:
        problem: str | None = "Replication factor must be larger than 0, or -1 to use the default value."
    else:
        problem = replication_problem(factor, len(broker.live_nodes))
    if problem is None and assignments:
        problem = assignment_problem([a["broker_ids"] for a in assignments], broker.node_ids)
    if problem is not None:
        return {**result, "error_code": ErrorCode.INVALID_REPLICATION_FACTOR, "error_message": problem}
    overrides = {c["name"]: c["value"] for c in request["configs"]}
    replicas = [tuple(a["broker_ids"]) for a in assignments] if assignments else None
    error, message = await broker.create_topic(name, partitions, overrides, validate_only, factor, replicas)
    if error != ErrorCode.NONE:
        return {**result, "error_code": error, "error_message": message}
    info = broker.topic(name)
    result.update(
        topic_id=info.topic_id if info else bytes(16),
        num_partitions=partitions,
        replication_factor=factor,
        configs=[
            {k: e[k] for k in ("name", "value", "read_only", "config_source", "is_sensitive")}
            for e in config_entries(ctx, overrides, None, False)
        ],
    )
    return result


@api(19, 2, 7, oldest=0)
async def create_topics(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """With the authorizer on: CREATE on the cluster or on each topic, else TOPIC_AUTHORIZATION_FAILED; without
    DESCRIBE_CONFIGS on a created topic its configs, partitions and replicas are not shown (topic_config_error_code
    says why)."""
    if ctx.broker.authorizer is None:
        return {"topics": [await create_one(ctx, t, body["validate_only"]) for t in body["topics"]]}
    names = {t["name"] for t in body["topics"]}
    may_create = names if ctx.allowed(CREATE, CLUSTER, CLUSTER_NAME, log_denied=False) else ctx.allowed_names(CREATE, TOPIC, names)
    may_see_configs = ctx.allowed_names(DESCRIBE_CONFIGS, TOPIC, names, log_denied=False)
    results = []
    for request in body["topics"]:
        name = request["name"]
        if name not in may_create:
            result = refused_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
        else:
            result = await create_one(ctx, request, body["validate_only"])
        if result["error_code"] == ErrorCode.NONE and name not in may_see_configs:
            result.update(
                topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, configs=[], num_partitions=-1,
                replication_factor=-1,
            )
        results.append(result)
    return {"topics": results}


def delete_refusal(ctx: RequestContext, request: dict[str, Any], name: str | None) -> dict[str, Any] | None:
    """Kafka's controller (ControllerApis.deleteTopics): DELETE on the cluster allows every topic; else a topic the
    principal may not DESCRIBE is refused whether it exists or not, its id (named by id: its name) kept secret, and
    one it may DESCRIBE needs DELETE. None when allowed, or when an unknown topic's error follows."""
    if name is None or ctx.allowed(DELETE, CLUSTER, CLUSTER_NAME, log_denied=False):
        return None
    by_id = request["name"] is None
    denied = {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "error_message": TOPIC_DENIED}
    secret = {"name": None} if by_id else {"topic_id": bytes(16)}
    if not ctx.allowed(DESCRIBE, TOPIC, name):
        return {**denied, **secret}
    if ctx.broker.topic(name) is None or ctx.allowed(DELETE, TOPIC, name):
        return None
    return denied if by_id else {**denied, **secret}


@api(20, 1, 6, oldest=0)
async def delete_topics(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    broker = ctx.broker
    by_id = {info.topic_id: name for name, info in broker.logs.topics.items()}
    requests = body["topics"] or [{"name": n, "topic_id": bytes(16)} for n in body["topic_names"]]
    responses = []
    deleted = set()
    for request in requests:
        name = request["name"] if request["name"] is not None else by_id.get(request["topic_id"])
        info = broker.topic(name) if name is not None else None
        response = {"name": name, "topic_id": info.topic_id if info else request["topic_id"], "error_code": ErrorCode.NONE}
        refused = delete_refusal(ctx, request, name) if broker.authorizer is not None else None
        if not broker.config.delete_topic_enable:
            response["error_code"] = ErrorCode.TOPIC_DELETION_DISABLED
        elif refused is not None:
            response.update(refused)
        elif info is None:
            response["error_code"] = ErrorCode.UNKNOWN_TOPIC_ID if request["name"] is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            deleted.add(name)
        responses.append(response)
    await broker.delete_topics(sorted(deleted))
    return {"responses": responses}


def new_partitions_problem(
    request: dict[str, Any], current: int, factor: int, nodes: list[int], live: set[int],
) -> tuple[ErrorCode, str] | None:
    """ReplicationControlManager.createPartitions' checks of a topic of ``current`` partitions and ``factor``
    replicas: an increase, and explicit assignments one per new partition, each naming ``factor`` distinct
    registered brokers, at least one of them live."""
    count, assignments = request["count"], request["assignments"]
    if count == current:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
    if count < current:
        return ErrorCode.INVALID_PARTITIONS, (
            f"The topic {request['name']} currently has {current} partition(s); {count} would not be an increase."
        )
    if assignments is None:
        return None
    if len(assignments) != count - current:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
            f"Attempted to add {count - current} additional partition(s), but only {len(assignments)} "
            "assignment(s) were specified."
        )
    for index, assignment in enumerate(assignments):
        problem = manual_assignment_problem(assignment["broker_ids"], nodes, factor)
        if problem is None and not live.intersection(assignment["broker_ids"]):
            problem = (f"All brokers specified in the manual partition assignment for partition {current + index} "
                       "are fenced or in controlled shutdown.")
        if problem is not None:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
    return None


def manual_assignment_problem(broker_ids: list[int], nodes: list[int], factor: int | None) -> str | None:
    """Kafka's validateManualPartitionAssignment (CreatePartitions, AlterPartitionReassignments)."""
    if not broker_ids:
        return "The manual partition assignment includes an empty replica list."
    previous = None
    for broker_id in sorted(broker_ids):
        if broker_id not in nodes:
            return f"The manual partition assignment includes broker {broker_id}, but no such broker is registered."
        if broker_id == previous:
            return f"The manual partition assignment includes the broker {broker_id} more than once."
        previous = broker_id
    if factor is not None and len(broker_ids) != factor:
        return (f"The manual partition assignment includes a partition with {len(broker_ids)} replica(s), but this "
                f"is not consistent with previous partitions, which have {factor} replica(s).")
    return None


@api(37, 0, 3)
async def create_partitions(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    broker = ctx.broker
    results = []
    named = Counter(request["name"] for request in body["topics"])
    duplicates = {name for name, count in named.items() if count > 1}
    for request in body["topics"]:
        name = request["name"]
        info = broker.topic(name)
        result = {"name": name, "error_code": ErrorCode.NONE, "error_message": None}
        if name in duplicates:  # ControllerApis.createPartitions: one answer for a name given twice, nothing done
            if named.pop(name, None) is not None:
                results.append({**result, "error_code": ErrorCode.INVALID_REQUEST, "error_message": "Duplicate topic name."})
            continue
        if broker.authorizer is not None and not ctx.allowed(ALTER, TOPIC, name):  # Kafka's controller: no message
            result.update(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            results.append(result)
            continue
        if info is None:
            result.update(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=f"The topic '{name}' does not exist.")
            results.append(result)
            continue
        current = len(info.partitions)
        factor = len(broker.placements.of(name, 0).replicas)
        problem = new_partitions_problem(request, current, factor, broker.node_ids, broker.live_nodes)
        if problem is not None:
            result.update(error_code=problem[0], error_message=problem[1])
        elif not body["validate_only"]:
            assignments = request["assignments"]
            replicas = None if assignments is None else [tuple(a["broker_ids"]) for a in assignments]
            try:
                broker.logs.add_partitions(name, request["count"])
                broker.placements.grow(name, current, request["count"], broker.live_nodes, replicas)
            except PartitionCreationError as exc:
                log.error("%s", exc)
                result.update(error_code=ErrorCode.KAFKA_STORAGE_ERROR, error_message=str(exc))
            else:
                log.info("topic %s now has %d partitions", name, request["count"])
                broker.leaders_changed(name)
        results.append(result)
    return {"results": results}


@api(21, 0, 2)
async def delete_records(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    names = {topic["name"] for topic in body["topics"]}
    denied = names - ctx.allowed_names(DELETE, TOPIC, names) if ctx.broker.authorizer is not None else set()
    topics = []
    for topic in body["topics"]:
        partitions = []
        for request in topic["partitions"]:
            index = request["partition_index"]
            if denied and topic["name"] in denied:
                partitions.append({"partition_index": index, "low_watermark": -1, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED})
                continue
            partition_log, error = ctx.led_partition(topic["name"], index)
            answer = {"partition_index": index, "low_watermark": -1, "error_code": error}
            if partition_log is not None:
                offset = partition_log.log_end_offset if request["offset"] == -1 else request["offset"]
                try:
                    answer["low_watermark"] = partition_log.delete_records_before(offset)
                except OffsetOutOfRangeError:
                    answer["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
            partitions.append(answer)
        topics.append({"name": topic["name"], "partitions": partitions})
    return {"topics": topics}


class ConfigRequestError(Exception):
    """A resource Kafka refuses before looking at its configs, with the error code and message it answers."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


def resource_node(ctx: RequestContext, name: str, not_integer: str, unexpected: str) -> int:
    """The node a BROKER or BROKER_LOGGER resource names, which must be the node asked (Kafka's brokers answer for
    themselves only): ``not_integer`` and ``unexpected`` are Kafka's messages, formatted with ``name`` and ``node``."""
    if not INTEGER.fullmatch(name):
        raise ConfigRequestError(ErrorCode.INVALID_REQUEST, not_integer.format(name=name, node=ctx.node_id))
    if int(name) != ctx.node_id:
        raise ConfigRequestError(ErrorCode.INVALID_REQUEST, unexpected.format(name=name, node=ctx.node_id))
    return ctx.node_id


def describe_broker(ctx: RequestContext, name: str, names: list[str] | None, synonyms: bool) -> list[dict]:
    """A node's configs (ConfigHelper.createBrokerConfigEntry): every setting at its effective value, its synonyms
    in Kafka's precedence (the node's dynamic value, the dynamic default, the static setting, the default), read-only
    unless Kafka can change it dynamically, passwords null; for the cluster default (name ""), its values only."""
    configs = ctx.broker.broker_configs
    node = None if name == "" else resource_node(
        ctx, name, "Broker id must be an integer, but it is: {name}",
        "Unexpected broker id, expected {node} or empty string, but received {name}",
    )
    default = configs.layer(None)
    if node is None:
        values: dict[str, str | None] = dict(default)
    else:
        values = (ctx.broker.config if node == ctx.broker.node_ids[0] else configs.effective(node)).kafka_items()
        values["broker.rack"] = ctx.broker.racks.get(node)  # the node's own rack (null: none)
    layers = (
        (configs.layer(node) if node is not None else {}, SOURCE_DYNAMIC_BROKER), (default, SOURCE_DYNAMIC_DEFAULT),
        (dict(ctx.broker.static_config.given), SOURCE_STATIC_BROKER), (default_settings(), SOURCE_DEFAULT),
    )
    from minibroker.config.dynamic import DYNAMIC

    entries = []
    for key, value in values.items():
        if names is not None and key not in names:
            continue
        sensitive = is_secret(listener_base(key) or key)
        found = [
            {"name": n, "value": None if sensitive else layer[n], "source": source}
            for layer, source in layers for n in broker_synonyms(key) if layer.get(n) is not None
        ]
        found = from_first_named(found, key)
        if node is None:
            found = [synonym for synonym in found if synonym["source"] == SOURCE_DYNAMIC_DEFAULT]
        entries.append({
            "name": key, "value": None if sensitive else value, "read_only": key not in DYNAMIC,
            "config_source": found[0]["source"] if found else SOURCE_DEFAULT, "is_sensitive": sensitive,
            "synonyms": found if synonyms else [], "config_type": config_type("broker", key), "documentation": None,
        })
    return entries


def describe_loggers(ctx: RequestContext, name: str, names: list[str] | None) -> list[dict]:
    """Every logger with its level (ConfigHelper for BROKER_LOGGER): DYNAMIC_BROKER_LOGGER_CONFIG, no synonyms."""
    if not name:
        raise ConfigRequestError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    resource_node(ctx, name, "Broker id must be an integer, but it is: {name}",
                  "Unexpected broker id, expected {node} but received {name}")
    return [
        {"name": logger, "value": level, "read_only": False, "config_source": SOURCE_BROKER_LOGGER,
         "is_sensitive": False, "synonyms": [], "config_type": 0, "documentation": None}
        for logger, level in broker_loggers.loggers().items() if names is None or logger in names
    ]


def config_refusal(ctx: RequestContext, kind: int, name: str, operation: int) -> tuple[ErrorCode, str] | None:
    """The config APIs' checks (ConfigHelper, KafkaApis): DESCRIBE_CONFIGS or ALTER_CONFIGS on the topic, the group,
    or the cluster for broker configs; None when allowed or for a resource type the handler refuses anyway."""
    if kind == TOPIC_RESOURCE and not ctx.allowed(operation, TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_DENIED
    if kind == GROUP_RESOURCE and not ctx.allowed(operation, GROUP, name):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, GROUP_DENIED
    if kind in (BROKER_RESOURCE, BROKER_LOGGER_RESOURCE) and not ctx.allowed(operation, CLUSTER, CLUSTER_NAME):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED
    return None


def release_refusal(ctx: RequestContext, resources: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Every resource's answer where the release emulated (``kafka.version``) failed the whole request for a resource
    type it did not serve (minibroker.config.resources), else None."""
    refused = request_refusal(
        ctx.broker.config.kafka_version, ctx.api_key, [(r["resource_type"], r["resource_name"]) for r in resources],
    )
    if refused is None:
        return None
    return [{"error_code": ErrorCode.INVALID_REQUEST, "error_message": message, "resource_type": kind, "resource_name": name}
            for kind, name, message in refused]


@api(32, 1, 4, oldest=0)
async def describe_configs(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    refused_request = release_refusal(ctx, body["resources"])
    if refused_request is not None:
        return {"results": [{**answer, "configs": []} for answer in refused_request]}
    results = []
    for resource in body["resources"]:
        kind, name, names = resource["resource_type"], resource["resource_name"], resource["configuration_keys"]
        result = {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": kind, "resource_name": name, "configs": []}
        refused = config_refusal(ctx, kind, name, DESCRIBE_CONFIGS) if ctx.broker.authorizer is not None else None
        if refused is not None:
            result.update(error_code=refused[0], error_message=refused[1])
        elif kind == TOPIC_RESOURCE:
            info = ctx.broker.topic(name)
            if info is None:
                result.update(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=f"Topic {name} does not exist.")
            else:
                result["configs"] = config_entries(ctx, info.overrides, names, body["include_synonyms"])
        elif kind in (BROKER_RESOURCE, BROKER_LOGGER_RESOURCE):
            try:
                if kind == BROKER_RESOURCE:
                    result["configs"] = describe_broker(ctx, name, names, body["include_synonyms"])
                else:
                    result["configs"] = describe_loggers(ctx, name, names)
            except ConfigRequestError as exc:
                result.update(error_code=exc.error, error_message=str(exc))
        elif kind == GROUP_RESOURCE and not name:
            result.update(error_code=ErrorCode.INVALID_REQUEST, error_message="Group name must not be empty")
        elif kind == GROUP_RESOURCE:
            result["configs"] = describe_group(ctx, name, names, body["include_synonyms"])
        else:
            result.update(error_code=ErrorCode.INVALID_REQUEST, error_message=f"Unsupported resource {kind} {name!r}")
        if ctx.api_version == 0:  # v0 says IsDefault where later versions give the source
            for entry in result["configs"]:
                entry["is_default"] = entry["config_source"] == SOURCE_DEFAULT
        results.append(result)
    return {"results": results}


def describe_group(ctx: RequestContext, group_id: str, names: list[str] | None, synonyms: bool) -> list[dict]:
    """A group's configs as Kafka's ConfigHelper.createGroupConfigEntry gives them: the group's own value
    (GROUP_CONFIG), else the broker setting it follows (given: STATIC_BROKER_CONFIG, else DEFAULT_CONFIG), else
    GroupConfig's default."""
    from minibroker.config.kafka_settings import GROUP_SETTINGS

    configs = ctx.broker.group_configs
    overrides = configs.overrides(group_id)
    given = dict(ctx.broker.static_config.given)
    entries = []
    for name in sorted(GROUP_SETTINGS):
        if names is not None and name not in names:
            continue
        broker_name = GROUP_SETTINGS[name][3]
        found = [{"name": name, "value": overrides[name], "source": SOURCE_GROUP}] if name in overrides else []
        if broker_name is None:
            found.append({"name": name, "value": GROUP_SETTINGS[name][1], "source": SOURCE_DEFAULT})
        else:
            found += dynamic_synonyms(ctx, [broker_name])
            if broker_name in given:
                found.append({"name": broker_name, "value": given[broker_name], "source": SOURCE_STATIC_BROKER})
            found.append({"name": broker_name, "value": default_settings()[broker_name], "source": SOURCE_DEFAULT})
        entries.append({
            "name": name, "value": overrides.get(name, configs.default(name)), "read_only": False,
            "config_source": found[0]["source"], "is_sensitive": False, "synonyms": found if synonyms else [],
            "config_type": config_type("group", name), "documentation": None,
        })
    return entries


@functools.cache
def default_settings() -> dict[str, str | None]:
    """Every broker setting's default as minibroker has it (its own defaults where they differ from Kafka's)."""
    return BrokerConfig().kafka_items()


def apply_configs(ctx: RequestContext, resource: dict[str, Any], new: dict[str, Any], validate_only: bool) -> dict:
    """Validate and (unless validating only) store a topic's or a group's complete new set of overrides."""
    name = resource["resource_name"]
    response = {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": resource["resource_type"], "resource_name": name}
    group = resource["resource_type"] == GROUP_RESOURCE
    try:
        if group:
            ctx.broker.group_configs.validate(name, new)
        else:
            ctx.broker.logs.default_config.with_overrides(new)
    except GroupConfigError as exc:
        return {**response, "error_code": exc.error, "error_message": str(exc)}
    except InvalidConfigError as exc:
        return {**response, "error_code": ErrorCode.INVALID_CONFIG, "error_message": str(exc)}
    if not validate_only:
        if group:
            ctx.broker.group_configs.replace(name, new)
        else:
            ctx.broker.logs.alter_config(name, new)
        log.info("%s %s configs now %s", "group" if group else "topic", name, new)
    return response


def check_resource(
    ctx: RequestContext, resource: dict[str, Any], null_allowed: Callable[[dict[str, Any]], bool],
    kinds: tuple[int, ...], repeated: set[tuple[int, str]],
) -> dict | None:
    """The error answer for a resource we cannot alter, or None for an existing topic, a group, the cluster default
    or this node's broker configs, or its loggers. As Kafka's ConfigAdminManager.preprocess: a resource named twice,
    a config named twice, a null value (but a DELETE's), then a type the release (or minibroker) does not serve, is
    an invalid request; BROKER and BROKER_LOGGER resources name the node asked."""
    kind, name = resource["resource_type"], resource["resource_name"]
    base = {"resource_type": kind, "resource_name": name}
    if ctx.broker.authorizer is not None:
        refused = config_refusal(ctx, kind, name, ALTER_CONFIGS)
        if refused is not None:  # as Kafka's controller answers (ControllerApis.authorizeAlterResource)
            return {**base, "error_code": refused[0], "error_message": refused[1]}
    if (kind, name) in repeated:
        return {**base, "error_code": ErrorCode.INVALID_REQUEST, "error_message": "Each resource must appear at most once."}
    names = [c["name"] for c in resource["configs"]]
    if len(set(names)) != len(names):
        return {**base, "error_code": ErrorCode.INVALID_REQUEST, "error_message": "Error due to duplicate config keys"}
    nulls = [c["name"] for c in resource["configs"] if c["value"] is None and not null_allowed(c)]
    if nulls:
        return {**base, "error_code": ErrorCode.INVALID_REQUEST, "error_message": f"Null value not supported for : {', '.join(nulls)}"}
    unserved = resource_refusal(ctx.broker.config.kafka_version, ctx.api_key, kind, name)
    if unserved is not None or kind not in kinds:  # the release's refusal, or a type minibroker does not serve
        return {**base, "error_code": ErrorCode.INVALID_REQUEST, "error_message": unserved or f"Unknown resource type {kind}"}
    try:
        if kind == BROKER_RESOURCE and name:
            resource_node(ctx, name, "Node id must be an integer, but it is: {name}",
                          "Unexpected broker id, expected {node}, but received {name}")
        elif kind == BROKER_LOGGER_RESOURCE:
            resource_node(ctx, name, "Node id must be an integer, but it is: {name}",
                          "Unexpected node id. Expected {node}, but received {name}")
    except ConfigRequestError as exc:
        return {**base, "error_code": exc.error, "error_message": str(exc)}
    if kind == TOPIC_RESOURCE and ctx.broker.topic(name) is None:
        return {**base, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "error_message": "Topic does not exist."}
    return None


def repeated_resources(resources: list[dict[str, Any]]) -> set[tuple[int, str]]:
    """The (type, name) of resources a request names more than once."""
    seen: set[tuple[int, str]] = set()
    repeated = set()
    for resource in resources:
        key = (resource["resource_type"], resource["resource_name"])
        (repeated if key in seen else seen).add(key)
    return repeated


def apply_broker_configs(ctx: RequestContext, resource: dict[str, Any], new: dict[str, str], validate_only: bool) -> dict:
    """Validate and (unless validating only) store and apply the complete new set of dynamic values of a node
    (resource name: its id) or of the cluster default (""), as Kafka's DynamicBrokerConfig; a refusal is
    INVALID_REQUEST with Kafka's message (ConfigAdminManager.validateBrokerConfigChange)."""
    name = resource["resource_name"]
    response = {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": BROKER_RESOURCE, "resource_name": name}
    node = int(name) if name else None
    configs = ctx.broker.broker_configs
    try:
        configs.validate(node, new, ctx.broker.node_ids)
    except BrokerConfigError as exc:
        return {**response, "error_code": ErrorCode.INVALID_REQUEST, "error_message": str(exc)}
    if not validate_only:
        configs.replace(node, new)
        ctx.broker.reconfigure()
        log.info("broker %s dynamic configs now %s", "default" if node is None else node, loggable(new))
    return response


@api(33, 0, 2)
async def alter_configs(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    refused_request = release_refusal(ctx, body["resources"])
    if refused_request is not None:
        return {"responses": refused_request}
    repeated = repeated_resources(body["resources"])
    responses = []
    for resource in body["resources"]:
        kinds = (TOPIC_RESOURCE, GROUP_RESOURCE, BROKER_RESOURCE)
        response = check_resource(ctx, resource, lambda config: False, kinds, repeated)
        if response is None:
            new = {c["name"]: c["value"] for c in resource["configs"]}
            if resource["resource_type"] == BROKER_RESOURCE:
                response = apply_broker_configs(ctx, resource, new, body["validate_only"])
            else:
                response = apply_configs(ctx, resource, new, body["validate_only"])
        responses.append(response)
    return {"responses": responses}


def incremental_change(current: dict[str, str], op: dict[str, Any], defaults: dict[str, str | None], types: dict[str, tuple]) -> None:
    """One IncrementalAlterConfigs operation on a topic's or group's overrides; APPEND and SUBTRACT (LIST configs
    only) start from the override, or from the default value when there is none, as Kafka's controller does."""
    name, value, kind = op["name"], op["value"], op["config_operation"]
    if kind == OP_SET:
        current[name] = value
    elif kind == OP_DELETE:
        current.pop(name, None)
    elif kind in (OP_APPEND, OP_SUBTRACT):
        if types.get(name, ("",))[0] != "LIST":
            verb = "APPEND" if kind == OP_APPEND else "SUBTRACT"
            raise InvalidConfigError(name, f"Can't {verb} to key {name} because its type is not LIST.")
        items = [v for v in current.get(name, defaults.get(name) or "").split(",") if v]
        change = [v for v in (value or "").split(",") if v]
        items = items + [v for v in change if v not in items] if kind == OP_APPEND else [v for v in items if v not in change]
        current[name] = ",".join(items)
    else:
        raise InvalidConfigError(name, f"Unknown config operation {kind}")


def broker_change(current: dict[str, str], op: dict[str, Any]) -> None:
    """One IncrementalAlterConfigs operation on a broker layer (ConfigAdminManager.prepareIncrementalConfigs):
    APPEND and SUBTRACT only on LIST settings, from the layer's value or else Kafka's default."""
    from minibroker.config.kafka_settings import BROKER_SETTINGS

    name, value, kind = op["name"], op["value"], op["config_operation"]
    if kind == OP_SET:
        current[name] = value
    elif kind == OP_DELETE:
        current.pop(name, None)
    elif kind in (OP_APPEND, OP_SUBTRACT):
        spec = BROKER_SETTINGS.get(name)
        if spec is None:
            raise InvalidConfigError(name, f"Unknown config name: {name}")
        if spec[0] != "LIST":
            verb = "append" if kind == OP_APPEND else "subtract"
            raise InvalidConfigError(name, f"Config value {verb} is not allowed for config key: {name}")
        old = current.get(name, spec[1]) or ""
        if kind == OP_APPEND:
            items = [v for v in old.split(",") if old]
            items += [v for v in value.split(",") if v not in items]
        else:
            items = [v for v in old.split(",") if v not in value.split(",")]
        current[name] = ",".join(items)
    else:
        raise ConfigRequestError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {kind}")


def change_loggers(resource: dict[str, Any], validate_only: bool) -> dict:
    """IncrementalAlterConfigs on BROKER_LOGGER (RuntimeLoggerManager): validated whole, then applied."""
    response = {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": BROKER_LOGGER_RESOURCE,
                "resource_name": resource["resource_name"]}
    try:
        broker_loggers.validate(resource["configs"])
    except broker_loggers.LoggerChangeError as exc:
        return {**response, "error_code": exc.error, "error_message": str(exc)}
    if not validate_only:
        broker_loggers.apply(resource["configs"])
    return response


def alter_incrementally(ctx: RequestContext, resource: dict[str, Any], validate_only: bool) -> dict:
    """One checked resource's operations, applied to its current values (a topic's or group's overrides, a broker
    layer, the loggers)."""
    from minibroker.config.kafka_settings import GROUP_SETTINGS, TOPIC_SETTINGS

    kind, name = resource["resource_type"], resource["resource_name"]
    if kind == BROKER_LOGGER_RESOURCE:
        return change_loggers(resource, validate_only)
    if kind == BROKER_RESOURCE:
        new = ctx.broker.broker_configs.layer(int(name) if name else None)
    elif kind == GROUP_RESOURCE:
        new = ctx.broker.group_configs.overrides(name)
        defaults = {n: ctx.broker.group_configs.default(n) for n in GROUP_SETTINGS}
        types: dict[str, tuple] = GROUP_SETTINGS
    else:
        new = dict(ctx.broker.topic(name).overrides)
        defaults = ctx.broker.logs.default_config.to_kafka_configs()
        types = TOPIC_SETTINGS
    try:
        for op in resource["configs"]:
            if kind == BROKER_RESOURCE:
                broker_change(new, op)
            else:
                incremental_change(new, op, defaults, types)
    except (InvalidConfigError, ConfigRequestError) as exc:
        error = exc.error if isinstance(exc, ConfigRequestError) else ErrorCode.INVALID_CONFIG
        return {"resource_type": kind, "resource_name": name, "error_code": error, "error_message": str(exc)}
    if kind == BROKER_RESOURCE:
        return apply_broker_configs(ctx, resource, new, validate_only)
    return apply_configs(ctx, resource, new, validate_only)


@api(44, 0, 1)
async def incremental_alter_configs(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    refused_request = release_refusal(ctx, body["resources"])
    if refused_request is not None:
        return {"responses": refused_request}
    repeated = repeated_resources(body["resources"])
    kinds = (TOPIC_RESOURCE, GROUP_RESOURCE, BROKER_RESOURCE, BROKER_LOGGER_RESOURCE)
    responses = []
    for resource in body["resources"]:
        response = check_resource(ctx, resource, lambda config: config["config_operation"] == OP_DELETE, kinds, repeated)
        responses.append(response if response is not None else alter_incrementally(ctx, resource, body["validate_only"]))
    return {"responses": responses}
