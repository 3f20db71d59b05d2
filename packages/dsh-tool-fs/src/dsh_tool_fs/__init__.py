"""The DSH file tools: ``read``, ``write``, ``edit``, ``glob`` and ``grep``, confined by the
`dsh_shell.SandboxPolicy` the sandboxed ``bash`` follows, with read-before-edit kept per session.

Register them with ``FileTools(policy).register(registry)``; ``FileTools.route_access`` sends
one session's ``read``/``write``/``edit`` through a `FileAccess` (an editor's buffers).
"""

from dsh_tool_fs._access import ACCESS_TIMEOUT, FileAccess, FileAccessError, FileAccessRoutes
from dsh_tool_fs._atomic import write_atomic
from dsh_tool_fs._base import FileTool, FsSettings
from dsh_tool_fs._confinement import (
    Confinement,
    Escalation,
    EscalationArgs,
    resolve_path,
)
from dsh_tool_fs._edit import EditArgs, EditTool
from dsh_tool_fs._errors import (
    FileChangedError,
    FileNotReadError,
    FsToolError,
    NotTextError,
    SandboxDeniedError,
    SearchError,
)
from dsh_tool_fs._observations import OBSERVED_META_KEY, Observation, Observations
from dsh_tool_fs._read import (
    MAX_IMAGE_BYTES,
    READ_LIMIT,
    READ_MAX_BYTES,
    READ_MAX_LINE,
    ReadArgs,
    ReadTool,
)
from dsh_tool_fs._search import (
    GLOB_LIMIT,
    GREP_HEAD_LIMIT,
    GREP_MAX_CONTEXT,
    GREP_MAX_HEAD_LIMIT,
    GREP_MAX_LINE_BYTES,
    RAW_OUTPUT_LIMIT,
    SEARCH_TIME_BUDGET,
    GlobArgs,
    GlobTool,
    GrepArgs,
    GrepTool,
    OutputMode,
)
from dsh_tool_fs._tools import FileTools
from dsh_tool_fs._write import WriteArgs, WriteTool

__all__ = [
    "ACCESS_TIMEOUT",
    "GLOB_LIMIT",
    "GREP_HEAD_LIMIT",
    "GREP_MAX_CONTEXT",
    "GREP_MAX_HEAD_LIMIT",
    "GREP_MAX_LINE_BYTES",
    "MAX_IMAGE_BYTES",
    "OBSERVED_META_KEY",
    "RAW_OUTPUT_LIMIT",
    "READ_LIMIT",
    "READ_MAX_BYTES",
    "READ_MAX_LINE",
    "SEARCH_TIME_BUDGET",
    "Confinement",
    "EditArgs",
    "EditTool",
    "Escalation",
    "EscalationArgs",
    "FileAccess",
    "FileAccessError",
    "FileAccessRoutes",
    "FileChangedError",
    "FileNotReadError",
    "FileTool",
    "FileTools",
    "FsSettings",
    "FsToolError",
    "GlobArgs",
    "GlobTool",
    "GrepArgs",
    "GrepTool",
    "NotTextError",
    "Observation",
    "Observations",
    "OutputMode",
    "ReadArgs",
    "ReadTool",
    "SandboxDeniedError",
    "SearchError",
    "WriteArgs",
    "WriteTool",
    "resolve_path",
    "write_atomic",
]
