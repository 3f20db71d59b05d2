"""Rebuilding a model request from the session log alone, and the invariant that checks it."""

from __future__ import annotations

from dsh_agent import RequestConfig
from dsh_agent_loop._errors import RequestInvariantError
from dsh_agent_loop._requests import model_request
from dsh_llm import MESSAGE_ADAPTER, ModelRequest, ToolSchema
from dsh_session import Session

__all__ = ["check_request", "request_from_log"]


def request_from_log(session: Session) -> ModelRequest:
    """The request the log says was sent last: the folded ``request/header`` (config, system,
    tools, message prefix) and ``messagePrefix + derive_messages()``.

    Raises ``ValueError`` when the log has no ``request/header``.
    """
    header = session.request_header
    if header is None:
        raise ValueError(f"session {session.id!r} has no request/header to rebuild a request from")
    prefix = [MESSAGE_ADAPTER.validate_python(message) for message in header.message_prefix or ()]
    tools = [ToolSchema.model_validate(tool) for tool in header.tools or ()]
    return model_request(
        RequestConfig.from_wire(header.config),
        system=header.system,
        messages=[*prefix, *session.derive_messages()],
        tools=tools,
    )


def _open_step(session: Session) -> bool:
    for index in range(len(session.events) - 1, -1, -1):
        kind = session.events[index].type
        if kind == "step/start":
            return True
        if kind in ("step/end", "turn/end", "turn/start"):
            return False
    return False


def _first_difference(built: dict[str, object], rebuilt: dict[str, object]) -> str:
    for key in built.keys() | rebuilt.keys():
        if built.get(key) != rebuilt.get(key):
            return f"{key} differs"
    return "the requests differ"


def check_request(session: Session, request: ModelRequest) -> None:
    """Raise :class:`RequestInvariantError` unless ``request`` is exactly what the log rebuilds
    (and a step is open for it to belong to)."""
    seq = session.next_seq - 1
    if not _open_step(session):
        raise RequestInvariantError(session.id, seq, "no step is open in the log")
    try:
        rebuilt = request_from_log(session)
    except ValueError:
        raise RequestInvariantError(session.id, seq, "the log has no request/header") from None
    built_json = request.model_dump(mode="json")
    rebuilt_json = rebuilt.model_dump(mode="json")
    if built_json != rebuilt_json:
        raise RequestInvariantError(session.id, seq, _first_difference(built_json, rebuilt_json))
