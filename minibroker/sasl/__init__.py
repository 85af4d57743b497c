"""SASL on SASL_PLAINTEXT and SASL_SSL listeners: PLAIN and SCRAM-SHA-256/512, server side.

``credentials`` turns ``sasl.users`` into salted, iterated SCRAM credentials at start-up (no password is kept),
``plain`` and ``scram`` check one exchange each, ``session`` is the state of one connection. The wire
handlers (SaslHandshake, SaslAuthenticate) are in ``minibroker.handlers.sasl``.
"""
