"""The network server: from a socket to a handler and back.

Owns the connections (``connection``: framing, queueing, backpressure, writing answers and file regions), the request
pipeline (``dispatch``: decode, refuse, apply an injected fault, call the handler, encode, note in the transcript), the
request context handlers get (``context``), TLS, the open-files limit, eager task start, the codec cache, the rate of
client-caused log lines (``repeated_logs``), and the small HTTP/1.1 server of the control API and the schema registry
(``http``).

It imports ``protocol``, ``storage``, ``config``, ``cluster``, the handler table (``handlers.registry``) and the
subsystems that guard a connection (``acls``, ``sasl``, ``quotas``). It knows an injected fault only as the
``InjectedFault`` interface in ``context`` and the transcript only through the broker, and never imports test control
or the commands. The broker, the handlers and the subsystems that serve HTTP or charge requests import it.
"""
