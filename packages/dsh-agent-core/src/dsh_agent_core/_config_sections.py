"""The configuration's smaller tables: the resolved system prompt, presets, skills, project
instructions, the bash tool, the todo tool and the sandbox."""

from __future__ import annotations

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
)

from dsh_agent import ApprovalPolicy
from dsh_agent_core._provider_config import STRICT, split_route
from dsh_agent_core._system_prompt import SystemPromptSource
from dsh_shell import SandboxMode

__all__ = [
    "BashConfig",
    "InstructionsConfig",
    "LocalSkillsConfig",
    "PresetConfig",
    "SandboxConfig",
    "SkillsConfig",
    "SystemPrompt",
    "TodoConfig",
]


class SystemPrompt(BaseModel):
    """A resolved system prompt: its ``text`` (``append_system`` included), its ``source``
    (``built-in``, ``system``, ``system_file`` or ``preset``) and whether ``append_system``
    was added."""

    model_config = ConfigDict(frozen=True)

    text: str
    source: SystemPromptSource
    appended: bool = False


class PresetConfig(BaseModel):
    """What ``session_create``'s ``preset`` (and ``dsh run --preset``) names: a system prompt,
    the tool names the agent gets (``None``: every tool), and a model route."""

    model_config = STRICT

    system: str | None = None
    tools: tuple[str, ...] | None = None
    model: str | None = None

    @field_validator("model")
    @classmethod
    def _is_a_route(cls, route: str | None) -> str | None:
        if route is not None:
            split_route(route, where="presets.*.model")
        return route


class LocalSkillsConfig(BaseModel):
    """Local skills: ``SKILL.md`` folders under ``<DSH_HOME>/skills/`` and the project's
    ``.dsh/skills/``. ``dsh_home``, when given, must resolve to the same home as the top level."""

    model_config = STRICT

    enabled: bool = True
    dsh_home: str | None = None


class SkillsConfig(BaseModel):
    """Skill sources (only ``local`` today)."""

    model_config = STRICT

    local: LocalSkillsConfig = Field(default_factory=LocalSkillsConfig)


class InstructionsConfig(BaseModel):
    """Project instructions: ``<DSH_HOME>/AGENTS.md``, then one ``AGENTS.md`` (else
    ``CLAUDE.md``) per directory from the project's git root down to the session cwd, at most
    64 KiB in all, in the session prefix. ``enabled = false`` offers none."""

    model_config = STRICT

    enabled: bool = True


class BashConfig(BaseModel):
    """The bash tool and its local executor: default and maximum timeouts (seconds), whether
    ``run_in_background`` is offered."""

    model_config = STRICT

    timeout: float = Field(default=120.0, gt=0)
    max_timeout: float = Field(default=600.0, gt=0)
    background: bool = True


class TodoConfig(BaseModel):
    """The ``todo_write`` tool (dsh-tool-todo): the model's task list, logged as ``todo/write``.

    ``enabled``: ``true`` offers it to every agent, ``false`` to none; unset (the default), it is
    offered where the front end shows plans (``dsh acp``: the editor shows it as the ACP plan)
    and not in the terminal or ``dsh run``, where a list nobody sees would only cost every
    request its schema. ``allow_parallel_in_progress``: several tasks may be ``in_progress`` at
    once (dsh runs work in parallel: background jobs, ``session_create`` children); ``false``
    keeps the model to exactly one."""

    model_config = STRICT

    enabled: bool | None = None
    allow_parallel_in_progress: bool = True

    def offered(self, *, shows_plans: bool) -> bool:
        """Whether agents get ``todo_write``: ``enabled`` when set, else ``shows_plans`` (the
        front end composing the harness shows the plan)."""
        return self.enabled if self.enabled is not None else shows_plans


class SandboxConfig(BaseModel):
    """Where model commands may write and whether the user is asked before widening that.

    ``mode`` (``read-only``, ``workspace-write``, ``danger-full-access``; default:
    ``$DSH_PERMISSION_MODE``, else ``workspace-write``) and ``approval`` (``ask`` or
    ``never``; default: ``never`` under ``danger-full-access``, else ``ask``) are pinned into
    each new session; a resumed session keeps its own. ``writable_roots`` are extra writable
    directories, ``deny_read`` the paths no confined command may read (default: the usual
    credential folders), ``network`` lets confined commands use the network, ``bwrap`` names
    the bubblewrap executable.
    """

    model_config = STRICT

    mode: SandboxMode = "workspace-write"
    approval: ApprovalPolicy | None = None
    writable_roots: list[str] = Field(default_factory=list)
    deny_read: list[str] | None = None
    network: bool = False
    bwrap: str = Field(default="bwrap", min_length=1)

    @property
    def approval_policy(self) -> ApprovalPolicy:
        """The approval policy new sessions get (``approval``, else by ``mode``)."""
        if self.approval is not None:
            return self.approval
        return "never" if self.mode == "danger-full-access" else "ask"
