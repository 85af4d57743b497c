"""The TLS context of SSL and SASL_SSL listeners, from PEM files (stdlib ``ssl``).

Kafka's ``ssl.keystore.*`` settings describe JKS/PKCS12 stores; PEM files are what Python and most
tooling produce, so the settings name files instead: ``ssl.certificate.location`` (certificate and chain),
``ssl.key.location`` (private key, optionally encrypted with ``ssl.key.password``) and, to check client
certificates (``ssl.client.auth``), ``ssl.ca.location``.
"""

from __future__ import annotations

import ssl

from minibroker.config.settings import BrokerConfig, ConfigError

VERIFY_MODES = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def server_context(config: BrokerConfig) -> ssl.SSLContext:
    """A TLS 1.2+ server context; unreadable or mismatched files are configuration errors naming the setting."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(
            config.ssl_certificate_location, config.ssl_key_location, password=config.ssl_key_password or None
        )
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"cannot load ssl.certificate.location {config.ssl_certificate_location!r} with ssl.key.location "
            f"{config.ssl_key_location!r}: {exc}"
        ) from None
    context.verify_mode = VERIFY_MODES[config.ssl_client_auth]
    if config.ssl_client_auth != "none":
        try:
            context.load_verify_locations(cafile=config.ssl_ca_location)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"cannot load ssl.ca.location {config.ssl_ca_location!r}: {exc}") from None
    return context
