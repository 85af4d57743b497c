"""A real container engine for the image tests: podman, the image built from docker/Dockerfile once a session with the
documented build command, and the containers, volumes and networks a test makes, always removed.

- The engine gets a containers.conf of its own (``CONTAINERS_CONF``) whose one change is default ulimits this machine
  allows: podman's own (a million open files) are above what sandboxes and CI runners grant, and runc then cannot
  start a container at all.
- The Dockerfile's base image (its ``BASE_IMAGE`` argument, python:3.11-slim) is pulled when a registry answers. Where
  none does, a stand-in is made from Debian's archive with debootstrap: Debian 12's Python 3.11 with venv and pip, as
  that image has them (kept for later sessions; ``MINIBROKER_TEST_BASE_IMAGE`` names another base).
- pip inside the build trusts the host's CA bundle through a mounted pip.conf (some networks intercept HTTPS); the
  Dockerfile knows nothing of it.

Without podman, or without a base image and the means to make one, the container tests skip and say why.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Iterable, Iterator

import pytest

from minibroker.protocol.strict import LOG_MARKER, STRICT_ENV

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
IMAGE_REPOSITORY = "localhost/minibroker-test"
STAND_IN_BASE = "localhost/minibroker-test-base:debian-12"
STAND_IN_PACKAGES = "python3,python3-venv,python3-pip,python-is-python3,ca-certificates,netbase"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
LABEL = "minibroker.test"
TIMEOUT_S = 60.0
POLL_S = 0.05


def dockerfile_default_base() -> str:
    """The base image the Dockerfile names by default (its ``ARG BASE_IMAGE=...``)."""
    match = re.search(r"^ARG BASE_IMAGE=(\S+)", DOCKERFILE.read_text(), re.MULTILINE)
    assert match, "docker/Dockerfile has no ARG BASE_IMAGE=..."
    return match.group(1)


def allowed_ulimits() -> list[str]:
    """Default ulimits runc can set here: this process's hard limits (the process count no higher than pid_max, which
    some kernels enforce on RLIMIT_NPROC)."""
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    processes = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    try:
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    except OSError:
        pid_max = 32768
    processes = pid_max if processes == resource.RLIM_INFINITY else min(processes, pid_max)
    files = 1 << 20 if files == resource.RLIM_INFINITY else files
    return [f"nofile={files}:{files}", f"nproc={processes}:{processes}"]


class Container:
    """A running (or exited) container of the session's engine."""

    def __init__(self, engine: Engine, container_id: str) -> None:
        self.engine = engine
        self.id = container_id

    def host_port(self, port: int) -> int:
        """The host port that container port ``port`` is published on."""
        text = self.engine.run("port", self.id, f"{port}/tcp").stdout.strip().splitlines()[0]
        return int(text.rsplit(":", 1)[1])

    def address(self, port: int) -> str:
        return f"127.0.0.1:{self.host_port(port)}"

    def inspect(self, template: str) -> str:
        return self.engine.run("inspect", "--format", template, self.id).stdout.strip()

    @property
    def hostname(self) -> str:
        return self.inspect("{{.Config.Hostname}}")

    @property
    def ip(self) -> str:
        return self.inspect("{{.NetworkSettings.IPAddress}}")

    @property
    def running(self) -> bool:
        return self.inspect("{{.State.Running}}") == "true"

    def logs(self) -> str:
        return self.engine.run("logs", self.id, stderr=subprocess.STDOUT).stdout

    def wait_for_log(self, pattern: str, timeout: float = TIMEOUT_S) -> re.Match[str]:
        """The first match of ``pattern`` in the logs, waiting for it; fails with the logs if the container stops or
        it does not appear in time."""
        regex = re.compile(pattern, re.MULTILINE)
        deadline = time.monotonic() + timeout
        while True:
            logs = self.logs()
            match = regex.search(logs)
            if match:
                return match
            if not self.running:
                pytest.fail(f"container exited ({self.exit_code}) before logging {pattern!r}:\n{logs}")
            if time.monotonic() > deadline:
                pytest.fail(f"container did not log {pattern!r} within {timeout}s:\n{logs}")
            time.sleep(POLL_S)

    def wait_for_ready(self) -> None:
        self.wait_for_log(r"minibroker ready on")

    @property
    def exit_code(self) -> int:
        return int(self.inspect("{{.State.ExitCode}}"))

    def wait(self, timeout: float = TIMEOUT_S) -> int:
        """The exit code once the container has stopped by itself."""
        self.engine.run("wait", self.id, timeout=timeout)
        return self.exit_code

    def stop(self, timeout_s: int = 10) -> int:
        """``podman stop``: SIGTERM, SIGKILL after ``timeout_s``; the exit code."""
        self.engine.run("stop", "--time", str(timeout_s), self.id, timeout=timeout_s + 30)
        return self.exit_code

    def exec(self, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.engine.run("exec", self.id, *command, check=check)

    def copy_in(self, text: str, path: str, mode: int = 0o644) -> None:
        """Put a file into the container as Testcontainers does (the engine writes it, whatever the container's
        user), whole: podman's copy makes the file before it sets its mode, so a start loop waiting for the file
        could run it in between ("Permission denied", seen with both cores busy); it is written beside and renamed."""
        with tempfile.TemporaryDirectory() as scratch:
            source = Path(scratch) / "file"
            source.write_text(text)
            source.chmod(mode)
            self.engine.run("cp", str(source), f"{self.id}:{path}.copying")
            self.engine.run("exec", "--user", "0", self.id, "mv", "-f", f"{path}.copying", path)

    def strict_violations(self) -> list[str]:
        """Responses the broker's strict codec found not to match their schema (the suite turns it on everywhere)."""
        return [line for line in self.logs().splitlines() if LOG_MARKER in line]


class Engine:
    """podman with its own containers.conf; everything it makes for the tests carries ``LABEL`` and is removed by
    ``cleanup``."""

    def __init__(self, executable: str, workdir: Path) -> None:
        self.executable = executable
        self.workdir = workdir
        conf = workdir / "containers.conf"
        conf.write_text("[containers]\ndefault_ulimits = [%s]\n" % ", ".join(f'"{u}"' for u in allowed_ulimits()))
        self.env = {**os.environ, "CONTAINERS_CONF": str(conf)}
        self.session = uuid.uuid4().hex[:12]
        self.label = f"{LABEL}={self.session}"
        self._volumes: list[str] = []
        self._networks: list[str] = []
        self._tags: list[str] = []

    def run(
        self, *args: str, check: bool = True, timeout: float = TIMEOUT_S, stderr: int = subprocess.PIPE,
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [self.executable, *args], env=self.env, stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)} exited {result.returncode}:\n{result.stdout}{result.stderr or ''}")
        return result

    def has_image(self, name: str) -> bool:
        return self.run("image", "exists", name, check=False).returncode == 0

    def start(
        self, image: str, *command: str, env: dict[str, str] | None = None, ports: Iterable[int | tuple[int, int]] = (),
        entrypoint: str | None = None, user: str | None = None, volumes: Iterable[str] = (), network: str | None = None,
        alias: str | None = None, options: Iterable[str] = (),
    ) -> Container:
        """``podman run -d``; each port published on 127.0.0.1 (an int: on a free host port; ``(host, container)``:
        on that host port). The broker's strict codec is on, as for every broker of the suite."""
        args = ["run", "-d", "--label", self.label, "-e", f"{STRICT_ENV}=1"]
        for name, value in (env or {}).items():
            args += ["-e", f"{name}={value}"]
        for port in ports:
            args += ["-p", f"127.0.0.1:{port[0]}:{port[1]}" if isinstance(port, tuple) else f"127.0.0.1::{port}"]
        if entrypoint is not None:
            args += ["--entrypoint", entrypoint]
        if user is not None:
            args += ["--user", user]
        for volume in volumes:
            args += ["-v", volume]
        if network is not None:
            args += ["--network", network]
        if alias is not None:
            args += ["--network-alias", alias]
        args += [*options, image, *command]
        return Container(self, self.run(*args).stdout.strip().splitlines()[-1])

    def volume(self) -> str:
        name = f"minibroker-test-{self.session}-{len(self._volumes)}"
        self.run("volume", "create", "--label", self.label, name)
        self._volumes.append(name)
        return name

    def network(self) -> str:
        name = f"minibroker-test-{self.session}-{len(self._networks)}"
        self.run("network", "create", "--label", self.label, name)
        self._networks.append(name)
        return name

    def image_name(self, tag: str = "latest") -> str:
        """A name for an image of this session (another session, in another checkout, builds its own)."""
        return f"{IMAGE_REPOSITORY}-{self.session}:{tag}"

    def tag(self, image: str, name: str) -> None:
        self.run("tag", image, name)
        self._tags.append(name)

    def cleanup(self) -> None:
        """Remove every container, volume and network of this session (a failed test's too), and its image names
        (the layers stay, the build cache of the next session)."""
        ids = self.run("ps", "-aq", "--filter", f"label={self.label}", check=False).stdout.split()
        if ids:
            self.run("rm", "--force", "--volumes", "--time", "0", *ids, check=False)
        for volume in self._volumes:
            self.run("volume", "rm", "--force", volume, check=False)
        for network in self._networks:
            self.run("network", "rm", "--force", network, check=False)
        if self._tags:
            self.run("rmi", *self._tags, check=False)

    # ---- images ----

    def base_image(self) -> str:
        """The Dockerfile's base image, or a stand-in made from Debian's archive where no registry answers."""
        wanted = os.environ.get("MINIBROKER_TEST_BASE_IMAGE") or dockerfile_default_base()
        if self.has_image(wanted) or self.run("pull", "--quiet", wanted, check=False, timeout=600).returncode == 0:
            return wanted
        if os.environ.get("MINIBROKER_TEST_BASE_IMAGE"):
            pytest.skip(f"the base image {wanted} cannot be pulled")
        if not self.has_image(STAND_IN_BASE):
            self.make_stand_in_base()
        return STAND_IN_BASE

    def make_stand_in_base(self) -> None:
        debootstrap = shutil.which("debootstrap")
        if debootstrap is None or os.geteuid() != 0:
            pytest.skip(f"{dockerfile_default_base()} cannot be pulled and no stand-in can be made (debootstrap as root)")
        root = Path(tempfile.mkdtemp(prefix="minibroker-base-", dir=self.workdir))
        try:
            subprocess.run(
                [debootstrap, "--variant=minbase", f"--include={STAND_IN_PACKAGES}", "bookworm", str(root), DEBIAN_MIRROR],
                check=True, capture_output=True, timeout=900,
            )
            # As python:*-slim: no apt lists, docs or locales, and pip not marked externally managed.
            for leftover in ("var/cache/apt", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/locale"):
                for entry in (root / leftover).glob("*"):
                    shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
            for marker in root.glob("usr/lib/python3*/EXTERNALLY-MANAGED"):
                marker.unlink()
            tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
            subprocess.run(
                [self.executable, "import", "--change", 'CMD ["python3"]', "--change", "ENV LANG=C.UTF-8",
                 "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "-",
                 STAND_IN_BASE],
                stdin=tar.stdout, env=self.env, check=True, capture_output=True, timeout=600,
            )
            tar.wait()
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def build(self, dockerfile: Path, tag: str, base: str, context: Path = ROOT) -> None:
        """``podman build --format docker -f DOCKERFILE -t TAG CONTEXT`` (the documented command) with the base image
        and the host's CA bundle for pip."""
        args = ["build", "--format", "docker", "-f", str(dockerfile), "--build-arg", f"BASE_IMAGE={base}", "-t", tag]
        bundle = host_ca_bundle()
        if bundle is not None:
            pip_conf = self.workdir / "pip.conf"
            pip_conf.write_text("[global]\ncert = /etc/ssl/certs/minibroker-build-ca.pem\n")
            args += ["-v", f"{bundle}:/etc/ssl/certs/minibroker-build-ca.pem:ro", "-v", f"{pip_conf}:/etc/pip.conf:ro"]
        self.run(*args, str(context), timeout=1200, stderr=subprocess.STDOUT)
        self._tags.append(tag)

    def image_config(self, image: str) -> dict:
        return json.loads(self.run("image", "inspect", image).stdout)[0]


def host_ca_bundle() -> str | None:
    """The CA bundle this machine's HTTPS clients trust (pip's setting, else OpenSSL's default file)."""
    for candidate in (os.environ.get("PIP_CERT"), os.environ.get("SSL_CERT_FILE"), ssl.get_default_verify_paths().cafile):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def find_engine(workdir: Path) -> Engine:
    """podman, working; else skip with the reason."""
    executable = shutil.which("podman")
    if executable is None:
        pytest.skip("no container engine: podman is not installed (.ci/run installs it)")
    engine = Engine(executable, workdir)
    info = engine.run("info", "--format", "{{.Host.OCIRuntime.Name}}", check=False)
    if info.returncode != 0:
        pytest.skip(f"podman does not work here: {info.stderr.strip()}")
    return engine


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    found = find_engine(tmp_path_factory.mktemp("engine"))
    try:
        yield found
    finally:
        found.cleanup()


@pytest.fixture(scope="session")
def image(engine: Engine) -> str:
    """minibroker's image, built from docker/Dockerfile for this session."""
    name = engine.image_name()
    engine.build(DOCKERFILE, name, engine.base_image())
    return name
