"""``dsh config --dump`` as TOML: a config file that loads back to the same configuration,
with what dsh worked out beside each key as a comment.

Two views of one configuration go in: ``written`` (`Config.as_written`: what a config file
holds) and ``shown`` (`Config.dump`: every value filled in, for reading). A key of
``written`` is a TOML key; what only ``shown`` has, or has otherwise (a default's place,
whether an API key is set, a built-in provider, a model's window and prices, the system
prompt), is a ``#`` line, so reading the text back as a config gives exactly ``written``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dsh_agent_core.cli._terminal import terminal_json

__all__ = ["HEADING", "config_toml"]

HEADING = (
    "# dsh config --dump: this configuration, which loads back as it is (dsh --config FILE).\n"
    "# A '#' line is what dsh worked out and is not read back: a default's place, a built-in\n"
    "# provider, whether a key's variable is set, a model's window and prices, the prompt."
)
"""The comment the TOML form starts with."""

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ABSENT = object()


def _value(value: Any) -> str:
    """``value`` as a TOML value: a table inside an array is an inline table (its keys quoted
    as `_key` does), a ``None`` in it is left out (TOML has no null)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item) for item in value if item is not None) + "]"
    if isinstance(value, dict):
        pairs = (f"{_key(str(k))} = {_value(v)}" for k, v in value.items() if v is not None)
        inline = ", ".join(pairs)
        return "{ " + inline + " }" if inline else "{}"
    return terminal_json(str(value))  # a TOML basic string: controls as \uXXXX escapes


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else terminal_json(key)


def _tables(value: Any) -> bool:
    """Whether ``value`` is written as an array of tables."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _table(written: Mapping[str, Any], shown: Mapping[str, Any], prefix: str) -> list[str]:
    """The lines of one table: its keys (and comments), then its subtables and arrays."""
    lines: list[str] = []
    later: list[tuple[str, Any, Any]] = []
    for name in [*written, *(k for k in shown if k not in written)]:
        key = _key(str(name))
        value = written.get(name, _ABSENT)
        seen = shown.get(name, _ABSENT)
        if isinstance(value, dict) or _tables(value):
            later.append((f"{prefix}{key}", value, seen))
            if seen is not _ABSENT and seen is not None and not isinstance(seen, dict | list):
                lines.append(f"# {key} = {_value(seen)}")  # shown otherwise (a model's prices)
        elif value is not _ABSENT and value is not None:
            lines.append(f"{key} = {_value(value)}")
            if seen is not _ABSENT and seen is not None and seen != value:
                lines.append(f"# {key} = {_value(seen)}")
        elif seen is _ABSENT or seen is None:
            lines.append(f"# {key} is not set")
        elif isinstance(seen, dict) or _tables(seen):
            later.append((f"{prefix}{key}", _ABSENT, seen))
        else:
            lines.append(f"# {key} = {_value(seen)}")
    for path, value, seen in later:
        if value is _ABSENT:  # only shown: the whole table as comments
            lines.append("")
            lines += ["# " + line if line else "" for line in _shown_only(path, seen)]
        elif isinstance(value, dict):
            lines.append("")
            lines.append(f"[{path}]")
            lines += _table(value, seen if isinstance(seen, dict) else {}, f"{path}.")
        else:
            for item in value:
                lines += ["", f"[[{path}]]", *_table(item, item, f"{path}.")]
    return lines


def _shown_only(path: str, seen: Any) -> list[str]:
    """A table (or array of tables) that only ``shown`` has, as it would be written; the
    caller comments every line out."""
    if isinstance(seen, dict):
        lines = [f"[{path}]"]
        body = {k: v for k, v in seen.items() if v is not None and v != {}}
        return lines + [line for line in _table(body, body, f"{path}.") if line]
    return [line for item in seen for line in (f"[[{path}]]", *_table(item, item, f"{path}."))]


def config_toml(written: Mapping[str, Any], shown: Mapping[str, Any]) -> str:
    """The TOML text of a configuration: `HEADING`, then ``written`` as TOML keys and tables,
    and what ``shown`` adds or shows otherwise as ``#`` lines beside them."""
    lines = [HEADING, *_table(written, shown, "")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines))
