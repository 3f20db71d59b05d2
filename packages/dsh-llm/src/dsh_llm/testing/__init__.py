"""Keyless test doubles for code that talks to a ``Model``.

``ScriptedModel`` answers each request with the next entry of a script; ``text_response`` and
``tool_call_response`` build well-formed chunk sequences for it.
"""

from dsh_llm._assemble import assemble_message
from dsh_llm.testing._responses import text_response, tool_call_response
from dsh_llm.testing._scripted import (
    HANG,
    Hang,
    ScriptedModel,
    ScriptEntry,
    ScriptExhaustedError,
)

__all__ = [
    "HANG",
    "Hang",
    "ScriptEntry",
    "ScriptExhaustedError",
    "ScriptedModel",
    "assemble_message",
    "text_response",
    "tool_call_response",
]
