"""Test helper: a surface event's data read the same whatever message shape it was written in."""

from __future__ import annotations

from typing import Any

from dsh_session import message_parts


def flat(kind: str, data: Any) -> Any:
    """``data`` with its message's fields lifted out (``content``: for a tool result the tool's
    own blocks; ``provenance``, ``callId``, ``isError``), its other keys kept."""
    parts = message_parts(kind, data)
    if parts is None:
        return data
    lifted = {key: value for key, value in data.items() if key not in ("message", "role", "id")}
    lifted["content"] = parts.content if parts.result is None else parts.result
    if kind == "assistant/message" and parts.source is not None:
        lifted["provenance"] = {k: v for k, v in parts.source.items() if k != "kind"}
    if parts.call_id is not None:
        lifted["callId"] = parts.call_id
        lifted["isError"] = parts.is_error
    return lifted
