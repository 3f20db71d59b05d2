"""Lossless JSON: the values a session log may hold, and the canonical byte encoding of them.

The TypeScript harness writes ``JSON.stringify`` output, so the canonical form is what that gives:
compact, non-ASCII kept as UTF-8, key insertion order kept, integers as integers, floats in
JavaScript's number format (``1e+21``, ``1.5``, ``100`` for ``100.0``), and lone surrogates as
``\\udXXX`` escapes so the bytes are always valid UTF-8. Values JSON cannot carry losslessly
(``NaN``, infinities, ``-0.0``, integers JavaScript cannot hold exactly, tuples, sets,
class instances, non-string keys, cycles) are refused with :class:`LosslessJsonError` naming the
path of the bad value.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, TypeAlias

from pydantic_core import PydanticSerializationError
from pydantic_core import to_json as _rust_encode

from dsh_session._errors import LosslessJsonError

JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
"""A JSON value as Python holds it: ``None``, ``bool``, ``int``, ``float``, ``str``, list, dict."""

JsonObject: TypeAlias = dict[str, Any]
"""A JSON object as Python holds it (keys in insertion order)."""

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer JavaScript (and so the TypeScript harness) holds exactly."""

_c_encode = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
).encode
_encode_str = json.encoder.encode_basestring
_SURROGATES = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")


def _exact_in_javascript(value: int) -> bool:
    """A big integer that is exactly what JavaScript writes for some double below 1e21 (like
    ``2**60``, or the ``52841431442818820`` it writes for 5.284143144281882e16)."""
    return abs(value) < 10**21 and js_number(float(value)) == str(value)


def _check(value: Any, path: str, ancestors: set[int]) -> bool:
    """Raise on a value that is not lossless JSON; return whether it holds a float."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return False
    if kind is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER or _exact_in_javascript(value):
            return False
        raise LosslessJsonError(path, f"integer {value} has no exact JavaScript number")
    if kind is float:
        if not math.isfinite(value):
            raise LosslessJsonError(path, f"{value!r} is not a finite number")
        if value == 0.0 and math.copysign(1.0, value) < 0:
            raise LosslessJsonError(path, "-0.0 does not survive JSON")
        return True
    if kind is dict or kind is list:
        ident = id(value)
        if ident in ancestors:
            raise LosslessJsonError(path, "the value contains itself (a cycle)")
        ancestors.add(ident)
        has_float = False
        if kind is dict:
            for key, item in value.items():
                if type(key) is not str:
                    raise LosslessJsonError(path, f"key {key!r} is not a string")
                if _check(item, f"{path}[{key!r}]", ancestors):
                    has_float = True
        else:
            for index, item in enumerate(value):
                if _check(item, f"{path}[{index}]", ancestors):
                    has_float = True
        ancestors.discard(ident)
        return has_float
    raise LosslessJsonError(path, f"a {kind.__name__} is not a JSON value")


def is_lossless_json(value: object) -> bool:
    """Whether ``value`` survives a JSON round trip exactly (see the module rules)."""
    try:
        _check(value, "$", set())
    except LosslessJsonError:
        return False
    except RecursionError:
        return False
    return True


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    return value


def lossless_json_snapshot(value: object) -> JsonValue:
    """A detached deep copy of ``value``, or :class:`LosslessJsonError` naming the bad path.

    Shared (non-cyclic) sub-values are allowed; the copy does not share them with the input.
    """
    try:
        _check(value, "$", set())
        return _copy(value)  # type: ignore[no-any-return]
    except RecursionError:
        raise LosslessJsonError("$", "nested too deeply") from None


def as_javascript_reads(value: Any) -> Any:
    """``value`` with every integer that has no exact JavaScript number replaced by the number
    JavaScript's ``JSON.parse`` reads it as: the nearest double, or ``None`` past the double
    range (``JSON.parse`` gives ``Infinity``, which ``JSON.stringify`` writes as ``null``).

    Returns ``value`` itself when nothing changes; changed containers are copies.
    """
    kind = type(value)
    if kind is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER or _exact_in_javascript(value):
            return value
        try:
            return float(value)
        except OverflowError:
            return None
    if kind is dict:
        changed = {key: as_javascript_reads(item) for key, item in value.items()}
        same = all(changed[key] is item for key, item in value.items())
        return value if same else changed
    if kind is list:
        items = [as_javascript_reads(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def js_number(value: float) -> str:
    """Format a finite float the way JavaScript's ``Number.prototype.toString`` does."""
    text = repr(value)
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exp_text = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    every = whole + frac
    digits = every.lstrip("0")
    if not digits:
        return "0"
    # value = 0.<digits> * 10**n  (the k digits and n of the ECMAScript algorithm)
    n = len(whole) + (int(exp_text) if exp_text else 0) - (len(every) - len(digits))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp = f"e{'+' if e >= 0 else '-'}{abs(e)}"
        body = (digits if k == 1 else digits[0] + "." + digits[1:]) + exp
    return sign + body


