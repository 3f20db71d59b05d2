"""The ``dsh`` command: run an agent, try the keyless demo, inspect and move session logs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from dsh_agent_core._config import Config
from dsh_agent_core._demo import DEMO_PROMPT, demo_model
from dsh_agent_core._errors import SandboxUnavailableError
from dsh_agent_core._harness import Harness, compose, interrupted_child_notice
from dsh_agent_core._instructions import instruction_files
from dsh_agent_core._models import (
    SERVED_MODELS_TIMEOUT,
    ProviderModel,
    ProviderQueryError,
    provider_models,
)
from dsh_agent_core._permissions import (
    approval_of,
    logged_approval_policy,
    logged_sandbox_mode,
    pin_permissions,
    sandbox_mode_of,
)
from dsh_agent_core._signals import shutdown_on_signals
from dsh_agent_core._status import SessionStatusRow
from dsh_agent_core.cli._approval import terminal_answerer
from dsh_agent_core.cli._common import State, async_command, err, fail, log_to_terminal, out
from dsh_agent_core.cli._headless import (
    EXIT_REFUSED,
    OUTPUT_FORMATS,
    EventStream,
    OutputFormat,
    exit_code_of,
    final_answer,
    read_prompt,
    result_line,
)
from dsh_agent_core.cli._session_ids import latest_session_here, resolve_session_id
from dsh_agent_core.cli._sessions import sessions
from dsh_agent_core.cli._terminal import terminal_json, terminal_text
from dsh_agent_core.cli._transcript import LivePrinter
from dsh_agent_core.cli._usage import turn_line, turn_totals
from dsh_bash_sandbox import probe_sandbox
from dsh_llm import context_window_of
from dsh_shell import SANDBOX_MODES

__all__ = ["main"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--profile", help="Use [profiles.NAME] of the config (also $DSH_PROFILE).")
@click.option("--home", "home", help="The DSH home (default: $DSH_HOME, else ~/.dsh).")
@click.option("--config", "config_path", help="The config file (default: <home>/config.toml).")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.version_option(package_name="dsh-agent-core", prog_name="dsh")
@click.pass_context
def cli(
    ctx: click.Context,
    profile: str | None,
    home: str | None,
    config_path: str | None,
    debug: bool,
) -> None:
    """dsh: the DeepSeek Harness agent core. Session logs are plain JSONL under
    <DSH_HOME>/sessions-plain unless the config says otherwise."""
    log_to_terminal()
    ctx.obj = State(profile=profile, home=home, config_path=config_path, debug=debug)


def _print_row(row: SessionStatusRow) -> None:
    table = Table(show_header=True, header_style="bold")
    for column in ("session", "title", "status", "updated"):
        table.add_column(column, overflow="fold")
    table.add_row(row.session_id, row.title or "", row.status, row.updated_at or "")
    out.print(table)
    if row.session_path:
        out.print(f"log: {row.session_path}", markup=False)


async def _run_turn(
    harness: Harness, agent: Any, prompt: str, output: OutputFormat
) -> tuple[Any, Any, bool]:
    """Run one turn of ``agent`` on ``prompt``, shown as ``output`` says: the ``turn/end``
    reason, the turn's number, and whether Ctrl-C cancelled it."""
    # with JSON output, standard output is the script's: a person reads standard error
    printer = LivePrinter(out if output == "text" else err, err)
    subscriptions = [agent.session.subscribe(printer)]
    if output == "stream-json":
        subscriptions.append(agent.session.subscribe(EventStream()))
    loop = asyncio.get_running_loop()
    interrupted = False

    def on_interrupt() -> None:
        nonlocal interrupted
        interrupted = True
        agent.cancel()

    with contextlib.suppress(NotImplementedError, RuntimeError):  # no signals here
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
    try:
        agent.followup(prompt)
        await agent.wait_idle()
    finally:
        for subscription in subscriptions:
            subscription.close()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
        if printer.last_turn is not None:
            _print_usage(harness, agent, printer.last_turn)
    return printer.last_reason, printer.last_turn, interrupted


