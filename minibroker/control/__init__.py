"""Test control and observation: what a test does to a running broker and what it sees of it.

Owns the control API's routes (``api``), injected faults (``faults``), the protocol transcript (``transcript``), the
broker's state as views (``observe``), stored batches and internal-topic records as Kafka's tools show them
(``batch_views``, ``record_decoders``; ``minibroker dump`` prints them too), and the web inspector's JSON, views and
pages (``inspect_api``, ``inspect_views``, ``inspector_pages``; its page and scripts are in ``minibroker/inspector``).

It sits on top of the broker and may import anything below it. Only the broker (which starts the control listener and
holds the faults and the transcript), ``minibroker.testing``, the pytest plugin and the commands import it; the
server, the handlers, the subsystems, the cluster and configuration never do.
"""
