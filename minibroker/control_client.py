"""A Python client of the control API (HTTP/JSON), for tests whose broker is another process or a container.

Its methods have the names and arguments of ``minibroker.testing.Broker``'s control methods and return the
control API's JSON answers, so a test reads the same whether its broker is in-process or reached by URL. The
pytest fixture ``kafka_control`` is one of these. Only the standard library is used (``urllib``).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

__all__ = ["ControlClient", "ControlError"]


class ControlError(Exception):
    """The control listener answered with an error status (4xx/5xx); ``message`` is its explanation."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class ControlClient:
    """The control listener at ``url`` (``http://host:port``), with its bearer ``token`` if it has one."""

    def __init__(self, url: str, token: str | None = None, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s

    def send(self, method: str, path: str, body: str | None = None) -> tuple[int, str]:
        """One request as given: (status, answer text); raises OSError when the listener cannot be reached."""
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(
            f"{self.url}/{path.lstrip('/')}", data=None if body is None else body.encode(), method=method.upper(),
            headers=headers,
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON answer of a 2xx status; ``ControlError`` for any other."""
        status, text = self.send(method, path, None if body is None else json.dumps(body))
        answer = json.loads(text) if text else {}
        if status >= 300:
            raise ControlError(status, answer.get("error", text) if isinstance(answer, dict) else text)
        return answer

    # ---- the operations, named as on minibroker.testing.Broker ----

    def health(self) -> dict[str, Any]:
        return self.request("GET", "/v1/health")

    def add_node(self) -> int:
        return self.request("POST", "/v1/nodes")["id"]

    def stop_node(self, node_id: int, clean: bool = True) -> None:
        self.request("POST", f"/v1/nodes/{node_id}/stop", {"clean": clean})

    def start_node(self, node_id: int) -> None:
        self.request("POST", f"/v1/nodes/{node_id}/start")

    def advertise(self, node_id: int, listener: str, address: str) -> None:
        """Clients are given ``address`` (``host:port``) for the node's listener from now on (a container's mapped
        port)."""
        self.request("POST", f"/v1/nodes/{node_id}/listeners/{_quote(listener)}", {"advertised": address})

    def move_leader(self, topic: str, partition: int, node_id: int) -> int:
        return self.request("POST", f"/v1/partitions/{_quote(topic)}/{partition}/leader", {"node": node_id})[
            "leader_epoch"]

    def move_coordinator(self, node_id: int, *, group: str | None = None, transactional_id: str | None = None) -> int:
        keys = {"group": group} if group is not None else {"transactional_id": transactional_id}
        return self.request("POST", "/v1/coordinators", {**keys, "node": node_id})["leader_epoch"]

    def add_fault(self, api: str | int | None = None, **spec: Any) -> dict[str, Any]:
        return self.request("POST", "/v1/faults", {"api": api, **spec})

    def faults(self) -> list[dict[str, Any]]:
        return self.request("GET", "/v1/faults")["faults"]

    def clear_faults(self, fault_id: int | None = None) -> int:
        path = "/v1/faults" if fault_id is None else f"/v1/faults/{fault_id}"
        return self.request("DELETE", path)["cleared"]

    def transcript(self, since: int = 0) -> list[dict[str, Any]]:
        return self.request("GET", f"/v1/transcript?since={since}")["entries"]

    def transcript_position(self) -> int:
        return self.request("GET", "/v1/transcript?since=0")["next"] - 1

    def clock(self) -> dict[str, Any]:
        return self.request("GET", "/v1/clock")

    def advance(self, ms: int) -> int:
        return self.request("POST", "/v1/clock/advance", {"ms": ms})["now_ms"]

    def set_time(self, time_ms: int) -> int:
        return self.request("POST", "/v1/clock/set", {"time": time_ms})["now_ms"]

    def reset(self) -> int:
        return self.request("POST", "/v1/reset")["topics_deleted"]

    def snapshot(self, name: str) -> dict[str, Any]:
        return self.request("POST", "/v1/snapshots", {"name": name})

    def restore(self, name: str) -> dict[str, Any]:
        return self.request("POST", f"/v1/snapshots/{_quote(name)}/restore")

    def snapshots(self) -> list[dict[str, Any]]:
        return self.request("GET", "/v1/snapshots")["snapshots"]

    def delete_snapshot(self, name: str) -> None:
        self.request("DELETE", f"/v1/snapshots/{_quote(name)}")

    def records(self, topic: str, partition: int, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        return self.request("GET", f"/v1/partitions/{_quote(topic)}/{partition}/records?offset={offset}&max={limit}")

    def group(self, group_id: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/groups/{_quote(group_id)}")

    def transaction(self, transactional_id: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/transactions/{_quote(transactional_id)}")

    def wait_for(self, *, group_stable: str | None = None, high_watermark: tuple[str, int, int] | None = None,
                 timeout_ms: int = 10_000) -> str:
        """As ``Broker.wait_for``: ``TimeoutError`` when the broker's wait runs out (408)."""
        body: dict[str, Any] = {"timeout_ms": timeout_ms}
        if group_stable is not None:
            body["group_stable"] = group_stable
        if high_watermark is not None:
            topic, partition, at_least = high_watermark
            body["high_watermark"] = {"topic": topic, "partition": partition, "at_least": at_least}
        try:
            return self.request("POST", "/v1/wait", body)["waited_for"]
        except ControlError as exc:
            if exc.status == 408:
                raise TimeoutError(exc.message) from None
            raise

    def __repr__(self) -> str:
        return f"<minibroker.control_client.ControlClient {self.url}>"


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")
