"""Lines a misbehaving client causes on every request: the first logged, the repeats counted per interval.

An old client refused for its API version, a wrong password, a TLS client on a plaintext port: each retries every
few seconds, forever, and a line per retry buries everything else. Here a line counts as a repeat when it reads the
same with the connection's address replaced by the client's host (the port changes with every reconnection); so
repeats are per client (host, and client id where the line names it) and per problem. The first of them is logged
as it comes; the repeats during the next ``REPEAT_INTERVAL_MS`` of the broker's clock are counted, and when the
interval ends one line gives their count (``... [37 more times in the last 60 s]``). A client that goes on gets one
such line per interval; one that stopped is forgotten, and its next repeat is logged in full again. Loaded with the
first such line: a broker that refuses nothing never imports it.
"""

from __future__ import annotations

import logging
from typing import Callable

from minibroker.cluster.clock import call_later

REPEAT_INTERVAL_MS = 60_000


class _Repeats:
    """One problem of one client within the current interval."""

    __slots__ = ("logger", "level", "text", "since_ms", "count", "cancel")
    cancel: Callable[[], None]  # the end of the interval, scheduled on the clock: set by RepeatedLogs._start_interval

    def __init__(self, logger: logging.Logger, level: int, text: str, since_ms: int) -> None:
        self.logger = logger
        self.level = level
        self.text = text  # the line with the client's host for the connection's address
        self.since_ms = since_ms
        self.count = 0  # repeats since since_ms, not logged yet


class RepeatedLogs:
    """The lines of one broker that a client can repeat, logged through ``warning`` and ``error``."""

    def __init__(self, clock: Callable[[], int], interval_ms: int = REPEAT_INTERVAL_MS) -> None:
        self._clock = clock
        self._interval_ms = interval_ms
        self._open: dict[tuple[str, int, str], _Repeats] = {}

    def warning(self, logger: logging.Logger, msg: str, peer: str, *args: object) -> None:
        """``logger.warning(msg, peer, *args)`` unless it repeats this interval; ``peer`` is the connection's
        ``host:port``, the message's first argument."""
        self._log(logger, logging.WARNING, msg, peer, args)

    def error(self, logger: logging.Logger, msg: str, peer: str, *args: object) -> None:
        """As ``warning``, at ERROR."""
        self._log(logger, logging.ERROR, msg, peer, args)

    def _log(self, logger: logging.Logger, level: int, msg: str, peer: str, args: tuple[object, ...]) -> None:
        text = msg % (peer.rpartition(":")[0] or peer, *args)
        key = (logger.name, level, text)
        repeats = self._open.get(key)
        if repeats is not None:
            repeats.count += 1
            return
        logger.log(level, msg, peer, *args)
        repeats = self._open[key] = _Repeats(logger, level, text, self._clock())
        self._start_interval(key, repeats)

    def _start_interval(self, key: tuple[str, int, str], repeats: _Repeats) -> None:
        repeats.cancel = call_later(self._clock, self._interval_ms, lambda: self._interval_ended(key))

    def _interval_ended(self, key: tuple[str, int, str]) -> None:
        """One line for the repeats of the interval, and another interval to count in; none: the client is forgotten."""
        repeats = self._open[key]
        if not repeats.count:
            del self._open[key]
            return
        self._summarise(repeats)
        repeats.since_ms, repeats.count = self._clock(), 0
        self._start_interval(key, repeats)

    def _summarise(self, repeats: _Repeats) -> None:
        seconds = max(1, round((self._clock() - repeats.since_ms) / 1000))
        repeats.logger.log(repeats.level, "%s [%d more times in the last %d s]", repeats.text, repeats.count, seconds)

    def flush(self) -> None:
        """At shutdown: the repeats counted so far, each in its line, and nothing left scheduled."""
        for repeats in self._open.values():
            repeats.cancel()
            if repeats.count:
                self._summarise(repeats)
        self._open.clear()
