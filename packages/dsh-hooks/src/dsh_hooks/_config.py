"""The hook configuration as data: Claude Code's and Codex's ``hooks`` shape, validated.

Both dialects write the same table (Claude Code in ``settings.json``, Codex in ``hooks.json``)::

    {"hooks": {"PreToolUse": [{"matcher": "Bash|Write",
                               "hooks": [{"type": "command", "command": "...", "timeout": 30}]}]}}

an event name maps to matcher groups, each a ``matcher`` and the command hooks it selects.
Codex may leave ``type`` out and spell the timeout ``timeoutSec``; both forms are accepted in
either dialect.

A whole settings file loads: what the dialect defines but dsh-hooks does not run — the other
events (``Notification``, ``PreCompact``, ``SessionEnd``, …, and ``SubagentStart`` /
``SubagentStop`` in Codex, which has none), handler types other than ``command`` (``http``,
``prompt``, ``agent``, ``mcp_tool``) and ``async`` command hooks — is left out, and each is
named in `HooksConfig.ignored` (the runner logs them as warnings). Unknown keys, an event name
that looks like a misspelt bridged one (``PreToolUSE``, ``PostToolUsed``), an unknown handler
type and invalid regular expressions are refused with a pydantic ``ValidationError`` naming the
key.
"""

from __future__ import annotations

import difflib
import json
import os
import stat
from collections.abc import Iterator, Mapping
from typing import Any, Literal, TypeAlias

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    PrivateAttr,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from dsh_hooks._matcher import Matcher
from dsh_shell import validate_dsh_environment, validate_ordinary_env

__all__ = [
    "DEFAULT_HOOK_TIMEOUT",
    "DIALECT_EVENTS",
    "HOOK_EVENTS",
    "MAX_HOOK_FILE_BYTES",
    "CommandHook",
    "HookDialect",
    "HookEventName",
    "HookFileError",
    "HookTable",
    "HooksConfig",
    "MatcherGroup",
]

HookDialect: TypeAlias = Literal["claude-code", "codex"]
"""Whose payloads and conventions a configuration speaks."""

HookEventName: TypeAlias = Literal[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SubagentStart",
    "SubagentStop",
]
"""The events bridged: the five both Claude Code and Codex define, and Claude Code's two
subagent events."""

HOOK_EVENTS: tuple[HookEventName, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SubagentStart",
    "SubagentStop",
)
"""Every bridged event, in lifecycle order."""

DIALECT_EVENTS: Mapping[HookDialect, frozenset[HookEventName]] = {
    "claude-code": frozenset(HOOK_EVENTS),
    "codex": frozenset(HOOK_EVENTS[:5]),
}
"""The bridged events each dialect has (Codex has no subagent events)."""

_OTHER_HANDLER_TYPES = frozenset({"http", "prompt", "agent", "mcp_tool"})
"""Handler types of the dialects that are not commands: loaded, left out, named."""

DEFAULT_HOOK_TIMEOUT = 600.0
"""Seconds a hook may run when its entry sets no ``timeout`` (both dialects' default)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class CommandHook(_Strict):
    """One command hook: ``{"type": "command", "command": "...", "timeout"?: seconds}``.

    ``command`` is bash text, run as is (no substitution); ``timeout`` (alias ``timeoutSec``)
    overrides the configuration's ``default_timeout``.
    """

    type: Literal["command"] = "command"
    command: str = Field(min_length=1)
    timeout: PositiveFloat | None = Field(
        default=None, validation_alias=AliasChoices("timeout", "timeoutSec")
    )
    status_message: str | None = Field(default=None, alias="statusMessage")
    """The text the dialects' interfaces show while the hook runs; read, not shown."""


class MatcherGroup(_Strict):
    """A ``matcher`` and the ``hooks`` it selects (see ``dsh_hooks`` for the matcher forms).

    The subject is the tool name (``PreToolUse``, ``PostToolUse``) or the session source
    (``SessionStart``: ``startup`` or ``resume``); ``UserPromptSubmit`` and ``Stop`` have none
    and ignore the matcher, as Claude Code does.
    """

    matcher: str | None = None
    hooks: tuple[CommandHook, ...] = Field(min_length=1)
    _compiled: Matcher = PrivateAttr()

    @model_validator(mode="after")
    def _compile(self) -> MatcherGroup:
        try:
            self._compiled = Matcher.compile(self.matcher)
        except Exception as error:  # re.error, or a pattern too large to compile
            raise ValueError(f"matcher {self.matcher!r} is not a valid regex: {error}") from None
        return self

    def selects(self, subject: str | None, *aliases: str) -> bool:
        """Whether this group's hooks run for ``subject`` or one of its ``aliases`` (``None``:
        an event without a subject)."""
        if subject is None:
            return True
        return any(self._compiled.matches(name) for name in (subject, *aliases))


