"""Sans-IO Kafka wire protocol: bytes in, objects out, and back. No sockets, files or asyncio here."""
