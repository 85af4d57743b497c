"""Authorization as Kafka's StandardAuthorizer does it: ACL bindings, their store in the data directory, the
authorizer that checks requests against them, and the principal of each connection."""
