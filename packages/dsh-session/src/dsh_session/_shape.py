"""Shape checks of event wire dicts: the envelope (``type, seq, time, data`` and the optional
``ignorable``, ``sourceEventSeqs``, ``surfaceOp``) and each core type's data.

Reading is the hot path of every backend, so a line is parsed once by ``pydantic_core.from_json``
(which caches short strings and keeps key order) and the dict is checked, then wrapped, by a
small straight-line function per event type, generated once from the ``TypedDict`` shapes of
:mod:`dsh_session._events` (the way ``dataclasses`` generates ``__init__``). Measured against
validating through a pydantic union, this is what keeps decoding near the raw parse speed. The
dict is then wrapped, not copied, so a line re-encodes byte for byte.

Decoding checks *shape*; the rules that need the log (seq equals index, ``sourceEventSeqs``
items below the event's seq and unique, surface transitions, lossless numbers) are the
:class:`~dsh_session.Session`'s.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

from dsh_session._data import (
    DATA_SHAPES,
)
from dsh_session._errors import EventDecodeError
from dsh_session._events import (
    CORE_EVENT_CLASSES,
    OpaqueEvent,
    _Event,
    _new,
    _set_wire,
)
from dsh_session._json import (
    MAX_SAFE_INTEGER,
    JsonObject,
)
from dsh_session._vocabulary import (
    PLUGIN_EVENT_TYPES,
    SURFACE_EVENT_TYPES,
)

Build = Callable[[JsonObject], Any]
"""A generated function: checks one event type's wire dict and wraps it in its event class
(raises :class:`EventDecodeError` naming the problem)."""

_KINDS: dict[Any, str | None] = {
    int: "int",
    str: "str",
    bool: "bool",
    Any: None,
    JsonObject: "dict",
    list[Any]: "list",
}
_KIND_WORDS = {"int": "an integer", "str": "a string", "bool": "a boolean", "dict": "an object"}
_BASE_KEYS = frozenset({"type", "seq", "time", "data", "ignorable"})
_SURFACE_KEYS = _BASE_KEYS | {"sourceEventSeqs", "surfaceOp"}
_MISSING: Any = object()


def surface_op_problem(op: object) -> str | None:
    """Why ``op`` is not ``'append'`` or exactly ``{op:'replace', start, end}`` (or the later
    generations' ``{op:'replace', startSeq, endSeq}``) (None: it is)."""
    if op == "append" and type(op) is str:
        return None
    if type(op) is dict and op.get("op") == "replace" and len(op) == 3:
        if "start" in op:
            start, end = op["start"], op.get("end")
        else:  # the v3/v4 spelling (which a Session of another generation refuses)
            start, end = op.get("startSeq"), op.get("endSeq")
        if (
            type(start) is int
            and type(end) is int
            and 0 <= start <= MAX_SAFE_INTEGER
            and 0 <= end <= MAX_SAFE_INTEGER
        ):
            return None
    return (
        f"surfaceOp must be 'append' or {{op:'replace', start, end}} (v3+: startSeq, endSeq), "
        f"not {op!r:.60}"
    )


def _data_fields(shape: type) -> list[tuple[str, str | None, bool]]:
    hints = typing.get_type_hints(shape)
    required: frozenset[str] = shape.__required_keys__  # type: ignore[attr-defined]
    return [(key, _KINDS[hint], key in required) for key, hint in hints.items()]


def _source(
    name: str, surface: bool | None, fields: list[tuple[str, str | None, bool]] | None
) -> str:
    """The source of the check function of one event type (straight-line type tests).

    Most lines have exactly the four required envelope keys, so that case skips the key-set and
    optional-key tests; problems are worded by :func:`_explain` on the (rare) failing path.
    """
    lines = ["def build(w):"]
    if surface:  # the common shapes: + surfaceOp 'append' (+ a sourceEventSeqs array)
        lines += [
            "    n = len(w)",
            "    if n == 5 and w.get('surfaceOp') == 'append':",
            "        pass",
            "    elif (n == 6 and w.get('surfaceOp') == 'append'",
            "          and type(w.get('sourceEventSeqs')) is list):",
            "        pass",
            "    else:",
        ]
    else:
        lines += [
            "    if len(w) == 4:",
            "        pass",
            "    else:",
        ]
    lines += [
        "        if not w.keys() <= KEYS:",
        "            raise bad(w, f'unexpected envelope key(s) {sorted(w.keys() - KEYS)}')",
        "        if 'ignorable' in w and type(w['ignorable']) is not bool:",
        "            raise bad(w, 'ignorable must be a boolean')",
    ]
    if surface is not False:
        lines += [
            "        if 'sourceEventSeqs' in w and type(w['sourceEventSeqs']) is not list:",
            "            raise bad(w, 'sourceEventSeqs must be an array of seqs')",
            "        v = w.get('surfaceOp', MISSING)",
            "        if v is not MISSING:",
            "            problem = surface_op_problem(v)",
            "            if problem is not None:",
            "                raise bad(w, problem)",
        ]
        if surface:
            lines += [
                "        else:",
                f"            raise bad(w, 'a {name} event must carry surfaceOp')",
            ]
    lines += [
        "    v = w.get('seq')",
        "    if type(v) is not int or not 0 <= v <= MAX:",
        "        raise bad(w, f'seq must be a non-negative safe integer, not {v!r:.40}')",
        "    v = w.get('time')",
        "    if type(v) is not int or not -MAX <= v <= MAX:",
        "        raise bad(w, f'time must be a safe integer, not {v!r:.40}')",
        "    d = w.get('data', MISSING)",
        "    if d is MISSING:",
        "        raise bad(w, 'data is missing')",
    ]
    if fields is not None:
        lines += ["    if type(d) is not dict:", "        raise bad(w, 'data must be an object')"]
        for key, kind, required in fields:
            if required and kind is not None:
                lines += [
                    f"    if type(d.get({key!r})) is not {kind}:",
                    f"        raise bad(w, explain(d, {key!r}, {kind!r}))",
                ]
            elif required:
                lines += [
                    f"    if {key!r} not in d:",
                    f"        raise bad(w, 'data.{key} is missing')",
                ]
            elif kind is not None:
                lines += [
                    f"    v = d.get({key!r}, MISSING)",
                    f"    if v is not MISSING and type(v) is not {kind}:",
                    f"        raise bad(w, explain(d, {key!r}, {kind!r}))",
                ]
    lines += ["    event = new(CLS)", "    set_wire(event, w)", "    return event"]
    return "\n".join(lines)


def _fast_source(surface: bool | None, fields: list[tuple[str, str | None, bool]] | None) -> str:
    """The source of the hot-path twin of :func:`_source`: the common shape (exactly the four
    envelope keys, or five with ``surfaceOp: 'append'`` for a surface type) tested with plain
    subscripts in one condition; anything else, a missing key included, goes to the full
    function (``slow``), which accepts or words the problem. Accepts only what ``slow`` accepts."""
    common = "len(w) == 5 and w['surfaceOp'] == 'append'" if surface else "len(w) == 4"
    tests = [
        "type(s) is int",
        "0 <= s <= MAX",
        "type(t) is int",
        "-MAX <= t <= MAX",
    ]
    if fields is not None:
        tests.append("type(d) is dict")
        for key, kind, required in fields:
            if required and kind is not None:
                tests.append(f"type(d[{key!r}]) is {kind}")
            elif required:
                tests.append(f"{key!r} in d")
            elif kind is not None:
                tests.append(f"({key!r} not in d or type(d[{key!r}]) is {kind})")
    condition = "\n                and ".join(tests)
    return "\n".join(
        [
            "def build(w):",
            "    try:",
            f"        if {common}:",
            "            s = w['seq']",
            "            t = w['time']",
            "            d = w['data']",
            f"            if ({condition}):",
            "                event = new(CLS)",
            "                set_wire(event, w)",
            "                return event",
            "    except KeyError:",
            "        pass",
            "    return slow(w)",
        ]
    )


def _explain(data: JsonObject, key: str, kind: str) -> str:
    if key not in data:
        return f"data.{key} is missing"
    return f"data.{key} must be {_KIND_WORDS.get(kind, 'an array')}, not {data[key]!r:.40}"


def _bad(wire: JsonObject, problem: str) -> EventDecodeError:
    return EventDecodeError(f"{wire['type']}: {problem}")


def _compile(
    cls: type[_Event[Any]],
    name: str,
    surface: bool | None,
    fields: list[tuple[str, str | None, bool]] | None,
) -> Build:
    namespace: dict[str, Any] = {
        "KEYS": _SURFACE_KEYS if surface is not False else _BASE_KEYS,
        "MAX": MAX_SAFE_INTEGER,
        "MISSING": _MISSING,
        "CLS": cls,
        "new": _new,
        "set_wire": _set_wire,
        "bad": _bad,
        "surface_op_problem": surface_op_problem,
        "explain": _explain,
    }
    exec(_source(name, surface, fields), namespace)  # generated from our own shapes
    namespace["slow"] = namespace["build"]
    exec(_fast_source(surface, fields), namespace)
    return namespace["build"]  # type: ignore[no-any-return]


def _core_build(cls: type[_Event[Any]]) -> Build:
    name = cls.event_type
    assert name is not None
    fields = _data_fields(DATA_SHAPES[name])
    return _compile(cls, name, name in SURFACE_EVENT_TYPES, fields)


OPAQUE_BUILD: Build = _compile(OpaqueEvent, "opaque", None, None)
"""How plugin and unknown types are checked and wrapped (data is any JSON value)."""

BUILDERS: dict[str, Build] = {str(cls.event_type): _core_build(cls) for cls in CORE_EVENT_CLASSES}
"""Event type → its generated check-and-wrap function (plugin types → :data:`OPAQUE_BUILD`)."""
BUILDERS.update(dict.fromkeys(PLUGIN_EVENT_TYPES, OPAQUE_BUILD))
