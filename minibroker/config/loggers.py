"""BROKER_LOGGER resources (KIP-412): the log levels of minibroker's loggers, described and changed as Kafka's
RuntimeLoggerManager and Log4jController do, with Kafka's level names over Python's logging. As in Kafka, a change
lasts until the process stops (it is not kept); one process serving several nodes has one set of loggers."""

from __future__ import annotations

import logging
from typing import Any

from minibroker.protocol.errors import ErrorCode

ROOT = "root"
PREFIX = "minibroker"
TRACE = 5  # below DEBUG, as log4j's TRACE
OFF = logging.CRITICAL + 10
LEVELS = {"OFF": OFF, "FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING,
          "INFO": logging.INFO, "DEBUG": logging.DEBUG, "TRACE": TRACE}
VALID_LEVELS = ", ".join(sorted(LEVELS))
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3

log = logging.getLogger(__name__)


class LoggerChangeError(Exception):
    """A change Kafka refuses, with the error code and message it answers."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


def level_name(level: int) -> str:
    """Kafka's name of a Python level (the nearest at or below it)."""
    for name, value in sorted(LEVELS.items(), key=lambda item: -item[1]):
        if level >= value:
            return name
    return "TRACE"


def _logger(name: str) -> logging.Logger | None:
    if name == ROOT:
        return logging.getLogger()
    if name != PREFIX and not name.startswith(PREFIX + "."):
        return None
    found = logging.Logger.manager.loggerDict.get(name)
    return found if isinstance(found, logging.Logger) else None


def loggers() -> dict[str, str]:
    """Every logger of minibroker with its effective level, and the root logger (Log4jController.loggers)."""
    found = {ROOT: level_name(logging.getLogger().getEffectiveLevel())}
    for name in sorted(logging.Logger.manager.loggerDict):
        logger = _logger(name)
        if logger is not None:
            found[name] = level_name(logger.getEffectiveLevel())
    return found


def validate(ops: list[dict[str, Any]]) -> None:
    """RuntimeLoggerManager.validateLogLevelConfigs: SET a known logger to a known level, DELETE a known logger's
    level (not the root's); APPEND and SUBTRACT are refused."""
    for op in ops:
        name, kind = op["name"], op["config_operation"]
        if kind in (OP_SET, OP_DELETE) and _logger(name) is None:
            raise LoggerChangeError(ErrorCode.INVALID_CONFIG, f"Logger {name} does not exist!")
        if kind == OP_SET and op["value"] not in LEVELS:
            raise LoggerChangeError(
                ErrorCode.INVALID_CONFIG,
                f"Cannot set the log level of {name} to {op['value']} as it is not a supported log level. "
                f"Valid log levels are {VALID_LEVELS}",
            )
        if kind == OP_DELETE and name == ROOT:
            raise LoggerChangeError(ErrorCode.INVALID_REQUEST, f"Removing the log level of the {ROOT} logger is not allowed")
        if kind in (OP_APPEND, OP_SUBTRACT):
            verb = "APPEND" if kind == OP_APPEND else "SUBTRACT"
            raise LoggerChangeError(ErrorCode.INVALID_REQUEST, f"{verb} operation is not allowed for the BROKER_LOGGER resource")
        if kind not in (OP_SET, OP_DELETE):
            raise LoggerChangeError(
                ErrorCode.INVALID_REQUEST, f"Unknown operation type {kind} is not allowed for the BROKER_LOGGER resource"
            )


def apply(ops: list[dict[str, Any]]) -> None:
    """Set or unset (back to the parent's) each logger's level; validated first."""
    for op in ops:
        logger = _logger(op["name"])
        assert logger is not None
        if op["config_operation"] == OP_SET:
            logger.setLevel(LEVELS[op["value"]])
            log.info("Updated the log level of %s to %s", op["name"], op["value"])
        else:
            logger.setLevel(logging.NOTSET)
            log.info("Unset the log level of %s", op["name"])
