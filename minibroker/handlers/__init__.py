"""Request handlers, one module per API family; importing this package fills the handler table."""

from minibroker.handlers import acls, admin, fetch, groups, metadata, produce, sasl, transactions  # noqa: F401  (registration)
from minibroker.handlers.registry import HANDLERS

__all__ = ["HANDLERS"]
