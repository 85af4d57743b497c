"""Topic administration: CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords and the config APIs."""

from __future__ import annotations

import functools
import logging
from typing import Any, Callable

from minibroker.acl_operations import (
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
from minibroker.acls.model import CLUSTER_DENIED, GROUP_DENIED, TOPIC_DENIED
from minibroker.config import TOPIC_SYNONYMS, BrokerConfig, is_secret
from minibroker.context import RequestContext
from minibroker.groups.group_configs import GroupConfigError
from minibroker.handlers.registry import api
from minibroker.protocol.errors import ErrorCode
from minibroker.replicas import replication_problem
from minibroker.storage.errors import InvalidConfigError, OffsetOutOfRangeError, PartitionCreationError

log = logging.getLogger(__name__)

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP (KIP-848's group configs)

SOURCE_DYNAMIC_TOPIC = 1
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
SOURCE_GROUP = 8  # GROUP_CONFIG

CONFIG_TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7, "CLASS": 8, "PASSWORD": 9}
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3


def config_entries(ctx: RequestContext, overrides: dict[str, str], names: list[str] | None, synonyms: bool) -> list[dict]:
    """A topic's effective configs, each with the source and synonyms Kafka reports: the topic's override, the
    broker settings given for it (their order is Kafka's precedence), then the broker default."""
    given = dict(ctx.broker.config.given)
    effective = ctx.broker.logs.default_config.with_overrides(overrides).to_kafka_configs()
    entries = []
    for name, value in effective.items():
        if names is not None and name not in names:
            continue
        found = []
        if name in overrides:
            found.append({"name": name, "value": value, "source": SOURCE_DYNAMIC_TOPIC})
        broker_names = [broker for broker, _ in TOPIC_SYNONYMS.get(name, ())]
        found += [{"name": b, "value": given[b], "source": SOURCE_STATIC_BROKER} for b in broker_names if b in given]
        found += [{"name": b, "value": d, "source": SOURCE_DEFAULT} for b, d in broker_defaults(broker_names)]
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


def config_type(kind: str, name: str) -> int:
    """DescribeConfigs' ConfigType of a topic, broker or group config, from Kafka's ConfigDef of that kind (the
    generated ``kafka_settings``); UNKNOWN (0) where Kafka has none, as minibroker's own settings."""
    from minibroker.kafka_settings import BROKER_SETTINGS, GROUP_SETTINGS, TOPIC_SETTINGS  # facts, read when asked

    table: dict[str, tuple] = {"topic": TOPIC_SETTINGS, "broker": BROKER_SETTINGS, "group": GROUP_SETTINGS}[kind]
    spec = table.get(name)
    return CONFIG_TYPES.get(spec[0], 0) if spec is not None else 0


def broker_defaults(names: list[str]) -> list[tuple[str, str]]:
    """Kafka's defaults of these broker settings, those that have one."""
    from minibroker.kafka_settings import BROKER_SETTINGS

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


@api(19, 2, 7)
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


@api(20, 1, 6)
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


@api(37, 0, 3)
async def create_partitions(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    broker = ctx.broker
    results = []
    for request in body["topics"]:
        name = request["name"]
        info = broker.topic(name)
        result = {"name": name, "error_code": ErrorCode.NONE, "error_message": None}
        if broker.authorizer is not None and not ctx.allowed(ALTER, TOPIC, name):  # Kafka's controller: no message
            result.update(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        elif info is None:
            result.update(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=f"The topic '{name}' does not exist.")
        elif request["count"] <= len(info.partitions):
            current = len(info.partitions)
            relation = "equal to" if request["count"] == current else "higher than"
            result.update(
                error_code=ErrorCode.INVALID_PARTITIONS,
                error_message=f"Topic currently has {current} partitions, which is {relation} the requested {request['count']}.",
            )
        elif not body["validate_only"]:
            try:
                broker.logs.add_partitions(name, request["count"])
                broker.placements.grow(name, request["count"], broker.live_nodes)
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


def describe_broker(ctx: RequestContext, names: list[str] | None, synonyms: bool) -> list[dict]:
    given = dict(ctx.broker.config.given)
    entries = []
    items = ctx.broker.config.kafka_items()
    items["broker.rack"] = ctx.broker.racks.get(ctx.node_id)  # the answering node's own rack (null: none)
    for name, value in items.items():
        if names is not None and name not in names:
            continue
        source = SOURCE_STATIC_BROKER if name in given else SOURCE_DEFAULT
        sensitive = is_secret(name)
        value = None if sensitive else value  # as Kafka: passwords are never returned
        entries.append(
            {
                "name": name,
                "value": value,
                "read_only": True,
                "config_source": source,
                "is_sensitive": sensitive,
                "synonyms": [{"name": name, "value": value, "source": source}] if synonyms else [],
                "config_type": config_type("broker", name),
                "documentation": None,
            }
        )
    return entries


def config_refusal(ctx: RequestContext, kind: int, name: str, operation: int) -> tuple[ErrorCode, str] | None:
    """The config APIs' checks (ConfigHelper, KafkaApis): DESCRIBE_CONFIGS or ALTER_CONFIGS on the topic, the group,
    or the cluster for broker configs; None when allowed or for a resource type the handler refuses anyway."""
    if kind == TOPIC_RESOURCE and not ctx.allowed(operation, TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_DENIED
    if kind == GROUP_RESOURCE and not ctx.allowed(operation, GROUP, name):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, GROUP_DENIED
    if kind == BROKER_RESOURCE and not ctx.allowed(operation, CLUSTER, CLUSTER_NAME):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED
    return None


@api(32, 1, 4)
async def describe_configs(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
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
        elif kind == BROKER_RESOURCE and name in ("", *map(str, ctx.broker.node_ids)):
            result["configs"] = describe_broker(ctx, names, body["include_synonyms"])
        elif kind == GROUP_RESOURCE and not name:
            result.update(error_code=ErrorCode.INVALID_REQUEST, error_message="Group name must not be empty")
        elif kind == GROUP_RESOURCE:
            result["configs"] = describe_group(ctx, name, names, body["include_synonyms"])
        else:
            result.update(error_code=ErrorCode.INVALID_REQUEST, error_message=f"Unsupported resource {kind} {name!r}")
        results.append(result)
    return {"results": results}


def describe_group(ctx: RequestContext, group_id: str, names: list[str] | None, synonyms: bool) -> list[dict]:
    """A group's configs as Kafka's ConfigHelper.createGroupConfigEntry gives them: the group's own value
    (GROUP_CONFIG), else the broker setting it follows (given: STATIC_BROKER_CONFIG, else DEFAULT_CONFIG), else
    GroupConfig's default."""
    from minibroker.kafka_settings import GROUP_SETTINGS

    configs = ctx.broker.group_configs
    overrides = configs.overrides(group_id)
    given = dict(ctx.broker.config.given)
    entries = []
    for name in sorted(GROUP_SETTINGS):
        if names is not None and name not in names:
            continue
        broker_name = GROUP_SETTINGS[name][3]
        found = [{"name": name, "value": overrides[name], "source": SOURCE_GROUP}] if name in overrides else []
        if broker_name is None:
            found.append({"name": name, "value": GROUP_SETTINGS[name][1], "source": SOURCE_DEFAULT})
        else:
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
) -> dict | None:
    """The error answer for a resource we cannot alter, or None for an existing topic or a group. As Kafka's
    ConfigAdminManager.preprocess: a config named twice, or a null value (but a DELETE's), is an invalid request."""
    base = {"resource_type": resource["resource_type"], "resource_name": resource["resource_name"]}
    if ctx.broker.authorizer is not None:
        refused = config_refusal(ctx, resource["resource_type"], resource["resource_name"], ALTER_CONFIGS)
        if refused is not None:  # as Kafka's controller answers (ControllerApis.authorizeAlterResource)
            return {**base, "error_code": refused[0], "error_message": refused[1]}
    if resource["resource_type"] not in (TOPIC_RESOURCE, GROUP_RESOURCE):
        return {**base, "error_code": ErrorCode.INVALID_REQUEST, "error_message": "Only topic and group configs can be altered."}
    names = [c["name"] for c in resource["configs"]]
    if len(set(names)) != len(names):
        return {**base, "error_code": ErrorCode.INVALID_REQUEST, "error_message": "Error due to duplicate config keys"}
    nulls = [c["name"] for c in resource["configs"] if c["value"] is None and not null_allowed(c)]
    if nulls:
        return {**base, "error_code": ErrorCode.INVALID_REQUEST, "error_message": f"Null value not supported for : {', '.join(nulls)}"}
    if resource["resource_type"] == TOPIC_RESOURCE and ctx.broker.topic(resource["resource_name"]) is None:
        return {**base, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "error_message": "Topic does not exist."}
    return None


@api(33, 0, 2)
async def alter_configs(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    responses = []
    for resource in body["resources"]:
        response = check_resource(ctx, resource, lambda config: False)
        if response is None:
            new = {c["name"]: c["value"] for c in resource["configs"]}
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


@api(44, 0, 1)
async def incremental_alter_configs(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    from minibroker.kafka_settings import GROUP_SETTINGS, TOPIC_SETTINGS

    responses = []
    for resource in body["resources"]:
        response = check_resource(ctx, resource, lambda config: config["config_operation"] == OP_DELETE)
        if response is None:
            name = resource["resource_name"]
            if resource["resource_type"] == GROUP_RESOURCE:
                new = ctx.broker.group_configs.overrides(name)
                defaults = {n: ctx.broker.group_configs.default(n) for n in GROUP_SETTINGS}
                types: dict[str, tuple] = GROUP_SETTINGS
            else:
                new = dict(ctx.broker.topic(name).overrides)
                defaults = ctx.broker.logs.default_config.to_kafka_configs()
                types = TOPIC_SETTINGS
            try:
                for op in resource["configs"]:
                    incremental_change(new, op, defaults, types)
            except InvalidConfigError as exc:
                response = {
                    "resource_type": resource["resource_type"], "resource_name": name,
                    "error_code": ErrorCode.INVALID_CONFIG, "error_message": str(exc),
                }
            else:
                response = apply_configs(ctx, resource, new, body["validate_only"])
        responses.append(response)
    return {"responses": responses}
