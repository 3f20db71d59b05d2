"""What every file tool shares: its settings, its parameters with or without the escalation
pair, the confinement of a call, and the approval an escalated call needs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from dsh_shell import SandboxAccess, SandboxPolicy, WorkspacePinLookup
from dsh_tool_fs._access import ACCESS_TIMEOUT, FileAccess, FileAccessRoutes
from dsh_tool_fs._confinement import (
    Confinement,
    escalation_reason,
    resolve_path,
)
from dsh_tool_fs._engine import SEARCH_TIME_BUDGET
from dsh_tool_fs._errors import FsToolError
from dsh_tool_fs._observations import Observations
from dsh_tools import ToolDefinition, ToolExecution

__all__ = ["FileTool", "FsSettings"]


@dataclass(frozen=True, slots=True)
class FsSettings:
    """What the file tools of one `FileTools` share (see there)."""

    sandbox: SandboxPolicy | None = None
    workspace_pins: WorkspacePinLookup | None = None
    observations: Observations = field(default_factory=Observations)
    ripgrep: str | None = "rg"
    search_budget: float = SEARCH_TIME_BUDGET
    accesses: FileAccessRoutes = field(default_factory=FileAccessRoutes)
    access_timeout: float = ACCESS_TIMEOUT

    def __post_init__(self) -> None:
        for name, what in (("search_budget", "a search"), ("access_timeout", "a file access")):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
            if math.isinf(value):
                raise ValueError(f"{name} must be finite: {what} needs an end")


class FileTool(ToolDefinition[Any]):
    """A file tool: ``plain_args`` without a sandbox, ``sandbox_args`` (the same fields plus
    ``sandbox_permissions`` + ``justification``) under one."""

    plain_args: ClassVar[type[BaseModel]]
    sandbox_args: ClassVar[type[BaseModel]]

    def __init__(self, settings: FsSettings) -> None:
        self.settings = settings
        self.parameters = self.sandbox_args if settings.sandbox is not None else self.plain_args

    def confinement(self, args: Any, execution: ToolExecution) -> Confinement:
        """The rule this call runs under (widened when it asked for, and was granted, more)."""
        return Confinement.for_call(
            execution,
            self.settings.sandbox,
            getattr(args, "sandbox_permissions", None),
            pins=self.settings.workspace_pins,
        )

    def target(
        self, args: Any, execution: ToolExecution, raw: str, access: SandboxAccess, field: str
    ) -> Path:
        """``raw`` resolved, and checked for ``access`` under this call's confinement."""
        confinement = self.confinement(args, execution)
        path = resolve_path(raw, confinement.base, field=field, tool=self.name)
        if field == "file_path" and raw.endswith("/"):
            raise FsToolError(
                f"{path} was named as a directory ({raw!r} ends in '/'); {self.name} takes a file",
                code="FS_NOT_A_FILE",
                path=str(path),
            )
        confinement.check(path, access, shown=str(path))
        return path

    def access(self, execution: ToolExecution) -> FileAccess | None:
        """The `FileAccess` ``execution``'s session goes through (``None``: the local disk, also
        for an access that does not offer both reading and writing)."""
        access = self.settings.accesses.get(execution)
        return access if access is not None and access.reads and access.writes else None

    def approval_reason(self, args: Any, execution: ToolExecution) -> str | None:
        """An escalated call needs approval; one that does not widen is refused."""
        requested = getattr(args, "sandbox_permissions", None)
        if requested is None or self.settings.sandbox is None:
            return None
        current = Confinement.for_call(
            execution,
            self.settings.sandbox,
            pins=self.settings.workspace_pins,
        ).mode
        return escalation_reason(
            self.name, requested, getattr(args, "justification", None), current
        )
