"""The registry as the inspector shows it (GET /v1/schemas, /v1/schemas/{subject} on the control listener): every
subject with its versions, soft-deleted ones included and marked, and one subject's schemas."""

from __future__ import annotations

from typing import Any

from minibroker.registry.state import RegistryState, Version


def _version(version: Version, with_schema: bool) -> dict[str, Any]:
    view: dict[str, Any] = {
        "version": version.version, "id": version.schema_id, "schema_type": version.schema_type,
        "deleted": version.deleted,
    }
    if with_schema:
        view["schema"] = version.schema
        view["references"] = version.references
    return view


def subjects_view(state: RegistryState, url: str | None) -> dict[str, Any]:
    return {
        "url": url,
        "compatibility": state.compatibility(None),
        "mode": state.mode(None),
        "subjects": [
            {"subject": subject, "compatibility": state.compatibility(subject),
             "versions": [_version(v, False) for v in state.versions(subject, deleted=True)]}
            for subject in state.subject_names(deleted=True)
        ],
    }


def subject_view(state: RegistryState, subject: str) -> dict[str, Any] | None:
    versions = state.versions(subject, deleted=True)
    if not versions:
        return None
    return {
        "subject": subject, "compatibility": state.compatibility(subject), "mode": state.mode(subject),
        "versions": [_version(v, True) for v in versions],
    }
