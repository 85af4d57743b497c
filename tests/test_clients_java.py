"""The real Apache Kafka Java client (kafka-clients 3.9.1) against one broker and against a 3-node cluster: producing
and consuming with every codec, consumer groups (classic and KIP-848, and migrating between them), static
membership, the cooperative-sticky assignor, the idempotent producer, transactions, the Admin API as Spring's
KafkaAdmin and Kafka Streams use it, SASL logins, SCRAM users made with the Admin, and (on the cluster) a crashing
node.

Each cluster size runs every scenario in one JVM (tests/java/Driver.java, scenarios in parallel threads); the tests
below check each scenario's JSON answer. The client comes from tests/javautil.py; without a JDK or the download
these tests skip with the reason."""

from __future__ import annotations

import json
import re
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from minibroker.cluster.racks import RACK_AWARE_SELECTOR
from minibroker.control_client import ControlClient

from tests import javautil
from tests.brokerproc import BrokerProcess
from tests.javautil import JavaClient, JavaUnavailable, build

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PROTOCOLS = ["classic", "consumer"]
SCENARIOS = [
    *(f"produce_consume:{codec}" for codec in CODECS),
    *(f"group:{protocol}" for protocol in PROTOCOLS),
    *(f"static_membership:{protocol}" for protocol in PROTOCOLS),
    *(f"regex_subscription:{protocol}" for protocol in PROTOCOLS),
    *(f"auto_commit:{protocol}" for protocol in PROTOCOLS),
    "cooperative_sticky", "mixed_group", "large_message", "reset_past_end", "rack_fetch", "auto_create", "acks:0",
    "acks:1",
    *(f"transactions:{codec}" for codec in ("none", "zstd")),
    "idempotent", "consume_transform_produce", "pending_offsets", "fencing", "admin_transactions",
    "admin_cluster", "admin_records", "admin_groups", "admin_invalid_configs", "admin_broker_configs",
    "admin_partitions",
]
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
USER, PASSWORD = "alice", "alice-Secret-1"
# Scenarios whose arguments are addresses known once the broker runs: name -> spec to format with them.
SECURED = {
    **{f"sasl:{mechanism}": f"sasl:{mechanism},{USER},{PASSWORD},{{sasl}}" for mechanism in MECHANISMS},
    "scram_users": "scram_users:{sasl}",
}
# On a cluster only, one at a time (they stop nodes), given the control API's URL.
FAILOVERS = {
    **{f"failover:{protocol}": f"failover:{protocol},{{control}}" for protocol in PROTOCOLS},
    "transaction_failover": "transaction_failover:{control}",
}
NODE = re.compile(r" (\d+)=(\S+:\d+)")
SASL_LISTENER = re.compile(r"listener SASL_PLAINTEXT \(SASL_PLAINTEXT\) on (\S+:\d+)")
CONTROL = re.compile(r"control (http://\S+),")
CLUSTER_ID = re.compile(r"cluster id (\S+),")


class Run:
    """One cluster size's broker and the Java driver's answers, by scenario."""

    def __init__(self, nodes: int, proc: BrokerProcess, control: str, prefix: str,
                 answers: dict[str, dict[str, Any]]) -> None:
        self.nodes = nodes
        self.node_ids = list(range(1, nodes + 1))  # node.id 1 alone, 1..N in a cluster
        self.cluster_id = CLUSTER_ID.search(proc.log_text()).group(1)
        self.control = control
        self.prefix = prefix
        self.answers = answers
        self.data_dir = proc.data_dir

    def batches(self, topic: str, partition: int) -> list[dict[str, Any]]:
        """The partition's stored batches, as the control API shows them (minibroker dump --json)."""
        url = f"{self.control}/v1/partitions/{topic}/{partition}/records?offset=0&max=1000"
        with urllib.request.urlopen(url, timeout=10) as answer:
            return json.load(answer)["batches"]

    def result(self, scenario: str) -> dict[str, Any]:
        answer = self.answers[scenario]
        assert answer["ok"], f"{scenario} failed in the Java client:\n{answer['error']}"
        return answer["result"]

    def name(self, scenario: str) -> str:
        """The topic (and group) the driver named after the scenario."""
        return f"{self.prefix}-{re.sub(r'[^A-Za-z0-9._-]', '-', scenario)}"


