"""Configuration: every setting the broker takes, where it comes from, and Kafka's facts about settings and releases.

Owns BrokerConfig (``settings``), the sources of settings (``sources``: properties files and the ``KAFKA_*``,
``KAFKA_CFG_*`` and ``MINIBROKER_*`` environments), Kafka's setting definitions and validators (``kafka_settings``,
generated from Kafka's source; ``legacy_settings``, ``values``), the releases ``kafka.version`` emulates
(``releases``, ``record_versions``, ``resources``), listeners as configured (``listeners``), dynamic broker configs and
loggers (``dynamic``, ``loggers``) and Kafka's RE2/J pattern syntax (``re2_syntax``).

It imports ``protocol``, ``storage`` and the settings modules of the subsystems that define their own settings
(``acls.settings``, ``sasl.settings``, ``groups.group_configs``, ``cluster.racks``), never the server, the handlers,
test control or the commands. Everything else imports it.
"""
