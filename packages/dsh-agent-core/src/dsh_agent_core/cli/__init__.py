"""The ``dsh`` command: run an agent, try the keyless demo, inspect and move session logs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.text import Text

from dsh_agent_core._served import SERVED_MODELS_TIMEOUT
from dsh_agent_core.cli._common import State, async_command, err, fail, log_to_terminal, out
from dsh_agent_core.cli._permission_options import permission_options, sandbox_overrides
from dsh_agent_core.cli._run import run
from dsh_agent_core.cli._sessions import sessions
from dsh_agent_core.cli._terminal import terminal_json, terminal_text

if TYPE_CHECKING:
    from dsh_agent_core._config import Config
    from dsh_agent_core._harness import Harness
    from dsh_agent_core._models import ProviderModel
    from dsh_agent_core._status import SessionStatusRow

# The commands import the harness, the models and the terminal UI inside their bodies: `dsh
# --help` (and every command's --help) loads only click, rich and the option definitions.

__all__ = ["main"]


def _session_options(command: Any) -> Any:
    """The options of an interactive session (``dsh`` alone, ``dsh chat``)."""
    for option in reversed(
        [
            click.option("--model", help="provider:model (default: the config's model)."),
            click.option("--preset", help="A preset of the config (system prompt, tools, model)."),
            permission_options("Ask before widening the sandbox, or never."),
            click.option("--resume", "resume_id", help="Continue this session (an id or prefix)."),
            click.option(
                "-c",
                "--continue",
                "continue_",
                is_flag=True,
                help="Continue the most recent session of this directory.",
            ),
        ]
    ):
        command = option(command)
    return command


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True)
@click.option("--profile", help="Use [profiles.NAME] of the config (also $DSH_PROFILE).")
@click.option("--home", "home", help="The DSH home (default: $DSH_HOME, else ~/.dsh).")
@click.option("--config", "config_path", help="The config file (default: <home>/config.toml).")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@_session_options
@click.version_option(package_name="dsh-agent-core", prog_name="dsh")
@click.pass_context
def cli(
    ctx: click.Context,
    /,
    profile: str | None,
    home: str | None,
    config_path: str | None,
    debug: bool,
    **session: Any,
) -> None:
    """dsh: the DeepSeek Harness agent core. With no command, an interactive session in this
    directory (as `dsh chat`). Session logs are plain JSONL under <DSH_HOME>/sessions-plain
    unless the config says otherwise."""
    log_to_terminal()
    ctx.obj = State(profile=profile, home=home, config_path=config_path, debug=debug)
    if ctx.invoked_subcommand is None:
        ctx.invoke(chat, **session)
    elif any(value not in (None, False) for value in session.values()):
        raise click.UsageError("session options go after the command (dsh run --model ...)")


@cli.command()
@_session_options
@click.pass_obj
@async_command
async def chat(
    state: State,
    model: str | None,
    preset: str | None,
    sandbox_mode: str | None,
    approval: str | None,
    resume_id: str | None,
    continue_: bool,
) -> None:
    """An interactive session in this directory (what `dsh` alone opens): type a prompt,
    /help for the commands, Ctrl-C to cancel a turn, Ctrl-D to exit."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail("the interactive session needs a terminal; in a script use: dsh run PROMPT", code=2)
    if resume_id is not None and continue_:
        fail("give --resume ID or -c/--continue, not both", code=2)
    from dsh_agent_core.cli._interactive import run_interactive
    from dsh_agent_core.cli._run import _run_agent
    from dsh_agent_core.cli._session_ids import latest_session_here, resolve_session_id

    overrides = sandbox_overrides(sandbox_mode, approval)
    sandbox: dict[str, Any] = overrides.get("sandbox", {})
    config = state.config(**overrides)
    here = _real_cwd()

    async def choose_agent(harness: Harness) -> Any:
        chosen = resume_id
        if resume_id is not None:
            chosen = await resolve_session_id(harness.persistence, resume_id)
        elif continue_:
            chosen = await latest_session_here(harness.persistence, here)
        return await _run_agent(
            harness, config, chosen, model, preset, None, sandbox, sandbox_mode, approval
        )

    await run_interactive(config, cwd=here, choose_agent=choose_agent)


def _real_cwd() -> str:
    return os.path.realpath(os.getcwd())


def _print_row(row: SessionStatusRow) -> None:
    from rich.table import Table

    table = Table(show_header=True, header_style="bold")
    for column in ("session", "title", "status", "updated"):
        table.add_column(column, overflow="fold")
    table.add_row(row.session_id, row.title or "", row.status, row.updated_at or "")
    out.print(table)
    if row.session_path:
        out.print(f"log: {row.session_path}", markup=False)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status row as JSON.")
@click.pass_obj
@async_command
async def demo(state: State, as_json: bool) -> None:
    """A keyless demo: a scripted model drives the real loop, real bash and real persistence
    under the configured home; prints the session's status row and log path."""
    from dsh_agent_core._demo import DEMO_PROMPT, demo_model
    from dsh_agent_core._harness import compose
    from dsh_agent_core._signals import shutdown_on_signals
    from dsh_agent_core.cli._transcript import LivePrinter
    from dsh_bash_sandbox import probe_sandbox

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
        printer = LivePrinter(out if not as_json else err, err, answer_only=False)
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
    from dsh_agent_core.cli._config_toml import config_toml

    out.print(config_toml(config.as_written(), data), markup=False)


def _instruction_files_here(config: Config) -> list[str]:
    """The instruction files an agent started here would be given (none when disabled)."""
    from dsh_agent_core._instructions import instruction_files

    if not config.instructions.enabled:
        return []
    here = os.path.realpath(os.getcwd())  # the cwd an agent started here gets
    return [str(path) for path in instruction_files(config.home(), here)]


@cli.command("env")
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
@click.pass_obj
@async_command
async def env_command(state: State, as_json: bool) -> None:
    """List the managed DSH_* variables a bash child gets (the shell_env declarations)."""
    from rich.table import Table

    from dsh_agent_core._harness import compose

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
    from dsh_agent_core._models import ProviderQueryError

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
    from dsh_agent_core._models import provider_models

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


@cli.command("acp")
@click.option("--model", help="provider:model of new sessions (default: the config's model).")
@permission_options("Ask the editor before widening the sandbox, or never (default: ask).")
@click.pass_obj
@async_command
async def acp_command(
    state: State, model: str | None, sandbox_mode: str | None, approval: str | None
) -> None:
    """The agent an editor runs (Zed, JetBrains, Neovim): the Agent Client Protocol on
    standard input and output. Every session it drives is an ordinary dsh session (same log,
    same `dsh sessions` commands). Needs dsh-agent-core[acp]."""
    from dsh_agent_core._errors import MissingExtraError
    from dsh_agent_core._extras import extra_installed

    if not extra_installed("acp"):
        raise MissingExtraError("dsh acp", "acp", by_config=False)
    config = state.config(**sandbox_overrides(sandbox_mode, approval))
    from dsh_acp import serve_stdio

    await serve_stdio(config, model=model)


cli.add_command(run)
cli.add_command(sessions)


def main() -> None:
    """The ``dsh`` console script."""
    cli(prog_name="dsh")
