"""``dsh`` interactive (issue 34 §1 and §3), as a person uses it: a real terminal (tmux) running
the installed ``dsh`` against conftest's scripted loopback model server; every assertion is on
what the pane shows, or on the log and the requests the server received."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh_session import CORE_EVENT_TYPES, PLUGIN_EVENT_TYPES

if TYPE_CHECKING:  # conftest's classes, for the annotations only
    from conftest import Dsh, LoopbackModel, Terminal

GATE = "gate"
"""In a script of conftest's model server: wait for ``server.gate`` first."""
HANG = "hang"
"""In a script: say so (``server.streaming``) and stall until released."""


def _session_of(screen: str) -> str:
    (found,) = set(re.findall(r"session ([0-9a-f-]{36})", screen))
    return found


def _log(dsh: Dsh, session_id: str) -> list[dict[str, Any]]:
    (path,) = dsh.home.rglob(f"{session_id}/session.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def _only_v0_types(events: list[dict[str, Any]]) -> None:
    """Every event is of a format v0 type: the TypeScript harness refuses any other, even one
    marked ignorable."""
    types = set(_types(events[1:]))  # after the header line
    assert types <= CORE_EVENT_TYPES | PLUGIN_EVENT_TYPES, types


def _tool_call(
    server: LoopbackModel, name: str, arguments: dict[str, Any], call_id: str | None = None
) -> list[Any]:
    call = {"index": 0, "id": call_id or f"call-{name}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}  # fmt: skip
    return [
        server.chunk({"role": "assistant", "content": ""}),
        server.chunk({"tool_calls": [call]}),
        server.chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ]


def _escalating_bash(server: LoopbackModel, command: str, call_id: str) -> list[Any]:
    """A bash call asking for full access: an approval question under workspace-write."""
    arguments = {
        "command": command,
        "description": "needs the network",
        "sandbox_permissions": "danger-full-access",
        "justification": "to fetch the dependencies",
    }
    return _tool_call(server, "bash", arguments, call_id)


def _configure_confined(dsh: Dsh, server: LoopbackModel) -> None:
    """The loopback model under workspace-write, where an escalation is asked."""
    dsh.configure(server)
    config = dsh.home / "config.toml"
    config.write_text(config.read_text().replace("danger-full-access", "workspace-write"))


def test_a_streamed_markdown_answer_is_rendered_and_escapes_stay_visible(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [
        model_server.text_answer(
            "Here is **bold** text.\n\n",
            "- first item\n- second item\n\n",
            "```python\nprint('hi')\n```\n\n",
            "Danger: \x1b[31mRED\x1b[0m and \x1b]0;title\x07 done.",
        )
    ]
    screen_of = terminal()
    screen_of.wait_for("/help for commands")
    screen_of.send("show me markdown")
    screen = screen_of.wait_for("done.")
    assert "Here is bold text." in screen  # rendered: no asterisks
    assert "**bold**" not in screen
    assert "• first item" in screen
    assert "print('hi')" in screen
    assert "```" not in screen
    assert "\\x1b[31mRED\\x1b[0m" in screen  # shown, never interpreted
    assert "\\x1b]0;title\\x07" in screen
    assert "local:test-model" in screen  # the status line


def test_an_inline_approval_for_the_session_then_a_second_call_is_not_asked(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    _configure_confined(dsh, model_server)
    model_server.scripts = [
        _escalating_bash(model_server, "echo first-call", "call-1"),
        _escalating_bash(model_server, "echo second-call", "call-2"),
        model_server.text_answer("Both ran."),
    ]
    screen_of = terminal()
    screen_of.wait_for("/help for commands")
    screen_of.send("run two commands")
    screen = screen_of.wait_for("s allow for this session")
    assert "command: echo first-call" in screen
    assert "reason: escalate sandbox to danger-full-access: to fetch the dependencies" in screen
    screen_of.send("s")
    screen = screen_of.wait_for("Both ran.")
    assert screen.count("approval needed") == 1, screen
    assert "first-call" in screen
    assert "second-call" in screen
    events = _log(dsh, _session_of(screen))
    decided = [e["data"]["outcome"] for e in events if e["type"] == "approval/decided"]
    assert decided == ["allowed-once", "allowed-once"]
    (grant,) = [e["data"] for e in events if e["type"] == "command/run"]
    assert grant["name"] == "allow-for-session"
    assert grant["args"] == "bash danger-full-access"
    assert grant["source"] == {"kind": "user"}
    _only_v0_types(events)


def test_reject_with_a_message_tells_the_model(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    _configure_confined(dsh, model_server)
    model_server.scripts = [
        _escalating_bash(model_server, "curl example.com", "call-1"),
        model_server.text_answer("Understood."),
    ]
    screen_of = terminal()
    screen_of.wait_for("/help for commands")
    screen_of.send("fetch it")
    screen_of.wait_for("s allow for this session")
    screen_of.send("r use the vendored copy instead")
    screen_of.wait_for("Understood.")
    sent = json.dumps(model_server.bodies[1]["messages"])
    assert "use the vendored copy instead" in sent


def test_ctrl_c_cancels_the_turn_keeps_a_valid_log_and_exits_printing_how_to_resume(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [
        [model_server.chunk({"role": "assistant", "content": "partial answer"}), HANG],
        model_server.text_answer("After the cancel."),
    ]
    screen_of = terminal()
    screen_of.wait_for("/help for commands")
    screen_of.send("take long")
    assert model_server.streaming.wait(60)
    screen_of.wait_for("partial answer")
    screen_of.keys("C-c")
    screen_of.wait_for("(cancelled)")
    screen_of.send("again")
    screen = screen_of.wait_for("After the cancel.")
    session_id = _session_of(screen)
    events = _log(dsh, session_id)
    ends = [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"]
    assert ends == ["aborted", "completed"]
    screen_of.keys("C-d")
    screen = screen_of.wait_for("[dsh exited 0]")
    assert f"resume: dsh --resume {session_id}" in screen


def test_a_line_typed_while_a_tool_runs_steers_the_next_step(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [
        model_server.bash_call("echo tool-ran", description="print"),
        [GATE, *model_server.text_answer("Steered.")],
    ]
    screen_of = terminal()
    screen_of.wait_for("/help for commands")
    screen_of.send("go")
    screen_of.wait_for("tool-ran")
    screen_of.send("please also mention cats")
    screen_of.wait_for("(steering: please also mention cats)")
    model_server.gate.set()
    screen_of.wait_for("Steered.")
    sent = json.dumps(model_server.bodies[-1]["messages"])
    assert "please also mention cats" in sent


def test_status_model_compact_and_continue(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [
        model_server.text_answer("First answer."),
        model_server.text_answer("Second answer."),
        model_server.text_answer("SUMMARY of the talk."),
        model_server.text_answer("On the other model."),
    ]
    screen_of = terminal()
    screen_of.wait_for("/help for commands")
    screen_of.send("one")
    screen_of.wait_for("First answer.")
    screen_of.send("two")
    screen_of.wait_for("Second answer.")
    screen_of.send("/status")
    screen = screen_of.wait_for("usage     ")
    session_id = _session_of(screen)
    assert f"session   {session_id}" in screen
    assert "model     local:test-model" in screen
    assert "sandbox   danger-full-access" in screen
    screen_of.send("/compact")
    screen_of.wait_for("compacted:")
    assert "SUMMARY of the talk." in json.dumps(
        [e["data"] for e in _log(dsh, session_id) if e["type"] == "compaction/summary"]
    )
    screen_of.send("/model local:other-model")
    screen_of.wait_for("model: local:other-model")
    screen_of.send("three")
    screen_of.wait_for("On the other model.")
    assert model_server.bodies[-1]["model"] == "other-model"
    screen_of.send("/nonsense")
    screen_of.wait_for("unknown command /nonsense")
    screen_of.send("/exit")
    screen_of.wait_for("[dsh exited 0]")
    events = _log(dsh, session_id)
    names = [e["data"]["name"] for e in events if e["type"] == "command/run"]
    assert names[:3] == ["status", "compact", "model"]
    assert _types(events).count("command/done") == len(names)
    _only_v0_types(events)

    again = terminal("-c")
    screen = again.wait_for("/help for commands")
    assert f"session {session_id}" in screen


def test_an_edit_shows_its_diff_and_diff_lists_it(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    dsh.configure(model_server)
    (dsh.cwd / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    model_server.scripts = [
        _tool_call(model_server, "read", {"file_path": "notes.txt"}),  # edit needs a read first
        _tool_call(
            model_server,
            "edit",
            {"file_path": "notes.txt", "old_string": "beta", "new_string": "BETA-CHANGED"},
        ),
        model_server.text_answer("Edited."),
    ]
    screen_of = terminal()
    screen_of.wait_for("/help for commands")
    screen_of.send("edit the notes")
    screen = screen_of.wait_for("Edited.")
    assert "edit: notes.txt" in screen
    assert "-beta" in screen
    assert "+BETA-CHANGED" in screen
    assert (dsh.cwd / "notes.txt").read_text() == "alpha\nBETA-CHANGED\ngamma\n"
    screen_of.send("/diff")
    screen = screen_of.wait_for("1 file change(s) in this session")
    assert screen.count("+BETA-CHANGED") == 2, screen  # under the call, then in /diff


def test_without_a_terminal_the_session_says_to_use_run(dsh: Dsh) -> None:
    done = dsh("chat")
    assert done.returncode == 2
    assert b"needs a terminal" in done.stderr
    assert b"dsh run PROMPT" in done.stderr


def test_resume_by_prefix_and_a_prefix_that_matches_nothing(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal], tmp_path: Path
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.text_answer("Stored.")]
    first = dsh("run", "store one")
    assert first.returncode == 0, first.stderr.decode()
    session_id = _session_of(first.stderr.decode())
    screen_of = terminal("--resume", session_id[:6])
    screen = screen_of.wait_for("/help for commands")
    assert f"session {session_id}" in screen
    missing = terminal("--resume", "zzzz")
    screen = missing.wait_for("[dsh exited")
    assert "no session starts with 'zzzz'" in screen


# -- dsh run's approval prompt on a terminal ------------------------------------------------------


def test_dsh_run_ctrl_c_at_the_approval_prompt_cancels_and_leaves_nothing_reading(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    """Before: a thread stayed blocked reading standard input, so dsh ran on until someone
    pressed Enter (and swallowed the next shell command typed)."""
    _configure_confined(dsh, model_server)
    model_server.scripts = [_escalating_bash(model_server, "echo hi", "call-1")]
    screen_of = terminal("run", "do it")
    screen = screen_of.wait_for("answer: a allow once")
    assert "command: echo hi" in screen
    screen_of.keys("C-c")
    screen = screen_of.wait_for("[dsh exited 130]")
    session_id = _session_of(screen)
    events = _log(dsh, session_id)
    (end,) = [e["data"]["reason"] for e in events if e["type"] == "turn/end"]
    assert end["kind"] == "aborted"
    assert f"resume: dsh run --resume {session_id} PROMPT" in screen


def test_dsh_run_allow_for_the_session_covers_the_turns_second_request(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    _configure_confined(dsh, model_server)
    model_server.scripts = [
        _escalating_bash(model_server, "echo first-call", "call-1"),
        _escalating_bash(model_server, "echo second-call", "call-2"),
        model_server.text_answer("Both ran."),
    ]
    screen_of = terminal("run", "two commands")
    screen_of.wait_for("answer: a allow once")
    screen_of.send("s")
    screen = screen_of.wait_for("[dsh exited 0]")
    assert screen.count("approval needed") == 1, screen
    assert "Both ran." in screen
    events = _log(dsh, _session_of(screen))
    decided = [e["data"]["outcome"] for e in events if e["type"] == "approval/decided"]
    assert decided == ["allowed-once", "allowed-once"]


def test_a_failing_slash_command_says_one_line_and_the_session_goes_on(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.text_answer("Still here.")]
    screen_of = terminal()
    screen = screen_of.wait_for("/help for commands")
    session_id = _session_of(screen)
    screen_of.send("/model nosuchprovider:some-model")
    screen_of.wait_for("/model: ")
    screen_of.send("/resume zzzz")
    screen_of.wait_for("/resume: no session starts with 'zzzz'")
    screen_of.send("/permissions sideways")
    screen_of.wait_for("/permissions: 'sideways' is not a sandbox mode")
    screen_of.send("hello")
    screen = screen_of.wait_for("Still here.")
    assert "Traceback" not in screen
    assert _session_of(screen) == session_id
    done = [e["data"]["kind"] for e in _log(dsh, session_id) if e["type"] == "command/done"]
    assert done == ["error", "error", "error"]
    sources = [e["data"]["source"] for e in _log(dsh, session_id) if e["type"] == "command/run"]
    assert sources == [{"kind": "user"}] * 3


def test_a_session_grant_does_not_carry_into_a_new_session(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    _configure_confined(dsh, model_server)
    model_server.scripts = [
        _escalating_bash(model_server, "echo first-call", "call-1"),
        model_server.text_answer("One ran."),
        _escalating_bash(model_server, "echo again", "call-2"),
        model_server.text_answer("Asked again."),
    ]
    screen_of = terminal()
    screen_of.wait_for("/help for commands")
    screen_of.send("run one")
    screen_of.wait_for("s allow for this session")
    screen_of.send("s")
    screen_of.wait_for("One ran.")
    screen_of.send("/new")
    screen_of.wait_for("new session ")
    screen_of.send("run it again")
    screen = screen_of.wait_for("command: echo again")  # asked: the grant was the old session's
    assert screen.count("approval needed") == 2
    screen_of.send("a")
    screen_of.wait_for("Asked again.")


def test_model_text_that_looks_like_markup_never_breaks_the_status_line(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    """The line being streamed shows in the status line: ``]]>`` once crashed its redraw."""
    dsh.configure(model_server)
    model_server.scripts = [
        [model_server.chunk({"role": "assistant", "content": "if a[b[i]]>0 <b>&amp;"}), HANG],
        model_server.text_answer("Recovered."),
    ]
    screen_of = terminal()
    screen_of.wait_for("/help for commands")
    screen_of.send("code please")
    screen = screen_of.wait_for("if a[b[i]]>0 <b>&amp;")
    assert "Unhandled exception" not in screen
    screen_of.keys("C-c")
    screen_of.wait_for("(cancelled)")
    screen_of.send("again")
    screen = screen_of.wait_for("Recovered.")
    assert "Unhandled exception" not in screen
    assert "Traceback" not in screen


def test_ctrl_c_during_a_slash_command_cancels_it_not_the_session(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [
        model_server.text_answer("First."),
        model_server.text_answer("Second."),
        [model_server.chunk({"role": "assistant", "content": "summary"}), HANG],
        model_server.text_answer("Still working."),
    ]
    screen_of = terminal()
    screen_of.wait_for("/help for commands")
    screen_of.send("one")
    screen_of.wait_for("First.")
    screen_of.send("two")
    screen_of.wait_for("Second.")
    screen_of.send("/compact")
    assert model_server.streaming.wait(60)
    screen_of.keys("C-c")
    screen_of.wait_for("(/compact cancelled)")
    model_server.release.set()
    screen_of.send("three")
    screen = screen_of.wait_for("Still working.")
    assert "[dsh exited" not in screen


def test_a_running_commands_output_shows_live_and_gives_way_to_its_result(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal], tmp_path: Path
) -> None:
    dsh.configure(model_server)
    flag = tmp_path / "go-on"
    # The output's words are built by the shell, so the call's own line never shows them.
    command = (
        'for w in one two; do echo "live-line-$w"; done; '
        f'while [ ! -e "{flag}" ]; do sleep 0.1; done; echo "finished-$((2 * 3))"'
    )
    model_server.scripts = [
        model_server.bash_call(command, description="print, then wait for a file"),
        model_server.text_answer("All done."),
    ]
    screen_of = terminal()
    screen_of.wait_for("/help for commands")
    screen_of.send("run it")
    # The command is still running: it waits for the file only this test creates.
    screen = screen_of.wait_for("│ live-line-two")
    assert "│ live-line-one" in screen
    assert "finished-6" not in screen
    assert "running bash" in screen  # the spinner's label in the status line
    flag.touch()
    screen = screen_of.wait_for("All done.")
    assert "⎿ live-line-one" in screen  # the result, under the call
    assert "finished-6" in screen
    assert "│ live-line" not in screen  # the live lines went with the call


def test_long_reasoning_is_collapsed_and_ctrl_o_shows_it_whole(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    dsh.configure(model_server)
    thoughts = "".join(f"thought number {n}\n" for n in range(1, 13))
    model_server.scripts = [
        [
            model_server.chunk({"role": "assistant", "content": ""}),
            model_server.chunk({"reasoning_content": thoughts}),
            model_server.chunk({"content": "The answer."}),
            model_server.chunk({}, "stop"),
            b"data: [DONE]\n\n",
        ]
    ]
    screen_of = terminal()
    screen_of.wait_for("/help for commands")
    screen_of.send("think hard")
    screen = screen_of.wait_for("The answer.")
    assert "thought number 8" in screen
    assert "thought number 9" not in screen
    assert "4 more lines of reasoning (Ctrl-O shows all)" in screen
    screen_of.keys("C-o")
    screen = screen_of.wait_for("thought number 12")
    assert "reasoning:" in screen


def test_an_enabled_todo_write_shows_the_plan_under_its_call(
    dsh: Dsh, model_server: LoopbackModel, terminal: Callable[..., Terminal]
) -> None:
    dsh.configure(model_server, "[todo]\nenabled = true\n")
    todos = [
        {"content": "Read the failing test", "status": "completed"},
        {"content": "Fix the \x1b[31mparser", "status": "in_progress"},
        {"content": "Run the suite", "status": "pending"},
    ]
    model_server.scripts = [
        _tool_call(model_server, "todo_write", {"todos": todos}),
        model_server.text_answer("Planned."),
    ]
    screen_of = terminal()
    screen_of.wait_for("/help for commands")
    screen_of.send("plan the fix")
    screen = screen_of.wait_for("Planned.")
    assert "todo_write: 3 tasks" in screen
    assert "✔ Read the failing test" in screen
    assert "▶ Fix the \\x1b[31mparser" in screen  # shown, never interpreted
    assert "□ Run the suite" in screen
    assert "Task list updated: 3 tasks" in screen
    events = _log(dsh, _session_of(screen))
    _only_v0_types(events)
    assert "todo/write" in _types(events)
