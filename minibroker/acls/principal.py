"""The principal Kafka's DefaultKafkaPrincipalBuilder gives a connection: ``User:ANONYMOUS`` on PLAINTEXT (and on SSL
without a client certificate), ``User:NAME`` for a SASL login, and ``User:`` followed by the client certificate's
subject on SSL, written as Java's X500Principal.getName() writes it (RFC 2253: the last RDN first, ``CN=client,O=Org``)
and mapped by ``ssl.principal.mapping.rules``, which is what ACLs and ``super.users`` name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minibroker.server.connection import KafkaConnection

ANONYMOUS = "User:ANONYMOUS"
# OpenSSL's attribute names as Java's RFC 2253 keywords; others keep OpenSSL's name.
KEYWORDS = {
    "commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST", "organizationName": "O",
    "organizationalUnitName": "OU", "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID",
}
SPECIAL = ',+"\\<>;'


def connection_principal(connection: KafkaConnection) -> str:
    """The connection's principal, once it is known (a SASL connection's before login is ANONYMOUS); MappingError
    when no ``ssl.principal.mapping.rules`` rule maps its certificate."""
    session = connection.sasl
    if session is not None:
        return f"User:{session.username}" if session.authenticated else ANONYMOUS
    if connection.listener.protocol.uses_tls and connection.transport is not None:
        certificate = connection.transport.get_extra_info("peercert")
        if certificate and certificate.get("subject"):
            subject = distinguished_name(certificate["subject"])
            mapper = connection.broker.ssl_principal_mapper
            return "User:" + (mapper.name(subject) if mapper is not None else subject)
    return ANONYMOUS


def distinguished_name(subject: tuple[tuple[tuple[str, str], ...], ...]) -> str:
    """``ssl.SSLSocket.getpeercert()``'s subject (RDNs in certificate order) as an RFC 2253 string."""
    return ",".join("+".join(f"{KEYWORDS.get(kind, kind)}={escape(value)}" for kind, value in rdn) for rdn in reversed(subject))


def escape(value: Any) -> str:
    text = "".join("\\" + char if char in SPECIAL else char for char in str(value))
    if text.startswith(("#", " ")):
        text = "\\" + text
    if text.endswith(" ") and not text.endswith("\\ "):
        text = text[:-1] + "\\ "
    return text
