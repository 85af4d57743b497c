"""Burrow 1.2.1 (Debian's, with Debian's ZooKeeper) reports a group's lag exactly against --kafka-version 3.9."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.burrowutil import DEBIAN_PROFILE_VERSION, burrow_lag, missing


@pytest.mark.skipif(missing() is not None, reason=missing() or "")
@pytest.mark.parametrize("profile", [DEBIAN_PROFILE_VERSION, "2.0.0"])
def test_burrow_reports_the_lag_of_a_group(tmp_path: Path, profile: str) -> None:
    run = burrow_lag(tmp_path, kafka_version="3.9", produced=30, committed=10, sarama_version=profile)
    assert run.total_lag == 20, run.diagnostics()
