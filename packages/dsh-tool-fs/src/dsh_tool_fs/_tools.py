"""`FileTools`: the five file tools over one set of settings, registered together."""

from __future__ import annotations

from typing import Any

from dsh_shell import SandboxPolicy, WorkspacePinLookup
from dsh_tool_fs._access import ACCESS_TIMEOUT, FileAccess
from dsh_tool_fs._base import FileTool, FsSettings
from dsh_tool_fs._edit import EditTool
from dsh_tool_fs._engine import SEARCH_TIME_BUDGET
from dsh_tool_fs._observations import Observations
from dsh_tool_fs._read import ReadTool
from dsh_tool_fs._search import GlobTool, GrepTool
from dsh_tool_fs._write import WriteTool
from dsh_tools import Disposer, ToolDefinition, ToolRegistry

__all__ = ["FileTools"]


class FileTools:
    """``read``, ``write``, ``edit``, ``glob`` and ``grep`` under one sandbox policy.

    ``sandbox`` (``None``: unconfined) is checked in Python before every access, after the path
    is resolved: its ``workspace`` defaults to the caller's session cwd and its mode to the last
    ``sandbox/mode`` the calling session logged; under a sandbox each tool takes
    ``sandbox_permissions`` + ``justification`` (approval needed, one call widened).
    ``ripgrep`` names the ``rg`` executable ``glob``/``grep`` use when it is on ``PATH``
    (``None``: always the pure-Python engine). The read-before-edit state is shared by the
    tools and kept per session (`Observations`). ``workspace_pins`` gives a session's pinned
    workspace (`dsh_shell.WorkspacePin`): it is verified before every confined call and used as
    the workspace, so a workspace re-pointed by a symlink refuses the call.
    ``search_budget`` is the seconds one ``glob`` or ``grep`` may take (ripgrep and the Python
    work together): past it the search is killed and the call fails with ``SEARCH_TIMEOUT``.

    ``route_access`` sends one session's ``read``, ``write`` and ``edit`` through a
    `FileAccess` (an editor's buffers) instead of the local disk, under the same confinement;
    ``access_timeout`` bounds each of its requests (`FileAccessError` past it). ``glob`` and
    ``grep`` always search the disk.
    """

    def __init__(
        self,
        sandbox: SandboxPolicy | None = None,
        *,
        ripgrep: str | None = "rg",
        observations: Observations | None = None,
        workspace_pins: WorkspacePinLookup | None = None,
        search_budget: float = SEARCH_TIME_BUDGET,
        access_timeout: float = ACCESS_TIMEOUT,
    ) -> None:
        self.settings = FsSettings(
            sandbox=sandbox,
            workspace_pins=workspace_pins,
            observations=observations if observations is not None else Observations(),
            ripgrep=ripgrep,
            search_budget=search_budget,
            access_timeout=access_timeout,
        )
        self.tools: tuple[FileTool, ...] = tuple(tool(self.settings) for tool in _tool_classes())

    def definitions(self) -> list[ToolDefinition[Any]]:
        """The five tools, in the order the model is shown them."""
        return list(self.tools)

    def route_access(self, session_id: str, access: FileAccess) -> Disposer:
        """Send the ``read``, ``write`` and ``edit`` calls of session ``session_id`` through
        ``access`` (the halves it offers: ``reads``, ``writes``) until the disposer is called.
        One route per session at a time (a second is a `ValueError`)."""
        return self.settings.accesses.route(session_id, access)

    def register(self, registry: ToolRegistry) -> Disposer:
        """Register every tool on ``registry``; the disposer withdraws them all."""
        disposers = [registry.register(tool) for tool in self.tools]

        def withdraw() -> None:
            for disposer in reversed(disposers):
                disposer()

        return Disposer(withdraw)


def _tool_classes() -> tuple[type[FileTool], ...]:
    return (ReadTool, WriteTool, EditTool, GlobTool, GrepTool)
