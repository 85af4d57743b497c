"""The command-line tools: the ``minibroker`` command and what its subcommands run.

Owns the argument parsing and the serve loop (``cli``), ``probe`` (one ApiVersions round trip, for health checks and
start-up waits), ``dump`` (segment files as kafka-dump-log shows them), the generated reference tables
(``reference``: ``config-reference``, ``api-reference``, ``unserved-apis``) and the Kafka images' tools the container
image calls (``kafka_image``).

It sits on top and may import anything, the broker included, each when a command runs. Nothing imports it but
``python -m minibroker``, the console script and the pytest plugin's start-up wait (``probe``).
"""