class HookTable(_Strict):
    """The ``hooks`` object: event name → matcher groups (absent events have none)."""

    session_start: tuple[MatcherGroup, ...] = Field(default=(), alias="SessionStart")
    user_prompt_submit: tuple[MatcherGroup, ...] = Field(default=(), alias="UserPromptSubmit")
    pre_tool_use: tuple[MatcherGroup, ...] = Field(default=(), alias="PreToolUse")
    post_tool_use: tuple[MatcherGroup, ...] = Field(default=(), alias="PostToolUse")
    stop: tuple[MatcherGroup, ...] = Field(default=(), alias="Stop")
    subagent_start: tuple[MatcherGroup, ...] = Field(default=(), alias="SubagentStart")
    subagent_stop: tuple[MatcherGroup, ...] = Field(default=(), alias="SubagentStop")
    _ignored: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _leave_out_what_is_not_run(
        cls, data: Any, handler: ValidatorFunctionWrapHandler
    ) -> HookTable:
        ignored: list[str] = []
        if isinstance(data, Mapping):
            data = _runnable_table(data, ignored)
        table: HookTable = handler(data)
        table._ignored = (*table._ignored, *ignored)
        return table

    @property
    def ignored(self) -> tuple[str, ...]:
        """What the table held that is not run, one sentence each (see the module docs)."""
        return self._ignored

    def groups(self, event: HookEventName) -> tuple[MatcherGroup, ...]:
        """The matcher groups configured for ``event``."""
        groups: tuple[MatcherGroup, ...] = getattr(self, _ATTRIBUTES[event])
        return groups

    def selected(
        self, event: HookEventName, subject: str | None, aliases: tuple[str, ...] = ()
    ) -> Iterator[tuple[MatcherGroup, CommandHook]]:
        """Every hook that runs for ``event`` and ``subject`` (or one of its ``aliases``), in
        configuration order."""
        for group in self.groups(event):
            if group.selects(subject, *aliases):
                for hook in group.hooks:
                    yield group, hook


def _runnable_table(table: Mapping[Any, Any], ignored: list[str]) -> dict[Any, Any]:
    """``table`` without the events and handlers that are not run (each noted in ``ignored``);
    a misspelt bridged event is refused."""
    kept: dict[Any, Any] = {}
    for name, groups in table.items():
        if name in HOOK_EVENTS:
            kept[name] = _runnable_groups(name, groups, ignored)
            continue
        if isinstance(name, str):
            near: list[str] = [e for e in HOOK_EVENTS if e.lower() == name.lower()]
            near = near or difflib.get_close_matches(name, HOOK_EVENTS, n=1, cutoff=0.85)
            if near:
                raise ValueError(f"hooks.{name}: not an event; did you mean {near[0]!r}?")
        ignored.append(f"hooks.{name}: not an event dsh-hooks runs (left out)")
    return kept


def _runnable_groups(event: str, groups: Any, ignored: list[str]) -> Any:
    if not isinstance(groups, list | tuple):
        return groups  # refused by the field's validation, naming it
    kept: list[Any] = []
    for index, group in enumerate(groups):
        hooks = group.get("hooks") if isinstance(group, Mapping) else None
        if not isinstance(hooks, list | tuple) or not hooks:
            kept.append(group)
            continue
        runnable: list[Any] = []
        for position, hook in enumerate(hooks):
            where = f"hooks.{event}[{index}].hooks[{position}]"
            kind = hook.get("type") if isinstance(hook, Mapping) else None
            if kind in _OTHER_HANDLER_TYPES:
                ignored.append(f"{where}: a {kind!r} handler, not a command (left out)")
            elif isinstance(hook, Mapping) and hook.get("async") is True:
                ignored.append(f"{where}: an async command hook (left out)")
            elif isinstance(hook, Mapping) and "async" in hook and hook["async"] is False:
                runnable.append({k: v for k, v in hook.items() if k != "async"})
            else:
                runnable.append(hook)
        if runnable:
            kept.append({**group, "hooks": runnable})
    return kept


_ATTRIBUTES: dict[HookEventName, str] = {
    name: field
    for field, info in HookTable.model_fields.items()
    for name in HOOK_EVENTS
    if info.alias == name
}


