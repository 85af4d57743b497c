"""Request handlers, one module per API family; importing this package fills the handler table."""

from minibroker.handlers import (  # noqa: F401  (registration)
    acls, admin, describe_topics, features, fetch, groups, metadata, produce, sasl, share, share_groups, share_offsets,
    transactions,
)
from minibroker.handlers.registry import HANDLERS

__all__ = ["HANDLERS"]
