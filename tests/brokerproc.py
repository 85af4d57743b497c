"""Run minibroker as a child process for tests: ephemeral port, temp data dir, always stopped."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path
from typing import ClassVar

from minibroker.control_client import ControlClient
from minibroker.protocol.strict import LOG_MARKER

READY = re.compile(r"minibroker ready on (\S+):(\d+)")
LISTENER = re.compile(r"listener (\S+) \((\S+)\) on (\S+):(\d+)")
CONTROL = re.compile(r"control listener on (http://[0-9.]+:\d+)")


def wait_for_ready(log_path: Path, proc: subprocess.Popen, timeout: float = 20.0) -> int:
    """The port from the readiness line a broker started as ``proc`` writes to ``log_path``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = READY.search(log_path.read_text())
        if match:
            return int(match.group(2))
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode}:\n{log_path.read_text()}")
        time.sleep(0.02)
    raise RuntimeError(f"broker not ready after {timeout}s:\n{log_path.read_text()}")


class BrokerProcess:
    """A broker child process; ``bootstrap`` is its ``host:port`` once ``start()`` returns."""

    started: ClassVar[weakref.WeakSet[BrokerProcess]] = weakref.WeakSet()  # for the strict-codec check after each test

    def __init__(
        self, data_dir: Path, *settings: str, env: dict[str, str] | None = None, max_open_files: int | None = None,
        config_file: Path | None = None, flags: tuple[str, ...] = (),
    ) -> None:
        self.data_dir = data_dir
        self.settings = list(settings)
        self.flags = flags  # serve's own options (--port, --advertised-host, ...), given as they are
        self.config_file = config_file  # a server.properties for --config
        self.max_open_files = max_open_files  # RLIMIT_NOFILE (soft and hard) of the child, to test running out
        # Extra environment variables for the child, on top of os.environ (may be changed between starts).
        self.env = dict(env or {})
        self.log_path = data_dir.parent / f"{data_dir.name}-broker.log"
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.listener_ports: dict[str, int] = {}  # listener name -> bound port, from the start-up log
        self.control_url: str | None = None  # the control listener's address, from the start-up log (control.port)
        self.log_checked = 0  # how much of the log strict_violations() has read

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> BrokerProcess:
        args = [sys.executable, "-m", "minibroker", "serve", "--data-dir", str(self.data_dir)]
        if self.config_file is not None:
            args += ["--config", str(self.config_file)]
        listeners_given = any(setting.startswith("listeners=") for setting in self.settings) or any(
            name in self.env for name in ("KAFKA_LISTENERS", "KAFKA_CFG_LISTENERS", "MINIBROKER_LISTENERS")
        )
        if not listeners_given and "--port" not in self.flags:
            args += ["--port", str(self.port)]
        args += self.flags
        for setting in self.settings:
            args += ["-c", setting]
        BrokerProcess.started.add(self)
        log = open(self.log_path, "a")
        start_offset = log.tell()
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
                                     preexec_fn=self._limit_open_files if self.max_open_files else None)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log_path.read_text()[start_offset:]
            match = READY.search(text)
            if match:
                self.port = int(match.group(2))
                self.listener_ports = {m.group(1): int(m.group(4)) for m in LISTENER.finditer(text)}
                control = CONTROL.search(text)
                self.control_url = control.group(1) if control else None
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited with {self.proc.returncode}:\n{text}")
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"broker not ready after {timeout}s:\n{self.log_path.read_text()}")

    @property
    def control(self) -> ControlClient:
        """A client of the broker's control API (started with the setting ``control.port``)."""
        assert self.control_url is not None, "no control listener: start the broker with control.port=0"
        return ControlClient(self.control_url)

    def _limit_open_files(self) -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.max_open_files, self.max_open_files))

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def restart(self) -> BrokerProcess:
        """Stop and start again on the same data dir and the same port (clients keep their bootstrap)."""
        self.stop()
        return self.start()

    def strict_violations(self) -> list[str]:
        """Lines the codec's strict mode logged since the last call (a response that did not match its schema)."""
        text = self.log_text()
        new, self.log_checked = text[self.log_checked:], len(text)
        return [line for line in new.splitlines() if LOG_MARKER in line]

    def log_text(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""
