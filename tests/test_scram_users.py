"""SCRAM users managed over the wire (DescribeUserScramCredentials, AlterUserScramCredentials), end to end: the
confluent-kafka admin client creates, describes and deletes credentials, and confluent-kafka producers and consumers
log in with them on a SASL listener at once (on every node of a cluster); Kafka's refusals (iterations, mechanisms,
users named twice, missing credentials, empty names) over the raw protocol where librdkafka checks them itself;
credentials survive a restart, a reset and a snapshot's restore; the authorizer guards both APIs; nothing secret
reaches the log or the credential file."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from minibroker.acls.operations import ALTER, DESCRIBE
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import Broker
from tests.aclutil import ADMIN, CLUSTER, acl_broker, grant, login
from tests.aclutil import password as acl_password
from tests.brokerproc import BrokerProcess
from tests.clientutil import (
    TIMEOUT_S,
    Deadline,
    RawConnection,
    check_round_trip,
    confluent_consume,
    confluent_create_topic,
    confluent_produce,
    counts_by_partition,
    make_messages,
)
from tests.test_control import call as control_call
from tests.test_security import call, raw_login

DESCRIBE_SCRAM, ALTER_SCRAM, METADATA = 50, 51, 3
SHA_256, SHA_512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
NAMES = {SHA_256: "SCRAM-SHA-256", SHA_512: "SCRAM-SHA-512"}
SETTINGS_USER, SETTINGS_PASSWORD = "alice", "Alice-pw-4k2m"
SALT = b"Fixed-salt-for-raw-requests"


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        tmp_path_factory.mktemp("scram-users") / "data",
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        f"sasl.users={SETTINGS_USER}:{SETTINGS_PASSWORD}", "num.partitions=2",
    )
    try:
        yield proc.start()
    finally:
        proc.stop()


def plaintext(broker: BrokerProcess) -> str:
    return f"127.0.0.1:{broker.listener_ports['PLAINTEXT']}"


def sasl_address(broker: BrokerProcess) -> str:
    return f"127.0.0.1:{broker.listener_ports['SASL_PLAINTEXT']}"


def admin(bootstrap: str, **settings: Any) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, **settings})


def upsert(client: AdminClient, user: str, password: str, mechanism: ScramMechanism = SHA_256, iterations: int = 8192) -> None:
    upsertion = UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, iterations), password.encode())
    client.alter_user_scram_credentials([upsertion])[user].result(TIMEOUT_S)


def delete(client: AdminClient, user: str, mechanism: ScramMechanism) -> None:
    client.alter_user_scram_credentials([UserScramCredentialDeletion(user, mechanism)])[user].result(TIMEOUT_S)


def described(client: AdminClient, *users: str) -> dict[str, list[tuple[ScramMechanism, int]]]:
    """{user: [(mechanism, iterations)]} for ``users``, or for every user when none is named."""
    if users:
        answers = {user: future.result(TIMEOUT_S) for user, future in client.describe_user_scram_credentials(list(users)).items()}
    else:
        answers = client.describe_user_scram_credentials().result(TIMEOUT_S)
    return {user: sorted((info.mechanism, info.iterations) for info in answer.scram_credential_infos)
            for user, answer in answers.items()}


def sasl_settings(broker: BrokerProcess, user: str, password: str, mechanism: ScramMechanism) -> dict[str, Any]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": NAMES[mechanism], "sasl.username": user,
            "sasl.password": password}


def round_trip(broker: BrokerProcess, topic: str, settings: dict[str, Any]) -> None:
    """Produce and consume as the SASL user (the topic made over PLAINTEXT)."""
    confluent_create_topic(plaintext(broker), topic, partitions=2)
    messages = make_messages(20)
    placements = confluent_produce(sasl_address(broker), topic, messages, **settings)
    consumed = confluent_consume(sasl_address(broker), topic, counts_by_partition(placements), partitions=2, **settings)
    check_round_trip(messages, placements, consumed)


def login_error(broker: BrokerProcess, user: str, password: str, mechanism: ScramMechanism) -> KafkaError | None:
    """The first error a producer meets logging in (None: it logged in and read metadata)."""
    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": sasl_address(broker), "error_cb": errors.append,
                         **sasl_settings(broker, user, password, mechanism)})
    try:
        deadline = Deadline(TIMEOUT_S)
        while not errors and deadline.left():
            try:
                producer.list_topics(timeout=0.5)
                return None
            except KafkaException:
                producer.poll(0.1)
    finally:
        producer.close()
    assert errors, "neither logged in nor failed"
    return errors[0]


def assert_login_fails(broker: BrokerProcess, user: str, password: str, mechanism: ScramMechanism) -> None:
    error = login_error(broker, user, password, mechanism)
    assert error is not None and error.code() == KafkaError._AUTHENTICATION, error
    assert f"invalid credentials with SASL mechanism {NAMES[mechanism]}" in error.str()


def salted(password: str, mechanism: int, iterations: int = 4096) -> bytes:
    return hashlib.pbkdf2_hmac("sha256" if mechanism == 1 else "sha512", password.encode(), SALT, iterations)


def raw_upsertion(name: str, mechanism: int = 1, iterations: int = 4096, password: str = "Raw-pw-1") -> dict[str, Any]:
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": SALT,
            "salted_password": salted(password, mechanism, max(iterations, 1))}


def raw_alter(address: str, deletions: list[dict[str, Any]], upsertions: list[dict[str, Any]]) -> list[tuple[str, int, str | None]]:
    with RawConnection(address) as conn:
        answer = call(conn, ALTER_SCRAM, 0, {"deletions": deletions, "upsertions": upsertions})
    return [(r["user"], r["error_code"], r["error_message"]) for r in answer["results"]]


def raw_describe(address: str, users: list[str] | None) -> dict[str, Any]:
    with RawConnection(address) as conn:
        return call(conn, DESCRIBE_SCRAM, 0, {"users": None if users is None else [{"name": u} for u in users]})


# ---- logins with credentials made over the API ----


@pytest.mark.parametrize("mechanism", [SHA_256, SHA_512], ids=["sha256", "sha512"])
def test_a_new_user_logs_in_at_once(sasl_broker: BrokerProcess, topic_name: str, mechanism: ScramMechanism) -> None:
    user, password = f"u-{topic_name}", "New-user-pw-8c1"
    client = admin(plaintext(sasl_broker))
    assert_login_fails(sasl_broker, user, password, mechanism)
    upsert(client, user, password, mechanism)
    round_trip(sasl_broker, topic_name, sasl_settings(sasl_broker, user, password, mechanism))
    assert_login_fails(sasl_broker, user, "Wrong-guess-2z", mechanism)
    other = SHA_512 if mechanism is SHA_256 else SHA_256
    assert_login_fails(sasl_broker, user, password, other)  # a credential is one mechanism's


def test_replaced_and_deleted_credentials(sasl_broker: BrokerProcess, topic_name: str) -> None:
    user = f"u-{topic_name}"
    client = admin(plaintext(sasl_broker))
    upsert(client, user, "First-pw-1", SHA_512)
    upsert(client, user, "Second-pw-2", SHA_512, iterations=4096)
    assert described(client, user) == {user: [(SHA_512, 4096)]}
    assert login_error(sasl_broker, user, "Second-pw-2", SHA_512) is None
    assert_login_fails(sasl_broker, user, "First-pw-1", SHA_512)
    delete(client, user, SHA_512)
    assert_login_fails(sasl_broker, user, "Second-pw-2", SHA_512)
    with pytest.raises(KafkaException, match="RESOURCE_NOT_FOUND"):
        described(client, user)


def test_describe_lists_mechanisms_and_iterations(sasl_broker: BrokerProcess, topic_name: str) -> None:
    user = f"u-{topic_name}"
    client = admin(plaintext(sasl_broker))
    upsert(client, user, "Pw-256-1", SHA_256, iterations=4096)
    upsert(client, user, "Pw-512-1", SHA_512, iterations=16384)
    assert described(client, user) == {user: [(SHA_256, 4096), (SHA_512, 16384)]}
    everyone = described(client)
    assert everyone[user] == [(SHA_256, 4096), (SHA_512, 16384)]
    assert everyone[SETTINGS_USER] == [(SHA_256, 4096), (SHA_512, 4096)]  # sasl.users' credentials are listed too
    with pytest.raises(KafkaException, match="RESOURCE_NOT_FOUND"):
        described(client, f"nobody-{topic_name}")


def test_an_override_replaces_the_settings_credential_of_its_mechanism_only(tmp_path: Path) -> None:
    proc = BrokerProcess(tmp_path / "data", "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                         f"sasl.users={SETTINGS_USER}:{SETTINGS_PASSWORD}")
    try:
        proc.start()
        client = admin(plaintext(proc))
        upsert(client, SETTINGS_USER, "Replaced-pw-3", SHA_512, iterations=8192)
        assert login_error(proc, SETTINGS_USER, "Replaced-pw-3", SHA_512) is None
        assert_login_fails(proc, SETTINGS_USER, SETTINGS_PASSWORD, SHA_512)
        assert login_error(proc, SETTINGS_USER, SETTINGS_PASSWORD, SHA_256) is None
        delete(client, SETTINGS_USER, SHA_256)  # a credential sasl.users gave can be deleted too
        assert_login_fails(proc, SETTINGS_USER, SETTINGS_PASSWORD, SHA_256)
        assert described(client, SETTINGS_USER) == {SETTINGS_USER: [(SHA_512, 8192)]}
        with RawConnection(sasl_address(proc)) as conn:  # PLAIN checks sasl.users, which the SCRAM APIs do not change
            assert raw_login(conn, "PLAIN", SETTINGS_USER, SETTINGS_PASSWORD)["error_code"] == 0
    finally:
        proc.stop()


# ---- Kafka's refusals ----


def test_iterations_outside_kafkas_bounds_are_unacceptable(sasl_broker: BrokerProcess, topic_name: str) -> None:
    client = admin(plaintext(sasl_broker))
    cases = {f"few-{topic_name}": 4095, f"many-{topic_name}": 16385, f"min-{topic_name}": 4096, f"max-{topic_name}": 16384}
    upsertions = [UserScramCredentialUpsertion(user, ScramCredentialInfo(SHA_256, n), b"Pw-1") for user, n in cases.items()]
    futures = client.alter_user_scram_credentials(upsertions)
    for user in (f"min-{topic_name}", f"max-{topic_name}"):
        assert futures[user].result(TIMEOUT_S) is None
    for user, message in ((f"few-{topic_name}", "Too few iterations"), (f"many-{topic_name}", "Too many iterations")):
        with pytest.raises(KafkaException) as failure:
            futures[user].result(TIMEOUT_S)
        assert failure.value.args[0].code() == KafkaError.UNACCEPTABLE_CREDENTIAL
        assert failure.value.args[0].str() == message
    assert f"few-{topic_name}" not in described(client)


def test_deleting_a_missing_credential_is_resource_not_found(sasl_broker: BrokerProcess, topic_name: str) -> None:
    client = admin(plaintext(sasl_broker))
    upsert(client, f"u-{topic_name}", "Pw-1", SHA_256)
    for user, mechanism in ((f"nobody-{topic_name}", SHA_256), (f"u-{topic_name}", SHA_512)):
        with pytest.raises(KafkaException) as failure:
            delete(client, user, mechanism)
        assert failure.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND
        assert failure.value.args[0].str() == "Attempt to delete a user credential that does not exist"


def test_a_user_altered_twice_is_duplicate_resource(sasl_broker: BrokerProcess, topic_name: str) -> None:
    user, bystander = f"u-{topic_name}", f"b-{topic_name}"
    client = admin(plaintext(sasl_broker))
    futures = client.alter_user_scram_credentials([
        UserScramCredentialUpsertion(user, ScramCredentialInfo(SHA_256, 4096), b"Pw-1"),
        UserScramCredentialUpsertion(bystander, ScramCredentialInfo(SHA_256, 4096), b"Pw-2"),
        UserScramCredentialUpsertion(user, ScramCredentialInfo(SHA_512, 4096), b"Pw-1"),
    ])
    with pytest.raises(KafkaException) as failure:
        futures[user].result(TIMEOUT_S)
    assert failure.value.args[0].code() == KafkaError.DUPLICATE_RESOURCE
    assert failure.value.args[0].str() == "A user credential cannot be altered twice in the same request"
    assert futures[bystander].result(TIMEOUT_S) is None
    assert user not in described(client)  # neither mention took effect


def test_raw_alteration_results_in_kafkas_order(sasl_broker: BrokerProcess, topic_name: str) -> None:
    """What librdkafka refuses before sending (empty names, unknown mechanisms) the broker refuses as Kafka does;
    results list the deletions done, the upsertions done, then the refusals in the order met."""
    address = plaintext(sasl_broker)
    kept, missing, gone = f"k-{topic_name}", f"d-{topic_name}", f"g-{topic_name}"
    assert raw_alter(address, [], [raw_upsertion(gone)]) == [(gone, 0, None)]
    results = raw_alter(
        address,
        [{"name": gone, "mechanism": 1}, {"name": missing, "mechanism": 1}, {"name": "", "mechanism": 1},
         {"name": "x-" + topic_name, "mechanism": 0}],
        [raw_upsertion(missing), raw_upsertion(kept), raw_upsertion("y-" + topic_name, mechanism=3),
         raw_upsertion("z-" + topic_name, iterations=1)],
    )
    assert results == [
        (gone, 0, None),
        (kept, 0, None),
        (missing, ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        ("", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        ("x-" + topic_name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ("y-" + topic_name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ("z-" + topic_name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
    ]
    # a user deleted and upserted in one request: DUPLICATE_RESOURCE, and neither happens
    assert raw_alter(address, [{"name": kept, "mechanism": 1}], [raw_upsertion(kept, mechanism=2)]) == [
        (kept, ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
    ]
    with RawConnection(sasl_address(sasl_broker)) as conn:  # the raw upsertion's salted password logs in
        assert raw_login(conn, "SCRAM-SHA-256", kept, "Raw-pw-1")["error_code"] == 0


def test_raw_describe_of_unknown_and_duplicate_users(sasl_broker: BrokerProcess, topic_name: str) -> None:
    address = plaintext(sasl_broker)
    user = f"u-{topic_name}"
    assert raw_alter(address, [], [raw_upsertion(user, mechanism=2, iterations=5000)]) == [(user, 0, None)]
    answer = raw_describe(address, [user, f"nobody-{topic_name}", SETTINGS_USER, SETTINGS_USER])
    assert answer["error_code"] == 0
    assert answer["results"] == [
        {"user": user, "error_code": 0, "error_message": None, "credential_infos": [{"mechanism": 2, "iterations": 5000}]},
        {"user": f"nobody-{topic_name}", "error_code": ErrorCode.RESOURCE_NOT_FOUND,
         "error_message": f"Attempt to describe a user credential that does not exist: nobody-{topic_name}", "credential_infos": []},
        {"user": SETTINGS_USER, "error_code": ErrorCode.DUPLICATE_RESOURCE,
         "error_message": f"Cannot describe SCRAM credentials for the same user twice in a single request: {SETTINGS_USER}",
         "credential_infos": []},
    ]
    for everyone in (None, []):  # null or empty: every user with a credential
        users = [result["user"] for result in raw_describe(address, everyone)["results"]]
        assert user in users and SETTINGS_USER in users and users == sorted(users)


# ---- nodes, restarts, resets ----


def test_every_node_of_a_cluster_authenticates_the_new_user(tmp_path: Path) -> None:
    proc = BrokerProcess(tmp_path / "data", "nodes=3", "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0")
    try:
        proc.start()
        upsert(admin(plaintext(proc)), "carol", "Carol-pw-5", SHA_512)
        with RawConnection(sasl_address(proc)) as conn:
            assert raw_login(conn, "SCRAM-SHA-512", "carol", "Carol-pw-5")["error_code"] == 0
            brokers = call(conn, METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})["brokers"]
        assert sorted(b["node_id"] for b in brokers) == [1, 2, 3]
        for entry in brokers:  # each node's SASL listener
            with RawConnection(f"{entry['host']}:{entry['port']}") as conn:
                assert raw_login(conn, "SCRAM-SHA-512", "carol", "Carol-pw-5")["error_code"] == 0
            with RawConnection(f"{entry['host']}:{entry['port']}") as conn:
                assert raw_login(conn, "SCRAM-SHA-512", "carol", "Wrong-pw-5")["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    finally:
        proc.stop()


def test_credentials_survive_a_restart_and_stay_secret(tmp_path: Path, topic_name: str) -> None:
    data = tmp_path / "data"
    proc = BrokerProcess(data, "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                         f"sasl.users={SETTINGS_USER}:{SETTINGS_PASSWORD}")
    try:
        proc.start()
        client = admin(plaintext(proc))
        upsert(client, "dave", "Dave-pw-6", SHA_256, iterations=4100)
        upsert(client, "dave", "Dave-pw-7", SHA_512, iterations=4200)
        delete(client, SETTINGS_USER, SHA_512)
        proc.restart()
        client = admin(plaintext(proc))
        assert described(client, "dave", SETTINGS_USER) == {
            "dave": [(SHA_256, 4100), (SHA_512, 4200)], SETTINGS_USER: [(SHA_256, 4096)],
        }
        round_trip(proc, topic_name, sasl_settings(proc, "dave", "Dave-pw-7", SHA_512))
        assert login_error(proc, "dave", "Dave-pw-6", SHA_256) is None
        assert_login_fails(proc, SETTINGS_USER, SETTINGS_PASSWORD, SHA_512)  # the deletion held
        assert login_error(proc, SETTINGS_USER, SETTINGS_PASSWORD, SHA_256) is None
    finally:
        proc.stop()
    stored = data / "scram-credentials.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    secrets = [password.encode() for password in ("Dave-pw-6", "Dave-pw-7", SETTINGS_PASSWORD)]
    log = proc.log_text().encode()
    assert b"set 'dave' SCRAM-SHA-256" in log and b"deleted 'alice' SCRAM-SHA-512" in log
    for text in (stored.read_bytes(), log):
        for secret in secrets:
            assert secret not in text


def test_an_unreadable_credential_file_stops_start_up(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "scram-credentials.json").write_text('{"version": 1, "credentials": [{"user": "eve"}]}')
    proc = BrokerProcess(data, "listeners=SASL_PLAINTEXT://127.0.0.1:0", "sasl.users=eve:Eve-pw-1")
    with pytest.raises(RuntimeError, match="scram-credentials.json: malformed entry"):
        proc.start()
    proc.stop()


def test_reset_and_snapshots_leave_credentials_alone() -> None:
    """Like ACLs, credentials are not the topics' state: a reset keeps them and a restore does not bring back
    older ones."""
    with Broker(control=True) as broker:
        client = admin(broker.bootstrap_servers)
        upsert(client, "frank", "Frank-pw-1", SHA_256, iterations=4096)
        assert control_call(f"{broker.control_url}/v1/snapshots", "POST", {"name": "before"})[0] == 201
        upsert(client, "frank", "Frank-pw-2", SHA_256, iterations=5000)
        assert control_call(f"{broker.control_url}/v1/reset", "POST")[0] == 200
        assert control_call(f"{broker.control_url}/v1/snapshots/before/restore", "POST")[0] == 200
        assert described(client, "frank") == {"frank": [(SHA_256, 5000)]}
        assert (broker.data_dir / "scram-credentials.json").exists()


# ---- authorization ----


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from acl_broker(tmp_path_factory.mktemp("scram-acl") / "data", ["viewer", "editor", "nobody"])


def acl_admin(broker: BrokerProcess, user: str) -> AdminClient:
    return admin(f"127.0.0.1:{broker.listener_ports['SASL_PLAINTEXT']}", **{
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": user,
        "sasl.password": acl_password(user),
    })


def test_without_alter_on_the_cluster_every_user_is_refused(secured: BrokerProcess) -> None:
    client = acl_admin(secured, "nobody")  # kept: its futures fail when the client is gone
    futures = client.alter_user_scram_credentials([
        UserScramCredentialUpsertion("grace", ScramCredentialInfo(SHA_256, 4096), b"Grace-pw-1"),
        UserScramCredentialDeletion("heidi", SHA_256),
    ])
    for user in ("grace", "heidi"):
        with pytest.raises(KafkaException) as failure:
            futures[user].result(TIMEOUT_S)
        assert failure.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert "grace" not in described(acl_admin(secured, ADMIN))


def test_without_describe_on_the_cluster_the_request_is_refused(secured: BrokerProcess) -> None:
    """Kafka's getErrorResponse: the top-level error, and one nameless result per user named. Raw: librdkafka 2.16
    frees a static string on a top-level error here and aborts (Kafka answers the same)."""
    denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    with login(secured, "nobody") as conn:
        everyone = call(conn, DESCRIBE_SCRAM, 0, {"users": None})
        named = call(conn, DESCRIBE_SCRAM, 0, {"users": [{"name": ADMIN}, {"name": "nobody"}]})
    assert everyone == {"throttle_time_ms": 0, "error_code": denied, "error_message": None, "results": []}
    assert named["error_code"] == denied
    assert named["results"] == [{"user": "", "error_code": denied, "error_message": None, "credential_infos": []}] * 2


def test_describe_needs_describe_and_alter_needs_alter(secured: BrokerProcess) -> None:
    grant(secured, "viewer", CLUSTER, "kafka-cluster", DESCRIBE)
    grant(secured, "editor", CLUSTER, "kafka-cluster", ALTER)
    upsert(acl_admin(secured, "editor"), "ivan", "Ivan-pw-1", SHA_512)  # ALTER implies DESCRIBE too
    assert described(acl_admin(secured, "editor"), "ivan") == {"ivan": [(SHA_512, 8192)]}
    assert described(acl_admin(secured, "viewer"), "ivan") == {"ivan": [(SHA_512, 8192)]}
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):
        upsert(acl_admin(secured, "viewer"), "ivan", "Ivan-pw-2", SHA_512)
    with RawConnection(f"127.0.0.1:{secured.listener_ports['SASL_PLAINTEXT']}") as conn:
        assert raw_login(conn, "SCRAM-SHA-512", "ivan", "Ivan-pw-1")["error_code"] == 0
