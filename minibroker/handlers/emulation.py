"""The handler table as an emulated release served it (``kafka.version``): each API's range set to the release's from
``minibroker.config.releases``, down to the versions below Kafka 4's minimums that a handler answers as that release
did (``OLDEST``), and the notes the start-up line and ``api-reference`` print about the difference."""

from __future__ import annotations

from typing import Mapping

from minibroker.config.releases import resolve, served_by_release
from minibroker.handlers import OLDEST
from minibroker.handlers.registry import Handler


def emulated_apis(handlers: Mapping[int, Handler], text: str) -> dict[int, Handler]:
    """``handlers`` with each range set to what the release advertised, down to the handler's ``OLDEST`` version
    (the versions below Kafka 4's minimums that it answers as the release did) and up to its maximum; APIs the
    release did not serve are left out (refused like an unknown API)."""
    served = served_by_release()[resolve(text)]
    capped: dict[int, Handler] = {}
    for key, handler in handlers.items():
        low, high = served.get(key, (0, -1))
        low, high = max(low, OLDEST.get(key, handler.min_version)), min(high, handler.max_version)
        if low <= high:
            capped[key] = Handler(handler.api_key, low, high, handler.module)
    return capped


def _span(name: str, low: int, high: int) -> str:
    return f"{name} v{low}" if low == high else f"{name} v{low}-{high}"


def emulation_notes(handlers: Mapping[int, Handler], text: str) -> tuple[list[str], list[str]]:
    """What the start-up line and ``api-reference --kafka-version`` say besides the table: (the versions served below
    Kafka 4's minimums, as the release served them; the release's versions minibroker does not serve)."""
    from minibroker.protocol.messages import KAFKA_APIS

    served = served_by_release()[resolve(text)]
    emulated = emulated_apis(handlers, text)
    older = [_span(KAFKA_APIS[key][0], h.min_version, handlers[key].min_version - 1)
             for key, h in sorted(emulated.items()) if h.min_version < handlers[key].min_version]
    lacking = [_span(KAFKA_APIS[key][0], handlers[key].max_version + 1, served[key][1])
               for key in sorted(handlers) if key in served and served[key][1] > handlers[key].max_version]
    return older, lacking