class HooksConfig(_Strict):
    """Everything a `HookRunner` needs: the dialect, the hook table and the run options.

    - ``dialect``: ``claude-code`` or ``codex`` (payload fields, stdin framing, decisions);
    - ``hooks``: the `HookTable` (the ``hooks`` object of either dialect);
    - ``default_timeout``: seconds a hook runs at most when it sets none (600);
    - ``model``: Codex's ``model`` payload field (default ``""``: the model of the agent the
      hook runs for);
    - ``project_dir``: Claude Code's ``CLAUDE_PROJECT_DIR`` (default: the session cwd; a
      delegated session's root session's cwd when the runner has a ``lineage``);
    - ``env``: extra ordinary environment for hook children (no ``DSH_*`` names);
    - ``dsh_env``: managed ``DSH_*`` values for hook children; they get none unless given here;
    - ``stderr_summary_max_chars``: the cap on stderr kept in a ``hook/result`` event (500).

    Build it from data with ``HooksConfig.model_validate({...})`` or from a dialect's document
    with `from_document` / `load`.
    """

    dialect: HookDialect
    hooks: HookTable = Field(default_factory=HookTable)
    default_timeout: PositiveFloat = DEFAULT_HOOK_TIMEOUT
    model: str = ""
    project_dir: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    dsh_env: dict[str, str] = Field(default_factory=dict)
    stderr_summary_max_chars: PositiveInt = 500
    _ignored: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _dialect_events_only(self) -> HooksConfig:
        ignored = list(self.hooks.ignored)
        others = [e for e in HOOK_EVENTS if e not in DIALECT_EVENTS[self.dialect]]
        present = [e for e in others if self.hooks.groups(e)]
        if present:
            update = {_ATTRIBUTES[e]: () for e in present}
            object.__setattr__(self, "hooks", self.hooks.model_copy(update=update))
            ignored += [f"hooks.{e}: not a {self.dialect} event (left out)" for e in present]
        self._ignored = tuple(ignored)
        return self

    @property
    def ignored(self) -> tuple[str, ...]:
        """What the configuration holds that is not run — events the dialect has but dsh-hooks
        does not bridge, handlers that are not commands, ``async`` hooks — one sentence each.
        `HookRunner` logs each as a warning."""
        return self._ignored

    @field_validator("env")
    @classmethod
    def _ordinary_env(cls, value: dict[str, str]) -> dict[str, str]:
        return dict(validate_ordinary_env(value))

    @field_validator("dsh_env")
    @classmethod
    def _managed_env(cls, value: dict[str, str]) -> dict[str, str]:
        return dict(validate_dsh_environment(value))

    @classmethod
    def from_document(
        cls, document: Mapping[str, Any], *, dialect: HookDialect, **options: Any
    ) -> HooksConfig:
        """The configuration of a dialect's hook document plus ``options`` (the other fields).

        ``document`` is ``{"hooks": {...}}`` (Claude Code's settings shape and Codex's
        ``hooks.json``) or, as Codex also accepts, the bare event map. Pass a Claude Code
        settings file as ``{"hooks": settings["hooks"]}``: its other keys are not hooks.
        """
        if not isinstance(document, Mapping):
            raise TypeError(f"a hook document is a JSON object, not {type(document).__name__}")
        table = document["hooks"] if set(document) == {"hooks"} else document
        return cls.model_validate({**options, "dialect": dialect, "hooks": table})

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, dialect: HookDialect, **options: Any
    ) -> HooksConfig:
        """`from_document` of the JSON file at ``path``: a regular file (a link to one is
        followed) of at most `MAX_HOOK_FILE_BYTES`. Anything else — a FIFO or a device (never
        waited on, never read), a directory, a larger file, bytes that are not UTF-8 JSON —
        raises `HookFileError` naming the path."""
        data = _read_settings(path)
        try:
            document = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise HookFileError(path, f"is not UTF-8 ({error.reason})") from None
        except ValueError as error:
            raise HookFileError(path, f"is not valid JSON ({error})") from None
        return cls.from_document(document, dialect=dialect, **options)


MAX_HOOK_FILE_BYTES = 1024 * 1024
"""The largest hook settings file `HooksConfig.load` reads (1 MiB)."""


class HookFileError(ValueError):
    """A hook settings file `HooksConfig.load` will not read: ``path`` names it, ``problem``
    says why."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        super().__init__(f"hook settings {os.fspath(path)}: {problem}")
        self.path = os.fspath(path)
        self.problem = problem


def _read_settings(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the regular file ``path``, opened without blocking (``O_NONBLOCK``: a FIFO
    opens at once and is then refused) and checked on the open descriptor."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        raise HookFileError(path, f"cannot be read ({error.strerror})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise HookFileError(path, f"is {kind}, not a regular file: it is not read")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_HOOK_FILE_BYTES:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_HOOK_FILE_BYTES:
            raise HookFileError(path, f"is over {MAX_HOOK_FILE_BYTES} bytes; it is not read")
        return b"".join(chunks)
    except OSError as error:
        raise HookFileError(path, f"cannot be read ({error.strerror})") from None
    finally:
        os.close(fd)


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