def _slow_encode(value: Any, parts: list[str]) -> None:
    kind = type(value)
    if kind is str:
        parts.append(_encode_str(value))
    elif value is None:
        parts.append("null")
    elif kind is bool:
        parts.append("true" if value else "false")
    elif kind is int:
        parts.append(str(value))
    elif kind is float:
        parts.append(js_number(value))
    elif kind is list:
        parts.append("[")
        for index, item in enumerate(value):
            if index:
                parts.append(",")
            _slow_encode(item, parts)
        parts.append("]")
    else:
        parts.append("{")
        for index, (key, item) in enumerate(value.items()):
            if index:
                parts.append(",")
            parts.append(_encode_str(key))
            parts.append(":")
            _slow_encode(item, parts)
        parts.append("}")


def _escape_surrogates(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) == 2:  # a valid pair held as two code points: one character, as JavaScript sees
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    return f"\\u{ord(text):04x}"


def _to_bytes(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub(_escape_surrogates, text).encode("utf-8")


class _Escalate(Exception):
    """Raised by the quick check for anything it does not accept outright."""


def _quick_check(value: Any) -> bool:
    """The accept-only twin of :func:`_check`, for the encode hot path: no path strings and no
    cycle bookkeeping (a cycle ends in ``RecursionError``). Accepts a subset of what ``_check``
    accepts; anything else raises :class:`_Escalate` (or ``RecursionError``) so the caller runs
    ``_check`` for the precise error. Returns whether a float needs JavaScript formatting: one
    whose ``repr`` (what the C encoder writes) differs from JavaScript's, i.e. holds an exponent
    or ends in ``.0``; other finite floats are written identically by both.
    """
    kind = type(value)
    if kind is dict:
        items: Any = value.values()
        for key in value:
            if type(key) is not str:
                raise _Escalate
    elif kind is list:
        items = value
    else:
        items = (value,)
    odd = False
    for item in items:
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                raise _Escalate
        elif kind is dict or kind is list:
            if _quick_check(item):
                odd = True
        elif kind is float:
            text = repr(item)
            if text[-2:] == ".0" or "e" in text or "n" in text:  # also inf and nan
                if not math.isfinite(item) or (item == 0.0 and math.copysign(1.0, item) < 0):
                    raise _Escalate
                odd = True
        else:
            raise _Escalate
    return odd


def dumps_canonical(value: object) -> bytes:
    """The canonical JSON bytes of ``value`` (compact, key order kept, JavaScript number format).

    Raises :class:`LosslessJsonError` for a value that is not lossless JSON.
    """
    try:
        odd_float = _quick_check(value)
    except (_Escalate, RecursionError):
        odd_float = None  # let the precise check decide (and name the bad path)
    if odd_float is False:  # every float (if any) has the same text in repr and in JavaScript
        try:
            # the C encoder's bytes (string escapes, repr floats, UTF-8) ~5x faster
            return _rust_encode(value)
        except PydanticSerializationError:  # a lone surrogate, or nesting past its depth limit
            pass
    try:
        if odd_float is not False and _check(value, "$", set()):  # floats JavaScript writes
            parts: list[str] = []
            _slow_encode(value, parts)
            return _to_bytes("".join(parts))
        return _to_bytes(_c_encode(value))
    except RecursionError:  # in a check, or in the C encoder (which counts the caller's frames)
        raise LosslessJsonError("$", "nested too deeply") from None