def _prices_of(config: Config) -> Any:
    def prices_of(provider: str, model: str) -> Any:
        return config.model_facts(provider, model).prices

    return prices_of


def _result(agent: Any, config: Config, reason: Any, turn: Any, code: int) -> dict[str, Any]:
    """The result object of ``--output json`` and ``stream-json`` (the log path is added once
    the log is closed)."""
    events = agent.session.events
    usage = turn_totals(events, turn, _prices_of(config)) if turn is not None else None
    return {
        "type": "result",
        "session_id": agent.id,
        "answer": final_answer(events, turn),
        "reason": reason,
        "usage": usage.to_json() if usage is not None else None,
        "log": None,
        "exit_code": code,
    }


def _print_result(result: dict[str, Any], output: OutputFormat) -> None:
    """Write the result object on standard output: indented (``json``) or as the last line
    (``stream-json``); a reader that went away loses it quietly."""
    if output == "json":
        out.print(terminal_json(result), markup=False)
    elif output == "stream-json":
        EventStream().write(result_line(result))


def _print_usage(harness: Harness, agent: Any, turn: int) -> None:
    """The turn's usage line on standard error (nothing when no model call was made)."""
    config = harness.config
    totals = turn_totals(agent.session.events, turn, _prices_of(config))
    if not totals.calls:
        return
    window = None
    if totals.route is not None:
        provider, model = totals.route
        with contextlib.suppress(ValueError):
            window = context_window_of(harness.models.get(provider), model)
        if window is None:
            window = config.model_facts(provider, model).context_window
    err.print(turn_line(totals, window), markup=False)


def _print_ending(session_id: str, session_path: str | None) -> None:
    """How every ``dsh run`` ends, however it ends: the session, its log, how to go on."""
    err.print(f"session {session_id}", markup=False)
    if session_path:
        err.print(f"log: {session_path}", markup=False)
    err.print(f"resume: dsh run --resume {session_id} PROMPT", markup=False)


_RUN_EPILOG = """\b
Exit status:
  0    the turn completed (or stopped at the model's output limit)
  1    the turn ended in an error (model, tool, --max-steps), or dsh failed
  2    usage: a wrong option, no prompt, an empty prompt
  3    refused: the sandbox cannot run here (nothing started), or a hook blocked the turn
  130  cancelled by Ctrl-C (SIGTERM: 143, SIGHUP: 129)"""


