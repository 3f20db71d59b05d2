"""The errors of dsh-acp: what an editor sent that cannot be served, each naming the thing.

They become JSON-RPC errors at the protocol boundary (`to_request_error`); the agent keeps
running and the session logs are untouched."""

from __future__ import annotations

from acp import RequestError

__all__ = [
    "AcpInputError",
    "PromptContentError",
    "SessionBusyError",
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


def to_request_error(error: AcpInputError) -> RequestError:
    """``error`` as the JSON-RPC error the editor gets, its message the error's own: an unknown
    session is "resource not found" (-32002), a busy session an invalid request (-32600),
    anything else invalid params (-32602)."""
    if isinstance(error, UnknownSessionError):
        return RequestError(-32002, str(error), {"sessionId": error.session_id})
    if isinstance(error, SessionBusyError):
        return RequestError(-32600, str(error), {"sessionId": error.session_id})
    return RequestError(-32602, str(error))
