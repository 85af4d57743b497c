"""A schema registry served next to the broker: Confluent Schema Registry's REST API, its state in ``_schemas``.

Imported only when ``schema.registry.port`` is set (a default start-up loads none of it). ``state`` holds subjects,
versions, ids and configs and changes only by applying ``records`` (Confluent's ``_schemas`` key/value JSON), the
same way at start-up (replay) and when the API writes; ``api`` maps routes to operations and Confluent's error codes;
``server`` is the HTTP/1.1 keep-alive listener and the glue to the broker's log. ``avro`` parses Avro schemas into
Confluent's canonical and normalized strings and ``compatibility`` checks them by Avro's schema resolution; both are
pure functions with no broker imports. ``json_schema``, ``json_model`` and ``json_compatibility`` do the same for
JSON Schema, ``protobuf*`` for Protobuf (``formats`` names each type's pair; ``parsed`` is what the REST layer asks of
a parsed schema of any type).
"""
