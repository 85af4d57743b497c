"""The cluster in one process: what a Kafka cluster's controller and brokers know, held by one broker object.

Owns where partitions live and who leads them (``placements``, ``replicas``, ``racks``), the coordinators' partitions
(``coordinators``) and the internal topics (``internal_topics``), producer ids, fetch sessions, feature levels
(``features``) and the clock every timer follows, system or virtual (``clock``).

It imports ``config``, ``protocol`` and ``storage`` (and names the broker's type), never the server, the handlers, test
control or the commands. The broker, the handlers, the subsystems and test control import it.
"""