@cli.command(epilog=_RUN_EPILOG)
@click.argument("prompt", required=False)
@click.option("--model", help="provider:model (default: the config's model).")
@click.option(
    "--resume",
    "resume_id",
    metavar="ID",
    help="Continue this session (its id, or any unique prefix of it) instead of a new one.",
)
@click.option(
    "-c",
    "--continue",
    "continue_here",
    is_flag=True,
    help="Continue the most recent session started in this directory (or --cwd).",
)
@click.option("--preset", help="A preset of the config (system prompt, tools, model).")
@click.option("--cwd", help="The session's working directory (default: here).")
@click.option(
    "--sandbox",
    "sandbox_mode",
    type=click.Choice(SANDBOX_MODES),
    help="Where commands may write (default: the config's, else workspace-write).",
)
@click.option(
    "--approval",
    type=click.Choice(["ask", "never"]),
    help="Ask before widening the sandbox, or never (default: ask; never under full access).",
)
@click.option(
    "--output",
    type=click.Choice(OUTPUT_FORMATS),
    default="text",
    show_default=True,
    help="text: the answer on stdout. json: one result object at the end. stream-json: the "
    "session's events as JSON lines as they are logged, then the result object.",
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    metavar="N",
    help="End the turn after N model calls (default: the config's max_steps_per_turn).",
)
@click.pass_obj
@async_command
async def run(
    state: State,
    prompt: str | None,
    model: str | None,
    resume_id: str | None,
    continue_here: bool,
    preset: str | None,
    cwd: str | None,
    sandbox_mode: str | None,
    approval: str | None,
    output: OutputFormat,
    max_steps: int | None,
) -> None:
    """Run one turn of an agent on PROMPT, streaming the answer and its tool calls. PROMPT
    "-", or none with standard input not a terminal, reads the prompt from standard input.

    Commands run confined by bubblewrap unless the sandbox is danger-full-access; where it
    cannot run, dsh refuses to start. In a terminal, a command that asks for a wider sandbox
    shows an approval prompt; without one, such a request is denied (fail closed) and the
    model is told so."""
    if resume_id is not None and continue_here:
        raise click.UsageError("--resume and --continue name the session twice: give one")
    prompt = read_prompt(prompt)  # refused before any session exists
    sandbox: dict[str, Any] = {}
    if sandbox_mode is not None:
        sandbox["mode"] = sandbox_mode
    if approval is not None:
        sandbox["approval"] = approval
    overrides: dict[str, Any] = {"sandbox": sandbox} if sandbox else {}
    if max_steps is not None:
        overrides["max_steps_per_turn"] = max_steps
    config = state.config(**overrides)
    ending: list[tuple[str, str | None]] = []  # printed on every ending, signals included
    harness: Harness | None = None
    result: dict[str, Any] | None = None
    try:
        async with shutdown_on_signals(compose(config)) as harness:
            if continue_here:
                resume_id = await latest_session_here(harness.persistence, cwd or os.getcwd())
            elif resume_id is not None:
                resume_id = await resolve_session_id(harness.persistence, resume_id)
            try:
                agent = await _run_agent(
                    harness, config, resume_id, model, preset, cwd, sandbox, sandbox_mode, approval
                )
            except SandboxUnavailableError as error:
                fail(str(error), code=EXIT_REFUSED)
            row = await harness.status_of(agent.id)
            ending.append((agent.id, row.session_path))
            if sys.stdin.isatty():
                harness.extensions.approval.add(terminal_answerer(err))
            reason, turn, interrupted = await _run_turn(harness, agent, prompt, output)
            code = exit_code_of(reason, interrupted=interrupted)
            result = _result(agent, config, reason, turn, code)
            row = await harness.status_of(agent.id)
            ending[0] = (agent.id, row.session_path or ending[0][1])
    finally:
        for session_id, session_path in ending:
            _print_ending(session_id, session_path)
        for child_id in harness.interrupted_children if harness is not None else ():
            err.print(interrupted_child_notice(child_id), markup=False)
    result["log"] = ending[0][1]
    _print_result(result, output)
    sys.exit(result["exit_code"])


