"""A session's route switched as the terminal's ``/model`` does, and the routes it may take.

The switch closes the session's agent and resumes the same session on the new route (the next
request logs a ``request/header`` with it); an unknown or unreachable route is refused before
anything changes, and a resume that fails reopens the session on its old route. The command is
logged as every operator command is (`log_command_run`, `log_command_done`): ``command/run``
``{commandId, name, args?, source: {kind: "user"}}`` then ``command/done {commandId, kind,
text?}``, never model-visible."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from dsh_agent import Agent
from dsh_agent_core._errors import DshError
from dsh_agent_core._provider_config import split_route
from dsh_agent_loop import LoopAgent
from dsh_session import Session
from dsh_tools import ToolDefinition

if TYPE_CHECKING:
    from dsh_agent_core._harness import Harness

__all__ = [
    "COMMAND_TEXT_CHARS",
    "log_command_done",
    "log_command_run",
    "offered_routes",
    "route_of",
    "switch_model",
]

COMMAND_TEXT_CHARS = 4000
"""The most characters of a command's answer a ``command/done`` keeps."""


def log_command_run(session: Session, command_id: str, name: str, args: str = "") -> None:
    """Log that the user ran command ``name`` (``args``: what followed it) in ``session``."""
    run: dict[str, Any] = {"commandId": command_id, "name": name, "source": {"kind": "user"}}
    if args:
        run["args"] = args
    session.append("command/run", run)


def log_command_done(
    session: Session,
    command_id: str,
    kind: Literal["success", "error"],
    text: str | None = None,
) -> None:
    """Log how command ``command_id`` ended, with its answer (the first `COMMAND_TEXT_CHARS`)."""
    done: dict[str, Any] = {"commandId": command_id, "kind": kind}
    if text is not None:
        done["text"] = text[:COMMAND_TEXT_CHARS]
    session.append("command/done", done)


def route_of(agent: Agent) -> str:
    """The ``provider:model`` the agent's next request takes."""
    return f"{agent.options.provider}:{agent.options.model}"


async def switch_model(
    harness: Harness,
    agent: Agent,
    route: str,
    *,
    attach: Callable[[LoopAgent], None],
    tools: Sequence[ToolDefinition[Any]] = (),
) -> str:
    """Switch ``agent``'s session to ``route`` as ``/model`` does and return the new
    ``provider:model``: the route is checked and resolved first (refused with `DshError`,
    nothing changed), then the agent (a live agent of ``harness``) is closed and its session
    resumed on the new route and given to ``attach`` (with ``tools``, the session's own tools,
    again). When that resume fails, the session is reopened on its old route, given to
    ``attach``, and `DshError` says so. Nothing is logged here: the caller logs the command in
    the session ``attach`` got."""
    live = harness.get(agent.id)
    if live is None:
        raise DshError(f"session {agent.id!r} is not open in this harness; nothing to switch")
    harness.check_route(route)
    resolved = await harness.resolve_route(route)  # unknown or unreachable: refused, no change
    session_id, before = live.id, route_of(live)
    await live.aclose()  # the same session reopens on the new route
    try:
        reopened = await harness.resume(session_id, model=resolved, tools=tools)
    except Exception as error:
        attach(await harness.resume(session_id, model=before, tools=tools))
        raise DshError(f"{error}; still on {before}") from error
    attach(reopened)
    return route_of(reopened)


def offered_routes(harness: Harness) -> list[str]:
    """The ``provider:model`` routes a session may switch to: the configuration's ``model``
    (when it names its model), then every model something is known of (each
    ``[models."provider:model"]`` table, each ``context_windows`` entry, the catalog of a
    provider served at a built-in base URL), keeping those whose provider can be called as
    configured (its key variable set)."""
    config = harness.config
    routes: dict[str, None] = {}
    if split_route(config.model)[1] is not None:
        routes[config.model] = None
    for provider, model in config.known_models():
        routes[f"{provider}:{model}"] = None
    offered = []
    for route in routes:
        try:
            harness.check_route(route)
        except DshError:
            continue
        offered.append(route)
    return offered
