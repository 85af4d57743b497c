"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-546): what AlterClientQuotas stores (``store``) and how requests
are measured against it and throttled (``enforce``), as Kafka's ClientQuotaControlManager and ClientQuotaManager do."""