@pytest.fixture(scope="session")
def java_client(tmp_path_factory: pytest.TempPathFactory) -> JavaClient:
    try:
        return build(tmp_path_factory.mktemp("java-classes"))
    except JavaUnavailable as reason:
        pytest.skip(f"Java client unavailable: {reason}")


@pytest.fixture(scope="module", params=[1, 3], ids=["1-node", "3-nodes"])
def run(request: pytest.FixtureRequest, java_client: JavaClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    nodes = request.param
    proc = BrokerProcess(tmp_path_factory.mktemp(f"java-{nodes}") / "data", f"nodes={nodes}",
                         "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                         "group.initial.rebalance.delay.ms=0", "control.port=0", "broker.rack=rack-{node}",
                         f"replica.selector.class={RACK_AWARE_SELECTOR}", "transcript.enabled=true",
                         "transcript.max.entries=1000000",
                         env={"MINIBROKER_SASL_USERS": f"{USER}:{PASSWORD}"})
    try:
        proc.start()
        log = proc.log_text()
        addresses = ",".join(address for _, address in NODE.findall(log)) or proc.bootstrap
        found = {"sasl": ",".join(SASL_LISTENER.findall(log)), "control": CONTROL.search(log).group(1)}
        prefix = f"j{uuid.uuid4().hex[:8]}"
        specs = {**{name: name for name in SCENARIOS}, **{name: spec.format(**found) for name, spec in SECURED.items()}}
        answers = java_client.run(addresses, prefix, list(specs.values()))
        answers = {name: answers[spec] for name, spec in specs.items()}
        if nodes > 1:  # stopping a node would disturb the other scenarios: after them, each in a JVM of its own
            for name, spec in FAILOVERS.items():
                spec = spec.format(**found)
                answers[name] = java_client.run(addresses, prefix, [spec])[spec]
        yield Run(nodes, proc, found["control"], prefix, answers)
    finally:
        proc.stop()


def partitions(topic: str, count: int) -> list[str]:
    return [f"{topic}-{p}" for p in range(count)]


@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume_with_headers(run: Run, codec: str) -> None:
    records = run.result(f"produce_consume:{codec}")["records"]
    assert sorted(int(r["key"][1:]) for r in records) == list(range(40))
    for record in records:
        n = int(record["key"][1:])
        assert record["partition"] == n % 2
        assert record["offset"] == n // 2
        assert record["value"] == f"value {n} " + "x" * 100
        assert record["headers"] == {"n": str(n), "codec": codec}
    topic = run.name(f"produce_consume:{codec}")
    stored = [batch for partition in (0, 1) for batch in run.batches(topic, partition)]
    assert {batch["compressCodec"] for batch in stored} == {codec}  # kept as the Java client compressed them
    assert all(batch["producerId"] >= 0 for batch in stored)  # idempotent: the Java default


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_group_shares_partitions_and_commits(run: Run, protocol: str) -> None:
    scenario = f"group:{protocol}"
    result = run.result(scenario)
    first, second = result["assignments"]
    assert first and second and not set(first) & set(second)
    assert sorted(first + second) == partitions(run.name(scenario), 4)
    assert result["values"] == 40 and result["committed_total"] == 40
    described = result["described"]
    assert described["state"] == "Stable"
    assert described["type"] == {"classic": "Classic", "consumer": "Consumer"}[protocol]
    assert described["coordinator"] in run.node_ids
    assert sorted(m["partitions"] for m in described["members"]) == sorted([first, second])
    assert result["state_after_close"] == "Empty"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_static_member_comes_back_to_its_assignment(run: Run, protocol: str) -> None:
    scenario = f"static_membership:{protocol}"
    result = run.result(scenario)
    everything = partitions(run.name(scenario), 2)
    assert result["first"]["assignment"] == result["second"]["assignment"] == everything
    assert result["first"]["instance"] == result["second"]["instance"] == "instance-1"
    # Closing a static member does not remove it from the group: it keeps its partitions for its return.
    assert result["after_first"]["members"] == [{"instance": "instance-1", "partitions": everything}]
    if protocol == "classic":  # the returning member takes its place without a rebalance
        assert result["second"]["generation"] == result["first"]["generation"]


def test_cooperative_sticky_moves_only_what_it_must(run: Run) -> None:
    result = run.result("cooperative_sticky")
    everything = partitions(run.name("cooperative_sticky"), 4)
    first, second = result["assignments"]
    assert len(first) == len(second) == 2 and sorted(first + second) == everything
    # The first member got everything, then gave up exactly the two partitions the second member took.
    assert result["first_events"] == [{"assigned": everything}, {"revoked": second}]
    assert result["described"]["assignor"] == "cooperative-sticky"


def test_a_consumer_protocol_member_joins_a_classic_group_and_leaves_it(run: Run) -> None:
    """KIP-848's online migration, both ways, with the Java client on both protocols."""
    result = run.result("mixed_group")
    everything = partitions(run.name("mixed_group"), 4)
    assert result["before"]["type"] == "Classic" and result["before"]["members"][0]["partitions"] == everything
    classic, modern = result["assignments"]
    assert classic and modern and sorted(classic + modern) == everything
    assert result["shared"]["type"] == "Consumer" and len(result["shared"]["members"]) == 2
    assert result["after"]["type"] == "Classic"
    assert result["after"]["members"] == [{"instance": None, "partitions": everything}]


def test_one_mib_record_needs_the_topic_override(run: Run) -> None:
    result = run.result("large_message")
    assert result["read"] == ["before", "big", "after"]
    assert result["default_limit"] == "org.apache.kafka.common.errors.RecordTooLargeException"


def test_consumer_past_the_log_end_resets_to_earliest(run: Run) -> None:
    assert run.result("reset_past_end")["values"] == [f"v{i}" for i in range(10)]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_crashed_leader_loses_and_repeats_nothing(run: Run, protocol: str) -> None:
    """The node leading partition 0, coordinating the group and named controller crashes (the control API's stop with
    clean=false) between rounds of produce and consume: the idempotent producer, the group and the Admin client go on
    with the other nodes, and again once it is back."""
    if run.nodes == 1:
        pytest.skip("a failover needs another node to take over")
    result = run.result(f"failover:{protocol}")
    assert result["new_leader"] != result["stopped"] and result["new_leader"] in run.node_ids
    live = set(run.node_ids) - {result["stopped"]}
    assert result["coordinator_before"] == result["stopped"] and result["coordinator_after"] in live
    assert result["controller_while_stopped"] in live and result["created_while_stopped"] is True
    assert (result["distinct"], result["duplicates"], result["committed_total"]) == (90, 0, 90)


def test_a_transaction_survives_its_coordinator_crashing(run: Run) -> None:
    if run.nodes == 1:
        pytest.skip("a coordinator failover needs another node to take over")
    result = run.result("transaction_failover")
    assert result["new_coordinator"] != result["stopped"] and result["new_coordinator"] in run.node_ids
    assert result["state"] == "CompleteCommit" and result["read_committed"] == 20


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_sasl_login_with_the_java_clients_own_implementation(run: Run, mechanism: str) -> None:
    """The SASL_PLAINTEXT listener of every node: records go through with the right password, a wrong one fails."""
    result = run.result(f"sasl:{mechanism}")
    assert result["read"] == [f"v{i}" for i in range(5)]
    assert result["wrong_password"] == "org.apache.kafka.common.errors.SaslAuthenticationException"


def test_scram_users_made_with_the_java_admin(run: Run) -> None:
    """alterUserScramCredentials / describeUserScramCredentials, then logins on the SASL listener of every node."""
    result = run.result("scram_users")
    assert result["described"] == ["SCRAM-SHA-256:4096", "SCRAM-SHA-512:8192"] and result["listed"]
    assert result["too_few_iterations"] == "org.apache.kafka.common.errors.UnacceptableCredentialException"
    assert result["delete_missing"] == result["describe_missing"] == "org.apache.kafka.common.errors.ResourceNotFoundException"
    assert result["read"] == [f"v{i}" for i in range(5)]
    assert result["wrong_password"] == result["after_delete"] == "org.apache.kafka.common.errors.SaslAuthenticationException"
    assert result["other_mechanism"] == "accepted"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_pattern_subscription_picks_up_a_topic_created_later(run: Run, protocol: str) -> None:
    scenario = f"regex_subscription:{protocol}"
    result = run.result(scenario)
    early, late = f"{run.name(scenario)}-early", f"{run.name(scenario)}-late"
    assert result["assignment"] == [f"{early}-0", f"{late}-0"]
    assert result["values"] == [f"{topic}/v{i}" for topic in (early, late) for i in range(3)]


def test_a_consumer_with_client_rack_reads_from_the_node_in_its_rack(run: Run) -> None:
    """KIP-392 with the Java consumer (client.rack): the leader sends it to the replica in its rack, which serves it."""
    result = run.result("rack_fetch")
    assert result["racks"] == {str(node): f"rack-{node}" for node in run.node_ids}
    assert result["client_rack"] == f"rack-{run.node_ids[-1]}"
    assert result["values"] == sorted(f"v{i}" for i in range(30))  # every record, once
    served = [(entry["node"], batch["partition"]) for entry in ControlClient(run.control).transcript()
              if entry["api"] == "Fetch" and entry["client_id"] == run.name("rack_fetch")
              for batch in entry.get("response_batches", [])]
    assert {partition for _, partition in served} == {0, 1, 2}
    assert {node for node, _ in served} == {run.node_ids[-1]}, served


def test_producer_metadata_creates_a_missing_topic(run: Run) -> None:
    assert run.result("auto_create") == {"produced_created": True, "consumed_created": False, "partitions": 1}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_auto_commit_the_java_default(run: Run, protocol: str) -> None:
    assert run.result(f"auto_commit:{protocol}") == {"read": 10, "committed_total": 10}


@pytest.mark.parametrize("acks", ["0", "1"])
def test_producer_without_idempotence(run: Run, acks: str) -> None:
    result = run.result(f"acks:{acks}")
    assert result["values"] == [f"v{i}" for i in range(20)]
    assert result["offsets"] == ([-1] * 20 if acks == "0" else list(range(20)))  # acks=0: no answer to learn from


def test_idempotent_producer_is_the_default(run: Run) -> None:
    result = run.result("idempotent")
    assert result["values"] == [f"v{i}" for i in range(30)]
    [producer] = result["producers"]
    assert producer["producer_id"] >= 0 and producer["epoch"] == 0 and producer["last_sequence"] == 29
    assert producer["txn_start_offset"] is None


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_transactions_commit_abort_and_are_described(run: Run, codec: str) -> None:
    result = run.result(f"transactions:{codec}")
    topic = run.name(f"transactions:{codec}")
    ongoing = result["ongoing"]
    assert ongoing["state"] == "Ongoing" and ongoing["partitions"] == [f"{topic}-0"] and ongoing["timeout_ms"] == 60000
    assert result["listed"] == ["Ongoing"]
    # What Kafka Streams reads with listOffsets: the high watermark, and the last stable offset before the open batch.
    assert result["ongoing_latest"] == {"read_uncommitted": 1, "read_committed": 0}
    assert result["committed_latest"] == {"read_uncommitted": 2, "read_committed": 2}  # the commit marker is offset 1
    assert result["ongoing_producers"] == [
        {"producer_id": ongoing["producer_id"], "epoch": ongoing["epoch"], "last_sequence": 0, "txn_start_offset": 0}]
    assert result["committed"]["state"] == "CompleteCommit" and result["committed"]["partitions"] == []
    assert result["aborted"]["state"] == "CompleteAbort"
    assert result["committed"]["producer_id"] == result["aborted"]["producer_id"] == ongoing["producer_id"]
    assert result["read_committed"] == ["committed", "committed too"]
    assert result["read_uncommitted"] == ["committed", "aborted", "committed too"]


def test_consume_transform_produce_commits_offsets_in_the_transaction(run: Run) -> None:
    result = run.result("consume_transform_produce")
    assert result["output"] == [f"V{i}" for i in range(10)]
    assert result["committed"] == 10  # listConsumerGroupOffsets with requireStable, as Kafka Streams asks


def test_offsets_pending_in_a_transaction_are_unstable(run: Run) -> None:
    """KIP-447: while a transaction holds offsets for the group, fetches requiring stable offsets get
    UNSTABLE_OFFSET_COMMIT (the consumer retries it until its timeout, the Admin API leaves the partition out)."""
    assert run.result("pending_offsets") == {
        "consumer_while_open": "org.apache.kafka.common.errors.TimeoutException",
        "admin_while_open": 1,
        "stable_admin_while_open": None,
        "consumer_after_commit": 5,
        "stable_admin_after_commit": 5,
    }


def test_second_producer_fences_the_first(run: Run) -> None:
    result = run.result("fencing")
    assert result["first_commit"] == "org.apache.kafka.common.errors.ProducerFencedException"
    assert result["read_committed"] == ["winner"]


def test_admin_aborts_a_hanging_transaction_and_fences_a_producer(run: Run) -> None:
    result = run.result("admin_transactions")
    # abortTransaction wrote the abort marker: the last stable offset passed the hanging record.
    assert result["after_abort"] == {"read_uncommitted": 2, "read_committed": 2}
    assert [p["txn_start_offset"] for p in result["producers_after_abort"]] == [None]
    # fenceProducers aborted the open transaction and bumped the epoch, as a new producer's InitProducerId does.
    assert result["epoch_bumped"] is True and result["state_after_fence"] == "Empty"
    assert result["fenced_commit"] == "org.apache.kafka.common.errors.ProducerFencedException"
    assert result["read_committed"] == []


def test_admin_cluster_topics_and_configs(run: Run) -> None:
    result = run.result("admin_cluster")
    assert sorted(result["nodes"]) == run.node_ids
    assert result["controller"] in run.node_ids
    assert result["cluster_id"] == run.cluster_id
    by_name = result["by_name"]
    assert by_name["name"] == run.name("admin_cluster") and len(by_name["partitions"]) == 3
    for partition in by_name["partitions"]:
        assert len(partition["replicas"]) == min(3, run.nodes) and partition["leader"] in partition["replicas"]
        assert partition["isr"] == len(partition["replicas"])
    assert sorted(p["leader"] for p in by_name["partitions"]) == sorted(run.node_ids * (3 // run.nodes))  # one each
    assert result["by_id"] == by_name
    assert result["unknown_id"] == "org.apache.kafka.common.errors.UnknownTopicIdException"
    assert result["topic_retention"] == {"value": "123456", "source": "DYNAMIC_TOPIC_CONFIG"}
    assert sorted(result["broker_num_partitions"]) == [str(node) for node in run.node_ids]
    assert all(entry["value"] == "1" for entry in result["broker_num_partitions"].values())
    assert result["altered_retention"] == {"value": "654321", "source": "DYNAMIC_TOPIC_CONFIG"}
    assert result["altered_cleanup"] == {"value": "compact", "source": "DYNAMIC_TOPIC_CONFIG"}
    assert result["defaults"] == [1, 1]  # num.partitions and default.replication.factor
    assert result["exists"] == "org.apache.kafka.common.errors.TopicExistsException"
    assert result["validated_created"] is False  # validateOnly
    assert result["grown"] == 4  # createPartitions, as Spring's KafkaAdmin grows a declared topic
    assert result["missing_name"] == "org.apache.kafka.common.errors.UnknownTopicOrPartitionException"
    assert result["after_delete"] == "org.apache.kafka.common.errors.UnknownTopicIdException"
    assert result["listed_after_delete"] is False


def test_admin_list_offsets_and_delete_records(run: Run) -> None:
    result = run.result("admin_records")
    assert result["for_time"] == 5  # offsetsForTimes: the first record at or after the time
    assert result["for_late_time"] is None
    assert result["before"] == {"earliest": 0, "latest": 10, "max_timestamp": 6}
    assert result["low_watermark"] == 4
    assert result["after"] == {"earliest": 4, "latest": 10, "max_timestamp": 6}
    [producer] = result["producers"]
    assert producer["last_sequence"] == 9


def test_admin_consumer_group_apis(run: Run) -> None:
    result = run.result("admin_groups")
    topic = run.name("admin_groups")
    assert result["listed"] == [{"state": "Empty", "type": "Classic"}]
    assert result["described"]["state"] == "Empty" and result["described"]["members"] == []
    # offset/metadata: the consumer committed its positions with a note, alterConsumerGroupOffsets one without
    assert result["offsets"] == {f"{topic}-0": "5/note-0", f"{topic}-1": "5/note-1"}
    assert result["altered"] == {f"{topic}-0": "1/", f"{topic}-1": "5/note-1"}
    assert result["deleted"] == {f"{topic}-0": "1/"}
    assert result["listed_after_delete"] is False  # deleteConsumerGroups


def test_admin_refuses_invalid_topic_configs(run: Run) -> None:
    invalid = "org.apache.kafka.common.errors.InvalidConfigurationException"
    assert run.result("admin_invalid_configs") == {"number": invalid, "choice": invalid, "unknown": invalid, "created": 0}


def test_broker_configs_with_the_java_admin(run: Run) -> None:
    """incrementalAlterConfigs on each node's BROKER resource and on the cluster default (""), as kafka-configs.sh
    --entity-type brokers does; read-only and per-broker-only settings refused."""
    result = run.result("admin_broker_configs")
    assert result["default"] == {"value": "2", "source": "DYNAMIC_DEFAULT_BROKER_CONFIG"}
    assert sorted(result["nodes"]) == [str(node) for node in run.node_ids]
    for node, (own, default, log_dirs_read_only) in result["nodes"].items():
        assert own == {"value": f"{node}000000.0", "source": "DYNAMIC_BROKER_CONFIG"}
        assert default == {"value": "2", "source": "DYNAMIC_DEFAULT_BROKER_CONFIG"} and log_dirs_read_only is True
    invalid = "org.apache.kafka.common.errors.InvalidRequestException"
    assert result["read_only"] == result["per_broker_at_default"] == invalid
    assert result["after_delete"] == {"value": "1", "source": "DEFAULT_CONFIG"}


def test_admin_partition_administration(run: Run) -> None:
    """createPartitions with assignments, a reassignment to the reversed replicas, a preferred election, and
    describeLogDirs' sizes against the segment files (one node: every replica list is [1], nothing to elect)."""
    result = run.result("admin_partitions")
    forward = run.node_ids[:3]
    backward = forward[::-1]
    assert [p["replicas"] for p in result["grown"]] == [forward, backward]
    assert [p["leader"] for p in result["grown"]] == [forward[0], backward[0]]
    assert result["duplicate"] == "org.apache.kafka.common.errors.InvalidReplicaAssignmentException"
    assert result["reassigned"]["replicas"] == backward and result["reassigned"]["leader"] == forward[0]
    assert result["ongoing"] == 0
    assert result["cancel_none"] == "org.apache.kafka.common.errors.NoReassignmentInProgressException"
    not_needed = "org.apache.kafka.common.errors.ElectionNotNeededException"
    assert result["elected"] == ("none" if run.nodes > 1 else not_needed)
    assert result["elected_again"] == not_needed
    assert result["after_election"]["leader"] == backward[0]
    data_dir = run.data_dir.absolute()
    assert result["log_dir"] == str(data_dir)
    size = sum(path.stat().st_size for path in (data_dir / f"{run.name('admin_partitions')}-0").glob("*.log"))
    assert size > 0 and result["sizes"] == {str(node): size for node in backward}
    assert result["moved_in_place"] == "none"
    assert result["moved_away"] == "org.apache.kafka.common.errors.LogDirNotFoundException"


def test_without_a_jdk_the_java_tests_skip_with_the_reason(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaUnavailable, match="no javac/java on PATH"):
        build(tmp_path / "classes", tmp_path / "artifacts")


def test_a_failed_download_is_a_reason_to_skip(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(javautil, "PIP", ("false",))
    with pytest.raises(JavaUnavailable, match="pip download .* failed"):
        javautil.jars(tmp_path / "artifacts")
    assert not (tmp_path / "artifacts" / "lib").exists()
