"""What AlterUserScramCredentials and DescribeUserScramCredentials decide, as Kafka's ScramControlManager and
ScramImage decide it, without the wire or the file: each user is named at most once per alteration (a second
mention makes the user's result DUPLICATE_RESOURCE and drops both), deletions are checked before upsertions, and
results list the accepted deletions, then the accepted upsertions, then the refusals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from minibroker.protocol.errors import ErrorCode
from minibroker.sasl.credentials import CredentialKey, CredentialStore, ScramCredential, from_salted_password
from minibroker.sasl.settings import MAX_ITERATIONS, MIN_ITERATIONS, SCRAM_HASHES, SCRAM_TYPES

MECHANISM_TYPES = {name: number for number, name in SCRAM_TYPES.items()}
ALTERED_TWICE = "A user credential cannot be altered twice in the same request"
DESCRIBED_TWICE = "Cannot describe SCRAM credentials for the same user twice in a single request: "
NOT_DESCRIBED = "Attempt to describe a user credential that does not exist: "

Refusal = tuple[ErrorCode, str]


@dataclass
class Alteration:
    """An AlterUserScramCredentials request decided: its results (wire form) and the credentials it changes
    (None: deleted)."""

    results: list[dict[str, Any]] = field(default_factory=list)
    changes: dict[CredentialKey, ScramCredential | None] = field(default_factory=dict)


def name_and_mechanism_problem(name: str, mechanism: int) -> Refusal | None:
    """Kafka's validateScramUsernameAndMechanism."""
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in SCRAM_TYPES:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def deletion_problem(store: CredentialStore, deletion: dict[str, Any]) -> Refusal | None:
    problem = name_and_mechanism_problem(deletion["name"], deletion["mechanism"])
    if problem is None and store.scram(deletion["name"], SCRAM_TYPES[deletion["mechanism"]]) is None:
        return ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
    return problem


def upsertion_problem(upsertion: dict[str, Any]) -> Refusal | None:
    problem = name_and_mechanism_problem(upsertion["name"], upsertion["mechanism"])
    if problem is None and upsertion["iterations"] < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if problem is None and upsertion["iterations"] > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return problem


def result(user: str, error: ErrorCode = ErrorCode.NONE, message: str | None = None) -> dict[str, Any]:
    return {"user": user, "error_code": error, "error_message": message}


def alteration(store: CredentialStore, deletions: list[dict[str, Any]], upsertions: list[dict[str, Any]]) -> Alteration:
    """Kafka's ScramControlManager.alterCredentials against the credentials in force."""
    deleting: dict[str, dict[str, Any]] = {}
    upserting: dict[str, dict[str, Any]] = {}
    refused: dict[str, Refusal] = {}
    for deletion in deletions:
        name = deletion["name"]
        if name in refused:
            continue
        if deleting.pop(name, None) is not None:
            refused[name] = ErrorCode.DUPLICATE_RESOURCE, ALTERED_TWICE
        elif (problem := deletion_problem(store, deletion)) is not None:
            refused[name] = problem
        else:
            deleting[name] = deletion
    for upsertion in upsertions:
        name = upsertion["name"]
        if name in refused:
            continue
        if deleting.pop(name, None) is not None or upserting.pop(name, None) is not None:
            refused[name] = ErrorCode.DUPLICATE_RESOURCE, ALTERED_TWICE
        elif (problem := upsertion_problem(upsertion)) is not None:
            refused[name] = problem
        else:
            upserting[name] = upsertion
    decided = Alteration()
    for name, deletion in deleting.items():
        decided.results.append(result(name))
        decided.changes[(name, SCRAM_TYPES[deletion["mechanism"]])] = None
    for name, upsertion in upserting.items():
        mechanism = SCRAM_TYPES[upsertion["mechanism"]]
        decided.results.append(result(name))
        decided.changes[(name, mechanism)] = from_salted_password(
            SCRAM_HASHES[mechanism], bytes(upsertion["salted_password"]), bytes(upsertion["salt"]), upsertion["iterations"],
        )
    decided.results += [result(name, error, message) for name, (error, message) in refused.items()]
    return decided


def description(store: CredentialStore, names: Iterable[str] | None) -> list[dict[str, Any]]:
    """Kafka's ScramImage.describe: every user with a credential when ``names`` is None or empty, else each name
    once (RESOURCE_NOT_FOUND without a credential, DUPLICATE_RESOURCE when named twice)."""
    infos: dict[str, list[dict[str, int]]] = {}
    for (user, mechanism), credential in store.credentials().items():
        infos.setdefault(user, []).append({"mechanism": MECHANISM_TYPES[mechanism], "iterations": credential.iterations})
    for entries in infos.values():
        entries.sort(key=lambda info: info["mechanism"])
    wanted: dict[str, bool] = {}  # name -> named more than once
    for name in names or sorted(infos):
        wanted[name] = name in wanted
    results = []
    for name, twice in wanted.items():
        if twice:
            results.append(describe_result(name, ErrorCode.DUPLICATE_RESOURCE, DESCRIBED_TWICE + name))
        elif name not in infos:
            results.append(describe_result(name, ErrorCode.RESOURCE_NOT_FOUND, NOT_DESCRIBED + name))
        else:
            results.append(describe_result(name, credential_infos=infos[name]))
    return results


def describe_result(
    user: str, error: ErrorCode = ErrorCode.NONE, message: str | None = None, credential_infos: list[dict[str, int]] | None = None,
) -> dict[str, Any]:
    return {"user": user, "error_code": error, "error_message": message, "credential_infos": credential_infos or []}
