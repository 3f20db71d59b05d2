"""``dsh demo``: a keyless scripted model driving the real loop, real bash and real persistence."""

from __future__ import annotations

import json

from dsh_llm import Model
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response

__all__ = ["DEMO_COMMAND", "DEMO_PROMPT", "demo_model"]

DEMO_PROMPT = "Show me what a DSH bash child knows about its harness, then stop."
"""What ``dsh demo`` asks."""

DEMO_COMMAND = (
    'printf "DSH_HOME=%s\\nDSH_SHELL=%s\\nDSH_SESSION_ID=%s\\n" '
    '"$DSH_HOME" "$DSH_SHELL" "$DSH_SESSION_ID"; echo "cwd=$(pwd)"'
)
"""The bash command the demo's model runs: the managed facts a child sees."""


def demo_model() -> Model:
    """The demo's model: one bash call printing the managed ``DSH_*`` facts, then an answer."""
    call = tool_call_response(
        (
            "demo-call-1",
            "bash",
            json.dumps({"command": DEMO_COMMAND, "description": "Print the harness facts"}),
        ),
        text="Let me look at the managed DSH_* environment of a bash child.",
    )
    answer = text_response(
        "The bash child saw its DSH home, DSH_SHELL=1 and this session's id: every fact came "
        "from the harness, none from the parent environment. The whole exchange is in the "
        "session log shown below."
    )
    return ScriptedModel([call, answer])
