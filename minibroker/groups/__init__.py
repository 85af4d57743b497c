"""Consumer groups: the classic group coordinator, committed offsets and the ``__consumer_offsets`` topic."""
