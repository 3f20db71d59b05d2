"""The DSH tool seam: definitions, executions, results, and a registry that runs calls.

A ``ToolRegistry`` holds ``ToolDefinition``s, tells the model their schemas, and ``execute``s the
model's calls through argument validation, policy hooks, the body and result hooks, always
returning a ``ToolResult`` (failures are error results the model can read).
"""

from dsh_tools._arguments import parse_arguments, validate_arguments
from dsh_tools._definition import ToolDefinition
from dsh_tools._disposer import Disposer
from dsh_tools._errors import (
    DuplicateToolError,
    InvalidToolArgumentsError,
    InvalidToolDefinitionError,
    InvalidToolOutputError,
    ToolAbortedError,
    ToolDeniedError,
    ToolError,
    ToolHookError,
    UnknownToolError,
)
from dsh_tools._execution import (
    ToolCall,
    ToolCaller,
    ToolExecution,
    ToolOutputListener,
    freeze_json,
)
from dsh_tools._hooks import (
    ALLOW,
    Allow,
    Approver,
    Ask,
    Deny,
    PolicyDecision,
    PostExecuteHook,
    PreExecuteHook,
)
from dsh_tools._registry import ToolRegistry
from dsh_tools._result import ToolContent, ToolErrorInfo, ToolResult
from dsh_tools._spill import MAX_INLINE_BYTES, ResultSpill

__all__ = [
    "ALLOW",
    "MAX_INLINE_BYTES",
    "Allow",
    "Approver",
    "Ask",
    "Deny",
    "Disposer",
    "DuplicateToolError",
    "InvalidToolArgumentsError",
    "InvalidToolDefinitionError",
    "InvalidToolOutputError",
    "PolicyDecision",
    "PostExecuteHook",
    "PreExecuteHook",
    "ResultSpill",
    "ToolAbortedError",
    "ToolCall",
    "ToolCaller",
    "ToolContent",
    "ToolDefinition",
    "ToolDeniedError",
    "ToolError",
    "ToolErrorInfo",
    "ToolExecution",
    "ToolHookError",
    "ToolOutputListener",
    "ToolRegistry",
    "ToolResult",
    "UnknownToolError",
    "freeze_json",
    "parse_arguments",
    "validate_arguments",
]
