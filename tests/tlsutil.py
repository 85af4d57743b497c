"""Throwaway TLS material for tests, made with the ``openssl`` command: a CA, a server certificate for
127.0.0.1 and localhost signed by it, and a client certificate for mutual TLS."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

SERVER_EXTENSIONS = """\
subjectAltName = DNS:localhost, IP:127.0.0.1
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
"""
CLIENT_EXTENSIONS = """\
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
"""
EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def signed_certificate(directory: Path, name: str, subject: str, extensions: str, serial: int) -> None:
    """``name.pem`` and ``name.key``: an EC key and a certificate for it signed by the CA in ``directory``."""
    (directory / f"{name}.ext").write_text(extensions)
    openssl("req", *EC_KEY, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=directory)
    openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", str(serial),
        "-days", "2", "-sha256", "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=directory,
    )


def make_tls_files(directory: Path) -> TlsFiles:
    """A self-signed CA and the server and client certificates it signs (valid two days)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make test certificates")
    directory.mkdir(parents=True, exist_ok=True)
    openssl(
        "req", "-x509", *EC_KEY, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=minibroker test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory,
    )
    signed_certificate(directory, "server", "/CN=localhost", SERVER_EXTENSIONS, 2)
    signed_certificate(directory, "client", "/CN=test-client", CLIENT_EXTENSIONS, 3)
    return TlsFiles(
        directory / "ca.pem", directory / "server.pem", directory / "server.key", directory / "client.pem", directory / "client.key"
    )
