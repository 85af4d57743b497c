"""JSON written as Confluent's registry writes it with Jackson, for the canonical strings of Avro and JSON schemas:
no spaces, non-ASCII kept, control characters as uppercase ``\\uXXXX``, decimals as BigDecimal prints them
(``1.50``, ``1E+5``), doubles as Java prints them and non-finite numbers quoted."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

_NON_FINITE = {"nan": '"NaN"', "inf": '"Infinity"', "-inf": '"-Infinity"'}
_ESCAPE = re.compile(r"\\(u[0-9a-f]{4}|.)")


def write(value: Any) -> str:
    """`value` (as `json` reads it, objects as dicts in their order) in Jackson's compact form."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        return str(abs(value) if value.is_zero() else value)
    if isinstance(value, float):
        return java_double(value) if math.isfinite(value) else _NON_FINITE[repr(value)]
    if isinstance(value, list):
        return "[" + ",".join(map(write, value)) + "]"
    return "{" + ",".join(f"{quote(k)}:{write(v)}" for k, v in value.items()) + "}"


def quote(text: str) -> str:
    """A JSON string as Jackson escapes it."""
    return _ESCAPE.sub(_upper_hex, json.dumps(text, ensure_ascii=False))


def _upper_hex(match: re.Match[str]) -> str:
    escape = match.group(1)
    return "\\" + ("u" + escape[1:].upper() if len(escape) == 5 else escape)


def java_double(x: float) -> str:
    """Java's `Double.toString`: plain between 1e-3 and 1e7, else d.dddE±n."""
    if x == 0:
        return "-0.0" if str(x).startswith("-") else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        return repr(x)
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    text = "".join(map(str, digits))
    mantissa = text[0] + "." + (text[1:] or "0")
    return ("-" if sign else "") + f"{mantissa}E{len(text) - 1 + exponent}"
