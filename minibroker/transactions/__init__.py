"""The transaction coordinator: transactional ids, producer epochs, two-phase commit with markers."""
