"""The Agent Client Protocol agent of DSH: the agent core behind Zed, JetBrains and Neovim.

``dsh acp`` (dsh-agent-core[acp]) runs `serve_stdio`; embed the agent elsewhere with
``acp.run_agent(DshAcpAgent(harness), reader, writer)``. Every session it drives is an ordinary
dsh session: the same log, the same ``dsh sessions`` commands, resumable from a terminal.

- `DshAcpAgent`: ``initialize``, ``session/new``, ``session/load`` (with its history replayed),
  ``session/prompt`` (streamed: message and thought chunks, tool calls with their kind, title,
  status, locations and content), ``session/cancel``, ``session/set_mode`` (the sandbox modes,
  `SESSION_MODES`).
- `EditorApprovals`: approvals asked with ``session/request_permission``.
- `EditorFiles` / `editor_files`: a session's ``read``, ``write`` and ``edit`` through the
  editor's ``fs/read_text_file`` and ``fs/write_text_file`` when it offers them (its unsaved
  buffers), under the same sandbox; `EditorFileError` is an editor's error answer.
- `prompt_text`: a prompt's blocks as the user's message (bounded by `MAX_PROMPT_CHARS`).
- The errors: `AcpInputError` and its subclasses, each naming what the editor sent.
"""

from dsh_acp._agent import MAX_SESSION_ID_CHARS, SESSION_MODES, DshAcpAgent
from dsh_acp._approvals import (
    ALLOW_ALWAYS,
    ALLOW_ONCE,
    PERMISSION_OPTIONS,
    REJECT,
    EditorApprovals,
)
from dsh_acp._calls import OUTPUT_TAIL_CHARS, TITLE_CHARS, CallView, call_view
from dsh_acp._errors import (
    AcpInputError,
    PromptContentError,
    SessionBusyError,
    UnknownSessionError,
)
from dsh_acp._files import EditorFileError, EditorFiles, editor_files
from dsh_acp._prompt import MAX_PROMPT_CHARS, prompt_text
from dsh_acp._serve import serve_stdio
from dsh_acp._updates import UpdateStream, UpdateTranslator

__all__ = [
    "ALLOW_ALWAYS",
    "ALLOW_ONCE",
    "MAX_PROMPT_CHARS",
    "MAX_SESSION_ID_CHARS",
    "OUTPUT_TAIL_CHARS",
    "PERMISSION_OPTIONS",
    "REJECT",
    "SESSION_MODES",
    "TITLE_CHARS",
    "AcpInputError",
    "CallView",
    "DshAcpAgent",
    "EditorApprovals",
    "EditorFileError",
    "EditorFiles",
    "PromptContentError",
    "SessionBusyError",
    "UnknownSessionError",
    "UpdateStream",
    "UpdateTranslator",
    "call_view",
    "editor_files",
    "prompt_text",
    "serve_stdio",
]
