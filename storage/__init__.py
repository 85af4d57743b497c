"""Partition logs in Apache Kafka's on-disk layout: segments, indexes, checkpoints and recovery."""
