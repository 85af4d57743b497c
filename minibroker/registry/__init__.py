"""Schema registry speaking Confluent Schema Registry's REST API (issue 30)."""
