"""The interactive session's slash commands. Each is logged as the harness logs commands,
``command/run {commandId, name, args?, source: {kind: "user"}}`` then ``command/done
{commandId, kind: "success" | "error", text?}``
(never model-visible); ``/help`` and ``/status`` answer while a turn runs, the others wait for
it (or Ctrl-C)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.text import Text

from dsh_agent_core._config import Config
from dsh_agent_core._errors import DshError
from dsh_agent_core._model_switch import log_command_done, log_command_run, switch_model
from dsh_agent_core._permissions import pin_permissions, sandbox_mode_of
from dsh_agent_core.cli._render import edit_diff
from dsh_agent_core.cli._session_ids import resolve_session_id, sessions_here
from dsh_agent_core.cli._terminal import terminal_text
from dsh_agent_core.cli._usage import totals_text
from dsh_session import encode_event, encode_header_line, message_parts
from dsh_shell import SANDBOX_MODES

__all__ = ["SLASH_COMMANDS", "SlashContext", "run_slash"]


@dataclass
class SlashContext:
    """What a command acts on: the interactive session (``cli._interactive.InteractiveSession``,
    typed loosely: that module imports this one) and its configuration."""

    session: Any
    config: Config

    def say(self, text: str, style: str = "") -> None:
        self.session.console.print(Text(terminal_text(text), style=style))


Handler = Callable[[SlashContext, str], Awaitable[str | None]]
"""``(context, args) -> the text the command answered`` (``None``: nothing to log)."""


class _Exit(Exception):
    """``/exit``."""


async def _help(context: SlashContext, args: str) -> str:
    lines = [f"/{name:<12} {summary}" for name, (_, summary) in SLASH_COMMANDS.items()]
    lines.append("Esc-Enter: a new line · Ctrl-C: cancel the turn · Ctrl-D: exit")
    text = "\n".join(lines)
    context.say(text)
    return text


async def _status(context: SlashContext, args: str) -> str:
    session = context.session
    agent = session.agent
    row = await session.harness.status_of(agent.id)
    route = session.route()
    totals = session.totals()
    window = session.window()
    used = (
        f"{totals.context:,} of {window:,} tokens ({100 * totals.context // window}%)"
        if totals.context is not None and window
        else "unknown (no answer yet, or no window known)"
    )
    lines = [
        f"session   {agent.id}",
        f"log       {row.session_path or '(not stored yet)'}",
        f"model     {route[0]}:{route[1]}" if route else "model     (none yet)",
        f"sandbox   {session.sandbox_mode()} · approvals {session.approval_policy()}",
        f"context   {used}",
        f"usage     {totals_text(totals)}",
    ]
    text = "\n".join(lines)
    context.say(text)
    return text


def _route_text(session: Any) -> str | None:
    route = session.route()
    return f"{route[0]}:{route[1]}" if route else None


async def _model(context: SlashContext, args: str) -> str:
    session = context.session
    if not args:
        text = f"model: {_route_text(session) or 'none yet'}"
        context.say(text)
        return text
    route = await switch_model(session.harness, session.agent, args, attach=session.attach)
    text = f"model: {route}"
    context.say(text)
    return text


async def _open_instead(context: SlashContext, opened: Any) -> None:
    """Make ``opened`` (already open: a failure to open it changed nothing) the session's
    agent, closing the one it had."""
    previous = context.session.agent
    context.session.attach(opened)
    await previous.aclose()


async def _permissions(context: SlashContext, args: str) -> str:
    session = context.session
    if args:
        mode = sandbox_mode_of(args)
        if mode is None:
            raise DshError(f"unknown sandbox mode {args!r}: one of {', '.join(SANDBOX_MODES)}")
        session.harness.check_sandbox(mode)
        policy = session.approval_policy()
        pin_permissions(session.agent.session, mode, "never" if policy == "never" else "ask")
    text = f"sandbox: {session.sandbox_mode()} · approvals: {session.approval_policy()}"
    context.say(text)
    return text


async def _compact(context: SlashContext, args: str) -> str:
    if args:
        raise DshError("/compact takes no arguments")
    context.say("compacting…", "dim")
    result = await context.session.harness.compact(context.session.agent.id)
    text = "nothing to compact yet" if result is None else f"compacted: {result}"
    context.say(text)
    return text


async def _recent_here(context: SlashContext) -> list[Any]:
    snapshots = await context.session.harness.sessions()
    return sessions_here(snapshots, context.session.cwd)[:10]


async def _resume(context: SlashContext, args: str) -> str:
    session = context.session
    recent = await _recent_here(context)
    if not args:
        lines = ["recent sessions here (/resume N or /resume ID-PREFIX):"]
        for number, snapshot in enumerate(recent, 1):
            try:
                title = (await session.harness.status_of(snapshot.id)).title or ""
            except Exception as error:  # one unreadable session never hides the others
                title = f"(cannot be read: {error})"
            lines.append(f"{number:>3}  {snapshot.id[:8]}  {title}")
        text = "\n".join(lines)
        context.say(text)
        return text
    chosen = None
    if args.isdigit() and 1 <= int(args) <= len(recent):
        chosen = recent[int(args) - 1].id
    else:
        chosen = await resolve_session_id(session.harness.persistence, args)
    if chosen == session.agent.id:
        text = f"already in session {chosen}"
        context.say(text)
        return text
    await _open_instead(context, await session.harness.resume(chosen))
    text = f"resumed session {chosen}"
    context.say(text)
    return text


async def _new(context: SlashContext, args: str) -> str:
    session = context.session
    old = session.agent.session
    preset = old.header.agent_preset
    created = await session.harness.create(
        cwd=session.cwd, preset=preset, model=_route_text(session)
    )
    mode, policy = session.sandbox_mode(), session.approval_policy()
    pin_permissions(created.session, mode, "never" if policy == "never" else "ask")
    await _open_instead(context, created)
    text = f"new session {session.agent.id}"
    context.say(text)
    return text


async def _title(context: SlashContext, args: str) -> str:
    session = context.session.agent.session
    if args:
        session.append("session/title", {"title": args, "source": {"kind": "user"}})
    text = f"title: {session.title or '(none yet)'}"
    context.say(text)
    return text


async def _export(context: SlashContext, args: str) -> str:
    agent = context.session.agent
    await agent.flush()
    target = _export_target(args, context.session.cwd, agent.id)
    session = agent.session
    lines = [encode_header_line(session.header, session.inherited_event_count)]
    lines += [encode_event(event) for event in session.events]
    target.write_bytes(b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines))
    text = f"exported {len(lines) - 1} events to {target}"
    context.say(text)
    return text


def _export_target(args: str, cwd: str, session_id: str) -> Path:
    target = Path(args).expanduser() if args else Path(f"dsh-session-{session_id[:8]}.jsonl")
    return target if target.is_absolute() else Path(cwd) / target


async def _diff(context: SlashContext, args: str) -> str:
    events = context.session.agent.session.events
    failed = set()
    for e in events:
        parts = message_parts(e.type, e.data) if e.type == "tool/result" else None
        if parts is not None and parts.is_error:
            failed.add(parts.call_id)
    shown = 0
    for event in events:
        data: Any = event.data
        if event.type != "tool/call" or not isinstance(data, dict):
            continue
        if data.get("name") not in ("edit", "write") or data.get("callId") in failed:
            continue
        for line in edit_diff(str(data["name"]), data.get("arguments"), limit=200):
            context.say(line, "green" if line.startswith("+") else "red" if line[:1] == "-" else "")
        shown += 1
    text = f"{shown} file change(s) in this session" if shown else "no file changes yet"
    context.say(text)
    return text


async def _exit(context: SlashContext, args: str) -> str:
    raise _Exit


SLASH_COMMANDS: dict[str, tuple[Handler, str]] = {
    "help": (_help, "this list"),
    "status": (_status, "session, log, model, sandbox, context used, tokens"),
    "model": (_model, "show or switch the model: /model provider:model"),
    "permissions": (_permissions, "show or set the sandbox: /permissions MODE"),
    "compact": (_compact, "summarize the conversation so far, now"),
    "resume": (_resume, "recent sessions here; /resume N or ID-PREFIX switches"),
    "new": (_new, "start a new session here"),
    "title": (_title, "show or set the session's title"),
    "export": (_export, "write the session's log to a file: /export [PATH]"),
    "diff": (_diff, "the file changes this session made"),
    "exit": (_exit, "leave (the session stays resumable)"),
}
"""Every slash command: its handler and one line of help."""

_ANYTIME = frozenset({"help", "status"})
_SWITCHING = frozenset({"model", "resume", "new"})
"""Commands that end with another agent: both of their events go to the session they open."""


async def run_slash(context: SlashContext, line: str) -> bool:
    """Run the slash command ``line``; ``True`` when it asks to exit."""
    name, _, args = line[1:].strip().partition(" ")
    args = args.strip()
    entry = SLASH_COMMANDS.get(name)
    if entry is None:
        context.say(f"unknown command /{name}; the commands are:", "yellow")
        await _help(context, "")
        return False
    if context.session.running and name not in _ANYTIME:
        context.say(f"/{name} waits for the turn to end (or Ctrl-C to cancel it)", "yellow")
        return False
    handler = entry[0]
    command_id = f"command-{uuid.uuid4()}"
    if name not in _SWITCHING:
        log_command_run(context.session.agent.session, command_id, name, args)
    kind: Literal["success", "error"] = "success"
    text, leave = None, False
    try:
        text = await handler(context, args)
    except _Exit:
        leave = True
    except Exception as error:  # a command that fails never ends the session: one line
        kind, text = "error", str(error) or type(error).__name__
        context.say(f"/{name}: {text}", "red")
    session = context.session.agent.session  # a switching command logs in the session it opened
    if name in _SWITCHING:
        log_command_run(session, command_id, name, args)
    log_command_done(session, command_id, kind, text)
    return leave
