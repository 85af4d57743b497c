"""What the authorization tests share: a broker process with the standard authorizer and a SASL_PLAINTEXT listener
(``admin`` a super user), raw logins, and ACLs granted by the admin over CreateAcls."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Iterable, Iterator

from tests.brokerproc import BrokerProcess
from tests.clientutil import RawConnection
from tests.test_security import call, raw_login

ADMIN = "admin"
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 2, 3, 4, 5
LITERAL, PREFIXED, ALLOW = 3, 4, 3
CREATE_ACLS, CREATE_TOPICS = 30, 19


def password(user: str) -> str:
    return f"{user}-Pw-1"


def acl_broker(directory: Path, users: Iterable[str], *settings: str) -> Iterator[BrokerProcess]:
    """A started broker whose SASL users are ``admin`` and ``users`` (with more ``settings``, e.g. ``nodes=3``);
    stopped when the fixture ends, even on failure."""
    proc = BrokerProcess(
        directory,
        *settings,
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.users=" + ",".join(f"{user}:{password(user)}" for user in (ADMIN, *users)),
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        f"super.users=User:{ADMIN}",
    )
    try:
        yield proc.start()
    finally:
        proc.stop()


def login(broker: BrokerProcess, user: str) -> RawConnection:
    conn = RawConnection(f"127.0.0.1:{broker.listener_ports['SASL_PLAINTEXT']}")
    try:
        assert raw_login(conn, "PLAIN", user, password(user))["error_code"] == 0
    except BaseException:
        conn.close()
        raise
    return conn


def grant(
    broker: BrokerProcess, user: str, resource_type: int, name: str, operation: int, pattern: int = LITERAL,
) -> None:
    with login(broker, ADMIN) as conn:
        [result] = call(conn, CREATE_ACLS, 3, {"creations": [{
            "resource_type": resource_type, "resource_name": name, "resource_pattern_type": pattern,
            "principal": f"User:{user}", "host": "*", "operation": operation, "permission_type": ALLOW,
        }]})["results"]
    assert result["error_code"] == 0


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topics(conn: RawConnection, *names: str) -> list[dict[str, Any]]:
    return call(conn, CREATE_TOPICS, 7, {"topics": [
        {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []} for name in names
    ], "timeout_ms": 5000, "validate_only": False})["topics"]
