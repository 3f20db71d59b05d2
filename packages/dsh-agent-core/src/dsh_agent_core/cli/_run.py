"""``dsh run``: one turn of an agent, for a person at a terminal and for scripts (the prompt
from standard input, ``--output json|stream-json``, the exit status of
:mod:`dsh_agent_core.cli._headless`)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

import click

from dsh_agent_core.cli._common import State, async_command, err, fail, out
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
from dsh_agent_core.cli._permission_options import permission_options, sandbox_overrides
from dsh_agent_core.cli._terminal import terminal_json

if TYPE_CHECKING:
    from dsh_agent_core._config import Config
    from dsh_agent_core._harness import Harness

# The harness, the models and the session packages are imported where a turn runs: `dsh run
# --help` loads only what the options need.

__all__ = ["run"]


async def _run_turn(
    harness: Harness, agent: Any, prompt: str, output: OutputFormat
) -> tuple[Any, Any, bool]:
    """Run one turn of ``agent`` on ``prompt``, shown as ``output`` says: the ``turn/end``
    reason, the turn's number, and whether Ctrl-C cancelled it."""
    from dsh_agent_core.cli._transcript import LivePrinter

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
    from dsh_agent_core.cli._usage import turn_totals

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
    from dsh_agent_core.cli._usage import turn_line, turn_totals
    from dsh_llm import context_window_of

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


@click.command(epilog=_RUN_EPILOG)
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
@permission_options(
    "Ask before widening the sandbox, or never (default: ask; never under full access)."
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
    from dsh_agent_core._errors import SandboxUnavailableError
    from dsh_agent_core._harness import compose, interrupted_child_notice
    from dsh_agent_core._signals import shutdown_on_signals
    from dsh_agent_core.cli._approval import terminal_answerer
    from dsh_agent_core.cli._session_ids import latest_session_here, resolve_session_id

    if resume_id is not None and continue_here:
        raise click.UsageError("--resume and --continue name the session twice: give one")
    prompt = read_prompt(prompt)  # refused before any session exists
    overrides = sandbox_overrides(sandbox_mode, approval)
    sandbox: dict[str, Any] = overrides.get("sandbox", {})
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
    from dsh_agent_core._permissions import (
        approval_of,
        logged_approval_policy,
        logged_sandbox_mode,
        pin_permissions,
        sandbox_mode_of,
    )

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
