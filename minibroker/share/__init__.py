"""Share groups (KIP-932, "queues for Kafka"): many members read one partition together, record by record.

Two halves with a narrow interface between them, as in Kafka:

- membership (``groups``): ShareGroupHeartbeat and ShareGroupDescribe, the simple assignor, session timeouts, the
  share group records of ``__consumer_offsets``; it tells the data path when a member is gone.
- the data path (``manager``, ``partition``, ``sessions``): one ``SharePartition`` per (group, topic, partition) on the
  partition's leader, acquiring records for members with locks on the broker's clock, acknowledgements, share
  sessions, and the start offsets the admin APIs read and change; its state is kept in ``__share_group_state``
  (``state_store``) as Kafka's share coordinator keeps it.

The value types both halves and the state store share are ``minibroker.protocol.share_state`` (the record codec
uses them too).
"""