async def _run_agent(
    harness: Harness,
    config: Config,
    resume_id: str | None,
    model: str | None,
    preset: str | None,
    cwd: str | None,
    sandbox: dict[str, Any],
    sandbox_mode: str | None,
    approval: str | None,
) -> Any:
    """The agent ``dsh run`` drives: the resumed session (its own knobs kept, a flag given
    replacing only its knob) or a new one; every refusal comes before anything is logged."""
    if resume_id is not None:
        if model is not None:
            harness.check_route(model)
        agent = await harness.resume(resume_id, model=model)
        session = agent.session
        mode = sandbox_mode_of(sandbox_mode) or logged_sandbox_mode(session)
        policy = approval_of(approval) or logged_approval_policy(session)
        mode = mode or config.sandbox.mode
        policy = policy or config.sandbox.approval_policy
        if session.header.parent_session is not None:
            policy = "never"  # a delegated child never asks
        harness.check_sandbox(mode)  # refused: nothing is logged
        if sandbox:
            pin_permissions(session, mode, policy)
        return agent
    harness.loop(preset)  # an unknown preset is the error to report, before any route
    settings = harness.config.presets.get(preset) if preset is not None else None
    harness.check_route(model or (settings.model if settings is not None else None))
    harness.check_sandbox(config.sandbox.mode)
    return await harness.create(preset=preset, model=model, cwd=cwd or os.getcwd())


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status row as JSON.")
@click.pass_obj
@async_command
async def demo(state: State, as_json: bool) -> None:
    """A keyless demo: a scripted model drives the real loop, real bash and real persistence
    under the configured home; prints the session's status row and log path."""
    config = state.config()
    unavailable = None
    if config.sandbox.mode != "danger-full-access":
        here = (Path(os.getcwd()),)  # a bwrap planted where the demo runs is never run
        probe = probe_sandbox(config.sandbox.bwrap, writable_roots=here)
        if not probe.available:  # the demo still shows the loop where bubblewrap cannot run
            unavailable = probe.cause
            config = state.config(sandbox={"mode": "danger-full-access"})
    async with shutdown_on_signals(compose(config, models={"scripted": demo_model()})) as harness:
        agent = await harness.create(model="scripted:demo", cwd=os.getcwd())
        if unavailable is not None:
            err.print(
                f"sandbox unavailable ({unavailable}): the demo runs without it", markup=False
            )
        if not as_json:
            err.print(Text(f"dsh demo · session {agent.id}", style="bold"))
            err.print(f"sandbox: {config.sandbox.mode}", markup=False)
            out.print(f"> {DEMO_PROMPT}", markup=False)
        printer = LivePrinter(out if not as_json else err, err)
        subscription = agent.session.subscribe(printer)
        agent.followup(DEMO_PROMPT)
        await agent.wait_idle()
        subscription.close()
        await agent.aclose()
        row = await harness.status_of(agent.id)
    if as_json:
        out.print(terminal_json(row.to_json()))
    else:
        _print_row(row)
        out.print("Next: dsh sessions list · dsh sessions show " + row.session_id, markup=False)
    if not isinstance(printer.last_reason, dict) or printer.last_reason.get("kind") != "completed":
        sys.exit(1)


@cli.command("config")
@click.option("--dump", is_flag=True, help="Print the resolved configuration (the default).")
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
@click.pass_obj
@async_command
async def config_command(state: State, dump: bool, as_json: bool) -> None:
    """Print the resolved configuration; API keys are never shown (only whether the variable
    that holds each is set). instructions.files lists the instruction files an agent
    working here would be given, in order."""
    config = state.config()
    data = config.dump()
    data["instructions"]["files"] = _instruction_files_here(config)
    if as_json:
        out.print(terminal_json(data))
        return
    out.print(_toml(data), markup=False)


def _instruction_files_here(config: Config) -> list[str]:
    """The instruction files an agent started here would be given (none when disabled)."""
    if not config.instructions.enabled:
        return []
    here = os.path.realpath(os.getcwd())  # the cwd an agent started here gets
    return [str(path) for path in instruction_files(config.home(), here)]


