"""The Agent Client Protocol agent of DSH: the agent core behind Zed, JetBrains and Neovim.

``dsh acp`` (dsh-agent-core[acp]) runs `serve_stdio`; embed the agent elsewhere with
``acp.run_agent(DshAcpAgent(harness), reader, writer)``. Every session it drives is an ordinary
dsh session: the same log, the same ``dsh sessions`` commands, resumable from a terminal.

- `DshAcpAgent`: ``initialize``, ``session/new``, ``session/load`` (with its history replayed),
  ``session/prompt`` (streamed: message and thought chunks, tool calls with their kind, title,
  status, locations and content; the model's task list as the plan, `plan_update`),
  ``session/cancel``, ``session/set_mode`` (the sandbox modes,
  `SESSION_MODES`), ``session/set_config_option`` (the `MODEL_OPTION`, `model_option`: the
  session's route, switched as the terminal's ``/model`` does).
- MCP servers the editor passes (`client_mcp_tables`, at most `MAX_CLIENT_MCP_SERVERS`, names
  of at most `MAX_CLIENT_MCP_SERVER_NAME` characters; `client_mcp_unavailable` without the
  ``[mcp]`` extra): started
  for their session alone, stopped when it ends.
- `EditorApprovals`: approvals asked with ``session/request_permission``.
- `EditorFiles` / `editor_files`: a session's ``read``, ``write`` and ``edit`` through the
  editor's ``fs/read_text_file`` and ``fs/write_text_file`` when it offers them (its unsaved
  buffers), under the same sandbox; `EditorFileError` is an editor's error answer.
- `prompt_text`, `prompt_message`: a prompt's blocks as the user's message (text bounded by
  `MAX_PROMPT_CHARS`; images of `IMAGE_TYPES` bounded by `MAX_IMAGE_BYTES` and
  `MAX_PROMPT_IMAGE_BYTES`, for a model that takes them).
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
from dsh_acp._client_mcp import (
    MAX_CLIENT_MCP_SERVER_NAME,
    MAX_CLIENT_MCP_SERVERS,
    client_mcp_tables,
    client_mcp_unavailable,
)
from dsh_acp._errors import (
    AcpInputError,
    ClientMcpServerError,
    ImagesNotTakenError,
    PromptContentError,
    SessionBusyError,
    UnknownConfigOptionError,
    UnknownModelError,
    UnknownSessionError,
)
from dsh_acp._files import EditorFileError, EditorFiles, editor_files
from dsh_acp._model_select import MODEL_OPTION, model_option
from dsh_acp._plans import PLAN_PRIORITY, PlanUpdates, plan_update
from dsh_acp._prompt import (
    IMAGE_TYPES,
    MAX_IMAGE_BYTES,
    MAX_PROMPT_CHARS,
    MAX_PROMPT_IMAGE_BYTES,
    prompt_message,
    prompt_text,
)
from dsh_acp._serve import serve_stdio
from dsh_acp._updates import UpdateStream, UpdateTranslator

__all__ = [
    "ALLOW_ALWAYS",
    "ALLOW_ONCE",
    "IMAGE_TYPES",
    "MAX_CLIENT_MCP_SERVERS",
    "MAX_CLIENT_MCP_SERVER_NAME",
    "MAX_IMAGE_BYTES",
    "MAX_PROMPT_CHARS",
    "MAX_PROMPT_IMAGE_BYTES",
    "MAX_SESSION_ID_CHARS",
    "MODEL_OPTION",
    "OUTPUT_TAIL_CHARS",
    "PERMISSION_OPTIONS",
    "PLAN_PRIORITY",
    "REJECT",
    "SESSION_MODES",
    "TITLE_CHARS",
    "AcpInputError",
    "CallView",
    "ClientMcpServerError",
    "DshAcpAgent",
    "EditorApprovals",
    "EditorFileError",
    "EditorFiles",
    "ImagesNotTakenError",
    "PlanUpdates",
    "PromptContentError",
    "SessionBusyError",
    "UnknownConfigOptionError",
    "UnknownModelError",
    "UnknownSessionError",
    "UpdateStream",
    "UpdateTranslator",
    "call_view",
    "client_mcp_tables",
    "client_mcp_unavailable",
    "editor_files",
    "model_option",
    "plan_update",
    "prompt_message",
    "prompt_text",
    "serve_stdio",
]
