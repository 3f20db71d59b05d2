"""``dsh`` with no command: the interactive session.

One prompt (prompt_toolkit: history per project, multi-line paste, Esc-Enter for a new line,
completion of slash commands and paths) over one agent. A line typed while a turn runs is
steered into that turn; Ctrl-C cancels the turn (or, at an empty prompt, twice exits); Ctrl-D
exits; Ctrl-O shows the latest reasoning whole. Answers render through
:mod:`dsh_agent_core.cli._render`, approvals are asked inline
(:mod:`dsh_agent_core.cli._approval`), slash commands are in
:mod:`dsh_agent_core.cli._slash`. The status line under the input shows the model, the context
used, the session's tokens, the sandbox mode and what is running; above it, the last lines a
running command printed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion, PathCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.key_binding.key_processor import KeyPressEvent
from prompt_toolkit.patch_stdout import patch_stdout
from rich.text import Text

from dsh_agent_core._config import Config
from dsh_agent_core._harness import Harness, compose, interrupted_child_notice
from dsh_agent_core._permissions import logged_approval_policy, logged_sandbox_mode
from dsh_agent_core.cli._approval import InlineApprovals
from dsh_agent_core.cli._render import Activity, LiveOutput, MarkdownPrinter
from dsh_agent_core.cli._slash import SLASH_COMMANDS, SlashContext, run_slash
from dsh_agent_core.cli._terminal import TerminalConsole, terminal_text
from dsh_agent_core.cli._usage import session_totals
from dsh_llm import context_window_of

__all__ = ["InteractiveSession", "run_interactive"]

_EXIT_WINDOW = 2.0
"""Seconds within which a second Ctrl-C at an empty prompt exits."""


class _Completer(Completer):
    """Slash commands at the start of the line; paths in a word that looks like one."""

    def __init__(self) -> None:
        self._paths = PathCompleter(expanduser=True)

    def get_completions(self, document: Document, complete_event: Any) -> Any:
        text = document.text_before_cursor
        if text.startswith("/") and " " not in text:
            for name, (_, summary) in SLASH_COMMANDS.items():
                if name.startswith(text[1:]):
                    yield Completion(f"/{name}", start_position=-len(text), display_meta=summary)
            return
        word = document.get_word_before_cursor(WORD=True)
        if word.startswith(("./", "../", "/", "~")) or "/" in word:
            sub = Document(word, len(word))
            yield from self._paths.get_completions(sub, complete_event)


def _history_file(config: Config, cwd: str) -> Path:
    folder = config.home() / "history"
    folder.mkdir(parents=True, exist_ok=True)
    name = "".join(c if c.isalnum() or c in "-_." else "-" for c in os.path.realpath(cwd))
    return folder / f"{name.strip('-') or 'root'}.txt"


def _console() -> TerminalConsole:
    """The session's output: a terminal one column narrower than the window (writing the last
    column makes some terminals wrap early), colour unless NO_COLOR."""
    columns = shutil.get_terminal_size().columns
    return TerminalConsole(force_terminal=True, width=max(40, columns - 1))


@dataclass
class InteractiveSession:
    """The state of one interactive ``dsh``: its harness, the agent, and the prompt."""

    harness: Harness
    agent: Any
    cwd: str
    console: TerminalConsole = field(default_factory=lambda: _console())
    activity: Activity = field(default_factory=Activity)
    live: LiveOutput = field(default_factory=LiveOutput)
    turn_task: asyncio.Task[None] | None = None
    started: float = field(default_factory=time.monotonic)
    last_interrupt: float = 0.0
    prompt: PromptSession[str] | None = None
    approvals: InlineApprovals | None = None
    _subscription: Any = None
    printer: MarkdownPrinter | None = None

    # -- the agent ----------------------------------------------------------------------------

    def attach(self, agent: Any) -> None:
        """Make ``agent`` the session's agent (subscribe the printer to it)."""
        if self._subscription is not None:
            self._subscription.close()
        self.agent = agent
        self.printer = MarkdownPrinter(self.console, self.activity, self.live)
        self._subscription = agent.session.subscribe(self.printer)

    def tool_output(self, execution: Any, text: str) -> None:
        """A ``tool_output`` listener: a running call's output, shown above the status line
        (this session's calls only: a delegated child's results never reach this printer, so
        its lines would stay)."""
        if execution.session_id != self.agent.id:
            return
        self.live.feed(str(execution.call_id), text)
        self.refresh()

    @property
    def running(self) -> bool:
        return self.turn_task is not None and not self.turn_task.done()

    def route(self) -> tuple[str, str] | None:
        """The route of the agent's latest request header, else its configured one."""
        options = getattr(self.agent, "options", None)  # the route the next request takes
        if options is not None:
            return str(options.provider), str(options.model)
        header = self.agent.session.request_header
        if header is not None:
            return str(header.config.get("provider")), str(header.config.get("model"))
        return None

    def window(self) -> int | None:
        route = self.route()
        if route is None:
            return None
        provider, model = route
        with contextlib.suppress(ValueError, KeyError):
            found = context_window_of(self.harness.models.get(provider), model)
            if found is not None:
                return found
        return self.harness.config.model_facts(provider, model).context_window

    def sandbox_mode(self) -> str:
        session = self.agent.session
        return str(logged_sandbox_mode(session) or self.harness.config.sandbox.mode)

    def approval_policy(self) -> str:
        session = self.agent.session
        return str(logged_approval_policy(session) or self.harness.config.sandbox.approval_policy)

    def totals(self) -> Any:
        config = self.harness.config

        def prices_of(provider: str, model: str) -> Any:
            return config.model_facts(provider, model).prices

        return session_totals(self.agent.session.events, prices_of)

    # -- what the prompt shows ----------------------------------------------------------------

    def status_line(self) -> FormattedText:
        route = self.route()
        model = f"{route[0]}:{route[1]}" if route is not None else "no model yet"
        totals = self.totals()
        window = self.window()
        parts = [model]
        if totals.context is not None and window:
            parts.append(f"context {100 * totals.context // window}%")
        tokens = totals.input_tokens + totals.cache_read_tokens + totals.output_tokens
        parts.append(f"{tokens:,} tokens")
        parts.append(self.sandbox_mode())
        running = self.activity.text()
        tail = self.printer.streaming_tail if self.printer is not None else ""
        if running and tail:
            running = f"{running}: {tail}"
        if running:
            spinner = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"[int(time.monotonic() * 8) % 10]
            parts.append(f"{spinner} {running}")
        text = " · ".join(terminal_text(p, one_line=True) for p in parts)
        width = max(20, shutil.get_terminal_size().columns - 6)
        live = [
            ("", f"  │ {terminal_text(line, one_line=True)[:width]}\n")
            for line in self.live.lines()
        ]
        return FormattedText([*live, ("bold", text)])  # plain text: nothing in it is markup

    def prompt_text(self) -> str:
        if self.approvals is not None and self.approvals.asking:
            return "approve? "
        return "… " if self.running else "> "

    def refresh(self) -> None:
        if self.prompt is not None and self.prompt.app.is_running:
            self.prompt.app.invalidate()

    # -- turns --------------------------------------------------------------------------------

    async def _turn(self, text: str) -> None:
        self.agent.followup(text)
        await self.agent.wait_idle()

    def start_turn(self, text: str) -> None:
        self.activity.set("thinking")
        self.turn_task = asyncio.get_running_loop().create_task(self._turn(text))
        self.turn_task.add_done_callback(self._turn_done)

    def _turn_done(self, task: asyncio.Task[None]) -> None:
        """A turn that failed outside the loop's own error handling says so in one line."""
        if not task.cancelled() and task.exception() is not None:
            self.activity.set("")
            error = task.exception()
            self.console.print(Text(f"the turn failed: {error}", style="red"))
        self.refresh()

    def steer(self, text: str) -> None:
        self.agent.steer(text)
        self.console.print(Text(f"(steering: {terminal_text(text, one_line=True)})", "dim"))

    def cancel_turn(self) -> None:
        if self.approvals is not None:
            self.approvals.interrupt()
        self.agent.cancel()
        self.console.print(Text("(cancelled)", style="yellow"))

    async def wait_turn(self) -> None:
        if self.turn_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self.turn_task

    # -- the loop -----------------------------------------------------------------------------

    def _bindings(self) -> KeyBindings:
        bindings = KeyBindings()

        @bindings.add("escape", "enter")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @bindings.add("c-o")
        def _reasoning(event: KeyPressEvent) -> None:
            if self.printer is not None:
                self.printer.show_reasoning()

        return bindings

    def goodbye(self) -> None:
        row_path = self.agent.session.header.id
        self.console.print(Text(f"session {row_path}"))
        self.console.print(Text(f"resume: dsh --resume {row_path}   (or dsh -c here)"))

    async def _slash(self, context: SlashContext, text: str) -> bool:
        """Run a slash command; Ctrl-C (no prompt is reading keys meanwhile: a real SIGINT)
        cancels the command, not the session."""
        loop = asyncio.get_running_loop()
        command = loop.create_task(run_slash(context, text))
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, command.cancel)
        try:
            return await command
        except asyncio.CancelledError:
            if not command.cancelled():
                raise
            self.console.print(Text(f"({text.split()[0]} cancelled)", style="yellow"))
            return False
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)

    async def loop(self, config: Config) -> None:
        """Read and act on lines until the user exits."""
        self.prompt = PromptSession(
            history=FileHistory(str(_history_file(config, self.cwd))),
            completer=_Completer(),
            complete_while_typing=False,
            bottom_toolbar=self.status_line,
            refresh_interval=0.25,
            key_bindings=self._bindings(),
        )
        self.console.print(
            Text(
                f"dsh · session {self.agent.id} · {self.sandbox_mode()} · /help for commands, "
                "Esc-Enter for a new line, Ctrl-D to exit",
                style="bold",
            )
        )
        while True:
            try:
                line = await self.prompt.prompt_async(self.prompt_text)
            except KeyboardInterrupt:
                if self.running:
                    self.cancel_turn()
                    continue
                now = time.monotonic()
                if now - self.last_interrupt < _EXIT_WINDOW:
                    break
                self.last_interrupt = now
                self.console.print(Text("(Ctrl-C again or Ctrl-D to exit)", style="dim"))
                continue
            except EOFError:
                break
            if self.approvals is not None and self.approvals.take(line):
                continue
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                if await self._slash(SlashContext(self, config), text):
                    break
                continue
            if self.running:
                self.steer(text)
            else:
                self.start_turn(text)
        if self.running:
            self.cancel_turn()
        await self.wait_turn()


async def run_interactive(config: Config, *, cwd: str, choose_agent: Any) -> None:
    """Open the harness, get the agent (``choose_agent(harness)``), and run the session."""
    async with compose(config) as harness:
        agent = await choose_agent(harness)
        with patch_stdout(raw=True):
            session = InteractiveSession(harness=harness, agent=agent, cwd=cwd)
            session.attach(agent)
            session.approvals = InlineApprovals(console=session.console, on_change=session.refresh)
            harness.extensions.approval.add(session.approvals.answer)
            harness.extensions.tool_output.add(session.tool_output)
            try:
                await session.loop(config)
            finally:
                session.goodbye()
                for child_id in harness.interrupted_children:
                    session.console.print(Text(interrupted_child_notice(child_id)))
