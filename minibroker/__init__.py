"""minibroker: a small, fast, Kafka wire-protocol compatible broker."""

__version__ = "0.1.0"
