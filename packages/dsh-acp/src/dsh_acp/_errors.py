"""The errors of dsh-acp: what an editor sent that cannot be served, each naming the thing.

They become JSON-RPC errors at the protocol boundary (`to_request_error`); the agent keeps
running and the session logs are untouched."""

from __future__ import annotations

from acp import RequestError

__all__ = [
    "AcpInputError",
    "ClientMcpServerError",
    "ImagesNotTakenError",
    "PromptContentError",
    "SessionBusyError",
    "UnknownConfigOptionError",
    "UnknownModelError",
    "UnknownSessionError",
    "to_request_error",
]


class AcpInputError(Exception):
    """Something an editor sent cannot be served (the base of dsh-acp's errors)."""


class UnknownSessionError(AcpInputError):
    """``session_id`` names no session this agent drives (nor, for a load, a stored one)."""

    def __init__(self, session_id: str, detail: str = "no such session") -> None:
        super().__init__(f"session {session_id!r}: {detail}")
        self.session_id = session_id


class SessionBusyError(AcpInputError):
    """``session_id`` runs a turn, and ``what`` waits for it to end (or for session/cancel)."""

    def __init__(self, session_id: str, what: str) -> None:
        super().__init__(
            f"session {session_id!r} is running a turn: {what} waits for it to end "
            "(or send session/cancel)"
        )
        self.session_id = session_id


class PromptContentError(AcpInputError):
    """A prompt's content cannot be given to the model: ``problem`` says why (a kind of block
    the agent did not offer, a prompt over the size limit, an empty prompt)."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"prompt: {problem}")
        self.problem = problem


class ImagesNotTakenError(PromptContentError):
    """A prompt holds an image, but the session's model ``route`` (``provider:model``) is not
    known to take images (``[models."provider:model"] images = true`` says it does)."""

    def __init__(self, route: str) -> None:
        super().__init__(
            f"an image was sent, but the model {route} takes text only here (if it reads "
            f'images, say so in the dsh config: [models."{route}"] images = true)'
        )
        self.route = route


class UnknownModelError(AcpInputError):
    """``model_id`` is not one of the models the session offers (its ``model`` option)."""

    def __init__(self, model_id: str, offered: list[str]) -> None:
        listed = ", ".join(offered[:20]) or "none"
        super().__init__(f"model {model_id!r} is not offered here (offered: {listed})")
        self.model_id = model_id


class UnknownConfigOptionError(AcpInputError):
    """``config_id`` names no configuration option of the session (it has ``model``)."""

    def __init__(self, config_id: str) -> None:
        super().__init__(f"config option {config_id!r}: no such option (the options: model)")
        self.config_id = config_id


class ClientMcpServerError(AcpInputError):
    """An MCP server the editor passed cannot be used: ``server`` names it, the message says
    why (a name a configured server has, a transport this agent does not speak, a bad
    table). Nothing was started for the session."""

    def __init__(self, server: str, problem: str) -> None:
        super().__init__(problem)
        self.server = server


def to_request_error(error: AcpInputError) -> RequestError:
    """``error`` as the JSON-RPC error the editor gets, its message the error's own: an unknown
    session is "resource not found" (-32002), a busy session an invalid request (-32600),
    anything else invalid params (-32602); the data names the session, model, option or
    server."""
    if isinstance(error, UnknownSessionError):
        return RequestError(-32002, str(error), {"sessionId": error.session_id})
    if isinstance(error, SessionBusyError):
        return RequestError(-32600, str(error), {"sessionId": error.session_id})
    if isinstance(error, UnknownModelError):
        return RequestError(-32602, str(error), {"modelId": error.model_id})
    if isinstance(error, UnknownConfigOptionError):
        return RequestError(-32602, str(error), {"configId": error.config_id})
    if isinstance(error, ClientMcpServerError):
        return RequestError(-32602, str(error), {"server": error.server})
    if isinstance(error, ImagesNotTakenError):
        return RequestError(-32602, str(error), {"model": error.route})
    return RequestError(-32602, str(error))
