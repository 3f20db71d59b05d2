"""BashTool: schema, description, the request it builds, workdir, rendering and errors."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from dsh_shell import ShellExecRequest, ShellWorkdirError
from dsh_tool_bash import BashTool, JobRegistry, ShellEnvRegistry, bash_description
from dsh_tools import ToolCall, ToolRegistry

BACKGROUND_DESCRIPTION = (
    "Run a `bash -c` command; returns stdout and stderr.\n"
    "Each call is a fresh shell: pass `workdir`, not `cd`.\n"
    "A non-zero exit ends the result with `[exit code: N]`.\n"
    "`$DSH_*` variables hold harness facts.\n"
    "Long output keeps its tail; the full output's file is named.\n"
    "A process left running with `&` is not collected; stop it yourself.\n"
    "For long commands set `run_in_background`, then use `job_output`, `job_list`, `job_kill`."
)

FOREGROUND_ONLY_LAST_LINE = "Commands must finish within the timeout."


def _single(executor: Any) -> ShellExecRequest:
    assert len(executor.requests) == 1
    request: ShellExecRequest = executor.requests[0]
    return request


# -- schema and description ---------------------------------------------------------------------


def test_with_background_the_schema_has_five_properties(bash: BashTool) -> None:
    parameters = bash.schema().parameters
    assert list(parameters["properties"]) == [
        "command",
        "description",
        "timeoutMs",
        "workdir",
        "run_in_background",
    ]
    assert parameters["required"] == ["command", "description"]
    assert parameters["properties"]["timeoutMs"]["type"] == "number"


def test_without_background_the_schema_has_no_run_in_background(
    executor: Any, shell_env: ShellEnvRegistry
) -> None:
    schema = BashTool(executor, shell_env, enable_background=False).schema()
    assert list(schema.parameters["properties"]) == [
        "command",
        "description",
        "timeoutMs",
        "workdir",
    ]
    assert "run_in_background" not in str(schema.to_wire())


def test_the_parameters_schema_is_pinned(bash: BashTool) -> None:
    assert bash.schema().parameters == {
        "title": "bash",
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command."},
            "description": {
                "type": "string",
                "description": "5-10 words on what it does, shown to the user (e.g. 'List files').",
            },
            "timeoutMs": {"type": "number", "description": "Timeout in ms (capped)."},
            "workdir": {
                "type": "string",
                "description": "Working directory (default: the workspace; relative to it).",
            },
            "run_in_background": {
                "type": "boolean",
                "default": False,
                "description": "Run as a background job: returns its job id at once, no timeout.",
            },
        },
        "required": ["command", "description"],
    }


def test_the_description_with_background_is_pinned(bash: BashTool) -> None:
    assert bash.description == BACKGROUND_DESCRIPTION
    assert bash.schema().description == BACKGROUND_DESCRIPTION


def test_the_description_without_background_is_pinned(
    executor: Any, shell_env: ShellEnvRegistry
) -> None:
    description = BashTool(executor, shell_env, enable_background=False).description
    expected_head = BACKGROUND_DESCRIPTION.rsplit("\n", 1)[0]
    assert description == f"{expected_head}\n{FOREGROUND_ONLY_LAST_LINE}"
    assert description == bash_description(enable_background=False)


@pytest.mark.parametrize("enable_background", [True, False])
def test_the_description_teaches_dsh_variables_and_no_persistence_key(
    executor: Any, shell_env: ShellEnvRegistry, enable_background: bool
) -> None:
    text = str(BashTool(executor, shell_env, enable_background=enable_background).schema())
    assert "$DSH_*" in text
    for persistence_specific in ("JSONL", "DSH_SESSION_JSONL", "transcript", "sessions-plain"):
        assert persistence_specific not in text


# -- the request --------------------------------------------------------------------------------


async def test_a_foreground_request_carries_the_managed_snapshot(
    call: Any, executor: Any, caller: Any, home: Path
) -> None:
    await call("bash", {"command": "echo hi", "description": "Say hi"}, caller)
    request = _single(executor)
    assert dict(request.dsh_env or {}) == {
        "DSH_HOME": str(home),
        "DSH_SHELL": "1",
        "DSH_SESSION_ID": "session-a",
    }
    assert request.env is None
    assert request.stdin is None
    assert request.stdout_max_bytes is None
    assert dict(executor.run_specs[0].dsh_env) == dict(request.dsh_env or {})


async def test_a_call_without_agent_has_no_session_id(call: Any, executor: Any, home: Path) -> None:
    await call("bash", {"command": "echo hi", "description": "Say hi"})
    assert dict(_single(executor).dsh_env or {}) == {"DSH_HOME": str(home), "DSH_SHELL": "1"}


async def test_model_supplied_env_stdin_caps_and_spoofed_ids_never_reach_the_executor(
    call: Any, executor: Any, caller: Any
) -> None:
    arguments = {
        "command": "env",
        "description": "Show the environment",
        "env": {"DSH_SESSION_ID": "spoofed", "PATH": "/evil"},
        "dsh_env": {"DSH_SESSION_ID": "spoofed"},
        "DSH_SESSION_ID": "spoofed",
        "stdin": "input",
        "stdoutMaxBytes": 1,
        "stdout_max_bytes": 1,
    }
    result = await call("bash", arguments, caller)
    assert not result.is_error
    request = _single(executor)
    assert request.env is None
    assert request.stdin is None
    assert request.stdout_max_bytes is None
    assert (request.dsh_env or {})["DSH_SESSION_ID"] == "session-a"
    assert executor.run_specs[0].stdout_max_bytes == 64_000


async def test_a_stale_ambient_session_id_does_not_reach_the_request_and_environ_is_untouched(
    call: Any, executor: Any, caller: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_SESSION_ID", "stale-parent")
    before = dict(os.environ)
    await call("bash", {"command": "true", "description": "Do nothing"}, caller)
    assert (_single(executor).dsh_env or {})["DSH_SESSION_ID"] == "session-a"
    assert dict(os.environ) == before


async def test_two_agents_overlapping_calls_get_their_own_snapshots(
    tools: ToolRegistry, executor: Any, caller: Any, other_caller: Any
) -> None:
    executor.gate = asyncio.Event()
    args = '{"command": "echo $DSH_SESSION_ID", "description": "Print the session"}'
    first = asyncio.create_task(tools.execute(ToolCall("c1", "bash", args), caller))
    second = asyncio.create_task(tools.execute(ToolCall("c2", "bash", args), other_caller))
    await executor.entered.get()
    await executor.entered.get()
    assert executor.running == 2
    executor.gate.set()
    await asyncio.gather(first, second)
    ids = sorted((request.dsh_env or {})["DSH_SESSION_ID"] for request in executor.requests)
    assert ids == ["session-a", "session-b"]
    assert executor.requests[0].dsh_env is not executor.requests[1].dsh_env


async def test_a_contributor_key_reaches_the_request_only_while_registered(
    call: Any, executor: Any, shell_env: ShellEnvRegistry, contributor_factory: Any, caller: Any
) -> None:
    contributor = contributor_factory(
        "plug", {"DSH_PLUG": "A plugin fact."}, lambda e: {"DSH_PLUG": f"for-{e.session_id}"}
    )
    with shell_env.register(contributor):
        await call("bash", {"command": "true", "description": "Run once"}, caller)
    await call("bash", {"command": "true", "description": "Run twice"}, caller)
    first, second = ((request.dsh_env or {}) for request in executor.requests)
    assert first["DSH_PLUG"] == "for-session-a"
    assert "DSH_PLUG" not in second


async def test_the_timeout_is_given_in_milliseconds_and_sent_in_seconds(
    call: Any, executor: Any
) -> None:
    await call("bash", {"command": "sleep 1", "description": "Sleep", "timeoutMs": 2500})
    assert _single(executor).timeout == 2.5


# -- workdir ------------------------------------------------------------------------------------


async def test_the_workdir_defaults_to_the_session_cwd(
    call: Any, executor: Any, caller: Any
) -> None:
    await call("bash", {"command": "pwd", "description": "Print cwd"}, caller)
    assert _single(executor).workdir == "/work/project-a"
    assert executor.run_specs[0].workdir == Path("/work/project-a")


async def test_a_relative_workdir_resolves_against_the_session_cwd(
    call: Any, executor: Any, caller: Any
) -> None:
    await call("bash", {"command": "pwd", "description": "Print cwd", "workdir": "sub/dir"}, caller)
    assert executor.run_specs[0].workdir == Path("/work/project-a/sub/dir")


async def test_an_absolute_workdir_is_used_as_given(call: Any, executor: Any, caller: Any) -> None:
    await call("bash", {"command": "pwd", "description": "Print cwd", "workdir": "/tmp"}, caller)
    assert executor.run_specs[0].workdir == Path("/tmp")


async def test_two_sessions_run_in_their_own_directories(
    call: Any, executor: Any, caller: Any, other_caller: Any
) -> None:
    await call("bash", {"command": "pwd", "description": "Print cwd"}, caller)
    await call("bash", {"command": "pwd", "description": "Print cwd"}, other_caller)
    assert [spec.workdir for spec in executor.run_specs] == [
        Path("/work/project-a"),
        Path("/work/project-b"),
    ]


async def test_without_agent_the_executor_default_workdir_applies(call: Any, executor: Any) -> None:
    await call("bash", {"command": "pwd", "description": "Print cwd"})
    assert _single(executor).workdir is None
    assert executor.run_specs[0].workdir == Path("/executor/default")


async def test_an_agent_without_cwd_uses_the_executor_default(
    call: Any, executor: Any, caller_factory: Any
) -> None:
    await call("bash", {"command": "pwd", "description": "Print cwd"}, caller_factory(cwd=None))
    assert executor.run_specs[0].workdir == Path("/executor/default")


# -- rendering ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"stdout": "hello\n"}, "hello\n"),
        ({}, "(no output)"),
        ({"stdout": "out\n", "stderr": "err\n"}, "out\n[stderr]\nerr\n"),
        ({"stdout": "failing", "exit_code": 3}, "failing\n[exit code: 3]"),
        (
            {"exit_code": None, "signal": "SIGTERM", "timed_out": True, "timeout": 0.1},
            "(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]",
        ),
    ],
)
async def test_results_are_rendered_with_the_shell_markers(
    call: Any, executor: Any, result_factory: Any, kwargs: dict[str, Any], text: str
) -> None:
    executor.result = result_factory(**kwargs)
    result = await call("bash", {"command": "x", "description": "Run x"})
    assert result.text == text
    assert result.is_error is False


async def test_an_aborted_run_is_an_aborted_error(
    call: Any, executor: Any, result_factory: Any
) -> None:
    executor.result = result_factory(exit_code=None, signal="SIGTERM", aborted=True)
    result = await call("bash", {"command": "sleep 9", "description": "Sleep"})
    assert result.is_error
    assert result.error is not None
    assert (result.error.code, result.text) == ("ABORTED", "Error: tool call aborted")


async def test_cancelling_the_call_is_reported_as_aborted(
    tools: ToolRegistry, executor: Any
) -> None:
    executor.gate = asyncio.Event()
    args = '{"command": "sleep 9", "description": "Sleep"}'
    task = asyncio.create_task(tools.execute(ToolCall("c1", "bash", args)))
    await executor.entered.get()
    task.cancel()
    result = await task
    assert result.error is not None
    assert result.error.code == "ABORTED"


async def test_an_infrastructure_failure_is_an_error_result(call: Any, executor: Any) -> None:
    executor.error = ShellWorkdirError(Path("/missing"), "no such directory")
    result = await call("bash", {"command": "ls", "description": "List"})
    assert result.is_error
    assert result.error is not None
    assert result.error.name == "ShellWorkdirError"
    assert "/missing" in result.text
    assert "no such directory" in result.text


async def test_a_failing_contributor_fails_the_call_before_anything_runs(
    call: Any, executor: Any, shell_env: ShellEnvRegistry, contributor_factory: Any
) -> None:
    shell_env.register(contributor_factory("bad", {"DSH_X": "X."}, lambda e: {"DSH_X": 1}))
    result = await call("bash", {"command": "ls", "description": "List"})
    assert result.is_error
    assert result.error is not None
    assert result.error.name == "NonStringEnvValueError"
    assert "'bad' returned a non-string value for DSH_X" in result.text
    assert executor.requests == []


# -- argument values ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"command": "  ", "description": "Blank"}, "invalid command: expected a non-empty string"),
        ({"command": "ls", "description": " "}, "invalid description: expected a non-empty string"),
        (
            {"command": "ls", "description": "List", "timeoutMs": 0},
            "invalid timeoutMs: expected a number of milliseconds >= 1, got 0",
        ),
        (
            {"command": "ls", "description": "List", "timeoutMs": -5},
            "invalid timeoutMs: expected a number of milliseconds >= 1, got -5",
        ),
        (
            {"command": "ls", "description": "List", "timeoutMs": -0.5},
            "invalid timeoutMs: expected a number of milliseconds >= 1, got -0.5",
        ),
    ],
)
async def test_invalid_values_are_invalid_args_and_nothing_runs(
    call: Any, executor: Any, arguments: dict[str, Any], problem: str
) -> None:
    result = await call("bash", arguments)
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    assert result.text == f"Error: Invalid arguments for tool bash: {problem}"
    assert executor.requests == []


async def test_a_missing_command_is_reported_by_the_registry(call: Any, executor: Any) -> None:
    result = await call("bash", {"description": "Nothing"})
    assert result.text == "Error: Invalid arguments for tool bash: command: field required"


async def test_run_in_background_sent_to_a_foreground_only_tool_is_refused(
    executor: Any, shell_env: ShellEnvRegistry
) -> None:
    tools = ToolRegistry()
    tools.register(BashTool(executor, shell_env, enable_background=False, jobs=JobRegistry()))
    args = '{"command": "sleep 60", "description": "Sleep", "run_in_background": true}'
    result = await tools.execute(ToolCall("c1", "bash", args))
    assert result.error is not None
    assert result.error.code == "BACKGROUND_DISABLED"
    assert "run_in_background is disabled" in result.text
    assert executor.requests == []
    assert executor.start_specs == []


# -- strict argument types ----------------------------------------------------------------------

_LS = {"command": "ls", "description": "List"}


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        (
            {"timeoutMs": 5e-324},
            "invalid timeoutMs: expected a number of milliseconds >= 1, got 5e-324",
        ),
        ({"timeoutMs": 0.5}, "invalid timeoutMs: expected a number of milliseconds >= 1, got 0.5"),
        (
            {"timeoutMs": 1e-300},
            "invalid timeoutMs: expected a number of milliseconds >= 1, got 1e-300",
        ),
    ],
)
async def test_a_timeout_below_one_millisecond_is_invalid_args_not_a_tool_error(
    call: Any, executor: Any, extra: dict[str, Any], problem: str
) -> None:
    result = await call("bash", {**_LS, **extra})
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    assert result.text == f"Error: Invalid arguments for tool bash: {problem}"
    assert executor.requests == []


@pytest.mark.parametrize(
    "arguments",
    [
        '{"command": "ls", "description": "List", "timeoutMs": Infinity}',
        '{"command": "ls", "description": "List", "timeoutMs": NaN}',
    ],
)
async def test_a_non_finite_timeout_is_invalid_args(
    call: Any, executor: Any, arguments: str
) -> None:
    result = await call("bash", arguments)
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    assert executor.requests == []


@pytest.mark.parametrize("timeout_ms", [1, 1.5, 10**12])
async def test_a_timeout_of_one_millisecond_or_more_is_accepted(
    call: Any, executor: Any, timeout_ms: float
) -> None:
    result = await call("bash", {**_LS, "timeoutMs": timeout_ms})
    assert result.error is None
    assert _single(executor).timeout == timeout_ms / 1000


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"timeoutMs": True}, "timeoutMs"),
        ({"timeoutMs": False}, "timeoutMs"),
        ({"timeoutMs": "1000"}, "timeoutMs"),
        ({"command": 5}, "command"),
        ({"description": ["List"]}, "description"),
        ({"workdir": 1}, "workdir"),
    ],
)
async def test_a_value_of_the_wrong_type_is_invalid_args_and_nothing_runs(
    call: Any, executor: Any, extra: dict[str, Any], field: str
) -> None:
    result = await call("bash", {**_LS, **extra})
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    assert f"{field}:" in result.text
    assert executor.requests == []
    assert executor.start_specs == []


@pytest.mark.parametrize("value", ["yes", "true", 1, 0, None])
async def test_run_in_background_must_be_a_bool_and_no_job_starts(
    call: Any, executor: Any, value: object
) -> None:
    result = await call("bash", {**_LS, "command": "sleep 60", "run_in_background": value})
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    assert "run_in_background:" in result.text
    assert executor.requests == []
    assert executor.start_specs == []


@pytest.mark.parametrize("value", ["yes", 1])
async def test_run_in_background_of_any_truthy_shape_is_refused_by_a_foreground_only_tool(
    executor: Any, shell_env: ShellEnvRegistry, value: object
) -> None:
    tools = ToolRegistry()
    tools.register(BashTool(executor, shell_env, enable_background=False, jobs=JobRegistry()))
    args = json.dumps({"command": "sleep 60", "description": "Sleep", "run_in_background": value})
    result = await tools.execute(ToolCall("c1", "bash", args))
    assert result.error is not None
    assert result.error.code == "BACKGROUND_DISABLED"
    assert executor.requests == []
    assert executor.start_specs == []


async def test_a_watched_foreground_call_streams_the_commands_output_to_the_watcher(
    tools: ToolRegistry, executor: Any
) -> None:
    heard: list[tuple[str, str]] = []
    arguments = json.dumps({"command": "make", "description": "Build"})
    await tools.execute(
        ToolCall("call-w", "bash", arguments),
        on_output=lambda execution, text: heard.append((execution.call_id, text)),
    )
    listener = executor.run_specs[0].on_output
    assert listener is not None
    listener("stdout", "compiling\n")
    listener("stderr", "warning: x\n")
    assert heard == [("call-w", "compiling\n"), ("call-w", "warning: x\n")]


async def test_an_unwatched_or_background_call_asks_for_no_live_output(
    tools: ToolRegistry, executor: Any
) -> None:
    await tools.execute(ToolCall("c1", "bash", '{"command": "make", "description": "Build"}'))
    background = {"command": "sleep 9", "description": "Wait", "run_in_background": True}
    await tools.execute(
        ToolCall("c2", "bash", json.dumps(background)), on_output=lambda execution, text: None
    )
    assert executor.run_specs[0].on_output is None
    assert executor.start_specs[0].on_output is None