def _toml_value(value: Any) -> str:
    """``value`` as a TOML value: a table inside an array is an inline table (its keys quoted
    as `_toml_key` does), a ``None`` in it is left out (TOML has no null)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(item) for item in value if item is not None) + "]"
    if isinstance(value, dict):
        pairs = (
            f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in value.items() if v is not None
        )
        inline = ", ".join(pairs)
        return "{ " + inline + " }" if inline else "{}"
    return terminal_json(str(value))  # a TOML basic string: controls as \uXXXX escapes


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else terminal_json(key)


def _toml(data: dict[str, Any], prefix: str = "") -> str:
    """A TOML rendering of plain data (``None`` values are shown as comments)."""
    lines: list[str] = []
    tables: list[tuple[str, dict[str, Any]]] = []
    arrays: list[tuple[str, list[dict[str, Any]]]] = []
    for name, value in data.items():
        key = _toml_key(str(name))
        if isinstance(value, dict):
            tables.append((f"{prefix}{key}", value))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            arrays.append((f"{prefix}{key}", value))
        elif value is None:
            lines.append(f"# {key} is not set")
        else:
            lines.append(f"{key} = {_toml_value(value)}")
    for path, table in tables:
        lines.append("")
        lines.append(f"[{path}]")
        lines.append(_toml(table, f"{path}."))
    for path, items in arrays:
        for item in items:
            lines.append("")
            lines.append(f"[[{path}]]")
            lines.append(_toml(item, f"{path}."))
    return "\n".join(line for line in lines).replace("\n\n\n", "\n\n")


@cli.command("env")
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
@click.pass_obj
@async_command
async def env_command(state: State, as_json: bool) -> None:
    """List the managed DSH_* variables a bash child gets (the shell_env declarations)."""
    config = state.config()
    async with compose(config) as harness:
        rows = harness.shell_env.list()
        home = harness.home
        probe = harness.sandbox_probe()
        servers = harness.mcp.status()
    if as_json:
        out.print(
            terminal_json(
                [
                    {"contributor": r.contributor, "key": r.key, "description": r.description}
                    for r in rows
                ]
            )
        )
        return
    table = Table(show_header=True, header_style="bold")
    for column in ("key", "contributor", "description"):
        table.add_column(column)
    for row in rows:
        table.add_row(row.key, row.contributor, row.description)
    out.print(table)
    out.print(f"DSH_HOME here: {home}", markup=False)
    if probe.available:
        sandbox = f"available ({probe.path}, {probe.version}); mode {config.sandbox.mode}"
    else:
        sandbox = f"unavailable: {probe.cause}; fix: {probe.fix}"
    out.print(f"sandbox: {sandbox}", markup=False)
    for server in servers:
        tools = ", ".join(server.tools) if server.tools else "no tools"
        detail = (
            f"{server.state} ({tools})"
            if server.error is None
            else (f"{server.state}: {server.error}")
        )
        out.print(f"mcp server {server.name}: {detail}", markup=False)


async def _served(model: ProviderModel, within: float) -> dict[str, Any]:
    """What one provider serves, as a ``dsh models`` row (``error``: why it could not say)."""
    row: dict[str, Any] = {
        "provider": model.name,
        "kind": model.config.kind,
        "base_url": model.config.base_url,
        "status": "served",
        "models": None,
        "error": None,
    }
    try:
        row["models"] = await model.served_models(within)
    except ProviderQueryError as error:
        row["status"] = "key-not-set" if error.key_missing else "unreachable"
        row["error"] = error.reason
    finally:
        with contextlib.suppress(Exception):
            await model.aclose()
    return row


@cli.command("models")
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
@click.option(
    "--timeout",
    "within",
    type=click.FloatRange(min=0, min_open=True),
    default=SERVED_MODELS_TIMEOUT,
    show_default=True,
    help="Seconds each provider's server is given to answer.",
)
@click.pass_obj
@async_command
async def models_command(state: State, as_json: bool, within: float) -> None:
    """List what each configured provider serves (its server's GET /v1/models, all asked at
    once): one line each, `name  base_url  model, model…`, or why it could not say (a key
    that is not set is said without asking). Exits 0 even when some could not be asked."""
    config = state.config()
    models = provider_models(config)
    rows = await asyncio.gather(*(_served(model, within) for model in models.values()))
    if as_json:
        out.print(terminal_json(list(rows)))
        return
    width = max(len(row["provider"]) for row in rows)
    url_width = max(len(row["base_url"] or "-") for row in rows)
    for row in rows:
        if row["status"] == "key-not-set":
            said = row["error"]
        elif row["status"] == "unreachable":
            said = f"unreachable: {row['error']}"
        elif row["kind"] == "scripted":
            said = "scripted (answers any model name with the configured replies)"
        else:
            said = ", ".join(row["models"]) or "(serves no model)"
        line = f"{row['provider']:<{width}}  {row['base_url'] or '-':<{url_width}}  {said}"
        out.print(terminal_text(line, one_line=True), markup=False, soft_wrap=True)
    failed = sum(1 for row in rows if row["error"] is not None)
    if failed:
        err.print(f"{failed} of {len(rows)} providers did not say what they serve", markup=False)


cli.add_command(sessions)


def main() -> None:
    """The ``dsh`` console script."""
    cli(prog_name="dsh")
