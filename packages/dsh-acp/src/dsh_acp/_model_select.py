"""Model selection: the session's ``model`` configuration option.

The ACP schema of this SDK (agent-client-protocol 0.12, schema 1.19) has no ``session/set_model``
and no ``models`` in the session responses; it selects models through session configuration
options of category ``model``. So every ``session/new`` and ``session/load`` answer carries one
select option, id `MODEL_OPTION`, whose values are the routes the configuration offers
(``dsh_agent_core.offered_routes``, the session's own route first), and
``session/set_config_option`` with it switches the session's route exactly as the terminal's
``/model`` does (the same ``command/run`` and ``command/done`` events in its log)."""

from __future__ import annotations

from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption

from dsh_agent_core import Harness, offered_routes

__all__ = ["MODEL_OPTION", "model_option", "session_routes"]

MODEL_OPTION = "model"
"""The id of the session's model option."""


def session_routes(harness: Harness, current: str) -> list[str]:
    """The routes a session on ``current`` may take: ``current`` first, then the offered ones."""
    return [current, *(route for route in offered_routes(harness) if route != current)]


def model_option(harness: Harness, current: str) -> SessionConfigOptionSelect:
    """The ``model`` option of a session on ``current`` (``provider:model``)."""
    return SessionConfigOptionSelect(
        id=MODEL_OPTION,
        name="Model",
        description="The model (provider:model) the session's next request goes to",
        category="model",
        type="select",
        current_value=current,
        options=[
            SessionConfigSelectOption(value=route, name=route)
            for route in session_routes(harness, current)
        ],
    )
