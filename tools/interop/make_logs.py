"""Write session logs with dsh-py for the TypeScript harness to read (``nox -s interop``).

Usage: ``python tools/interop/make_logs.py OUT_DIR``. Each scenario runs the real harness
(``dsh_agent_core.compose`` with a scripted model, or the ``dsh`` command) into a JSONL root
under ``OUT_DIR/roots/<name>``; ``OUT_DIR/manifest.json`` lists every session with its root,
compression and the messages dsh-py derives from it (role and content), which
``check_logs.ts`` compares with what the TypeScript harness derives. ``readback.py`` later
reads what the harness appended.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from dsh_agent_core import compose, load_config
from dsh_llm import (
    BlockStartChunk,
    FailureCode,
    FinishChunk,
    FinishReason,
    LlmFailure,
    StreamChunk,
    TextDeltaChunk,
)
from dsh_llm.testing import Hang, ScriptedModel, text_response, tool_call_response
from dsh_persistence import export_session
from dsh_persistence_jsonl import JsonlPersistence
from dsh_session import Session, decode_header_line, decode_row

MODEL = "scripted:m"
Scenario = Callable[[Path, Path], Coroutine[Any, Any, list[str]]]


def _home(out: Path, name: str, persistence: str = "") -> Path:
    home = out / "homes" / name
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(persistence)
    return home


def _harness(home: Path, model: ScriptedModel) -> Any:
    config = load_config(env={"DSH_HOME": str(home)})
    return compose(config, models={"scripted": model})


def _bash(call_id: str, command: str) -> tuple[str, str, dict[str, Any]]:
    return (call_id, "bash", {"command": command, "description": command})


async def _one(home: Path, cwd: Path, script: list[Any], prompt: str) -> str:
    harness = _harness(home, ScriptedModel(script))
    try:
        agent = await harness.create(prompt, model=MODEL, cwd=cwd)
        await agent.wait_idle()
        return str(agent.id)
    finally:
        await harness.aclose()


async def run_and_resume(home: Path, cwd: Path) -> list[str]:
    sid = await _one(home, cwd, [text_response("hello back")], "hello")
    harness = _harness(home, ScriptedModel([text_response("again, hello")]))
    try:
        agent = await harness.resume(sid, model=MODEL)
        agent.followup("and again")
        await agent.wait_idle()
    finally:
        await harness.aclose()
    return [sid]


async def parallel_tools(home: Path, cwd: Path) -> list[str]:
    script = [
        tool_call_response(_bash("c1", "echo one"), _bash("c2", "echo two; exit 3")),
        text_response("both ran"),
    ]
    return [await _one(home, cwd, script, "run two commands")]


async def retries_and_max_tokens(home: Path, cwd: Path) -> list[str]:
    failure = LlmFailure(message="SERVER (interop)", code=FailureCode.SERVER, retry_after_ms=1)
    cut = [*text_response("cut off")[:-1], FinishChunk(reason=FinishReason(kind="max-tokens"))]
    script = [[FinishChunk(reason=FinishReason(kind="error", error=failure))], cut]
    return [await _one(home, cwd, script, "say something long")]


async def cancelled_stream(home: Path, cwd: Path) -> list[str]:
    partial: list[StreamChunk] = [
        BlockStartChunk(index=0, block_type="text"),
        TextDeltaChunk(index=0, text="Hal"),
    ]
    harness = _harness(home, ScriptedModel([Hang(before=partial), text_response("done")]))
    try:
        agent = await harness.create(None, model=MODEL, cwd=cwd)
        seen = asyncio.Event()
        agent.session.subscribe(lambda e: seen.set() if e.type == "assistant/chunk" else None)
        agent.followup("go")
        await seen.wait()
        agent.cancel()
        await agent.wait_idle()
        agent.followup("go on")
        await agent.wait_idle()
        return [str(agent.id)]
    finally:
        await harness.aclose()


async def fork_and_compact(home: Path, cwd: Path) -> list[str]:
    script = [text_response("first answer"), text_response("second answer")]
    script += [text_response("a summary"), text_response("forked")]
    harness = _harness(home, ScriptedModel(script))
    try:
        agent = await harness.create("first", model=MODEL, cwd=cwd)
        await agent.wait_idle()
        agent.followup("second")
        await agent.wait_idle()
        sid = str(agent.id)
        await harness.compact(sid)
        child = await harness.fork(sid, prompt="a forked question")
        await child.wait_idle()
        return [sid, str(child.id)]
    finally:
        await harness.aclose()


async def prefix_with_agents_md_and_skill(home: Path, cwd: Path) -> list[str]:
    (cwd / "AGENTS.md").write_text("Always answer in one line.\n")
    skill = home / "skills" / "greet"
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text("---\nname: greet\ndescription: Greets.\n---\nSay hi.\n")
    return [await _one(home, cwd, [text_response("one line")], "hi")]


async def crash_then_resume(home: Path, cwd: Path) -> list[str]:
    """A log cut after a ``tool/call`` (what kill -9 mid-tool leaves), resumed by dsh-py."""
    script = [tool_call_response(_bash("c1", "echo slow")), text_response("ok")]
    sid = await _one(home, cwd, script, "run it")
    (path,) = (home / "sessions-plain").rglob("session.jsonl")
    lines = path.read_bytes().split(b"\n")
    cut = next(i for i, line in enumerate(lines) if b'"type":"tool/call"' in line)
    path.write_bytes(b"\n".join(lines[: cut + 1]) + b"\n")
    harness = _harness(home, ScriptedModel([text_response("resumed")]))
    try:
        agent = await harness.resume(sid, model=MODEL)
        agent.followup("go on")
        await agent.wait_idle()
    finally:
        await harness.aclose()
    return [sid]


async def sqlite_export(home: Path, cwd: Path) -> list[str]:
    """A session run on SQLite, exported, and the export placed in the plain root as is."""
    sqlite_home = home.parent / (home.name + "-sqlite")
    sqlite_home.mkdir(parents=True, exist_ok=True)
    (sqlite_home / "config.toml").write_text('[persistence]\nbackend = "sqlite"\n')
    script = [tool_call_response(_bash("c1", "echo from sqlite")), text_response("done")]
    harness = _harness(sqlite_home, ScriptedModel(script))
    try:
        agent = await harness.create("on sqlite", model=MODEL, cwd=cwd)
        await agent.wait_idle()
        sid = str(agent.id)
        exported = sqlite_home / "export.jsonl"
        await export_session(harness.persistence, sid, exported)
    finally:
        await harness.aclose()
    lines = exported.read_bytes().rstrip(b"\n").split(b"\n")
    header, inherited = decode_header_line(lines[0])
    events = [e for line in lines[1:] for e in decode_row(line)]
    jsonl = JsonlPersistence(home / "sessions-plain")
    handle = await jsonl.create(header, inherited_event_count=inherited)
    await handle.append(events)
    await handle.close()
    snapshot = await jsonl.stat(sid)
    await jsonl.aclose()
    if snapshot is None or snapshot.plain_path is None:
        raise RuntimeError(f"the plain root does not hold {sid}")
    if Path(snapshot.plain_path).read_bytes() != exported.read_bytes():  # noqa: ASYNC240
        raise RuntimeError("the JSONL copy differs from the SQLite export")
    return [sid]


async def approvals(home: Path, cwd: Path) -> list[str]:
    """Two escalating bash calls under workspace-write: the first allowed once, the second
    rejected (``approval/requested`` + ``approval/decided``, as the terminal logs them)."""

    def escalate(call_id: str, command: str) -> tuple[str, str, dict[str, Any]]:
        arguments = {
            "command": command,
            "description": command,
            "sandbox_permissions": "danger-full-access",
            "justification": "interop",
        }
        return (call_id, "bash", arguments)

    script = [
        tool_call_response(escalate("c1", "echo allowed")),
        tool_call_response(escalate("c2", "echo rejected")),
        text_response("one ran"),
    ]
    answers = iter(["allowed-once", "rejected"])
    harness = _harness(home, ScriptedModel(script))
    try:
        harness.extensions.approval.add(lambda request: next(answers))
        agent = await harness.create("run them", model=MODEL, cwd=cwd)
        await agent.wait_idle()
        decided = [e.data["outcome"] for e in agent.session.events if e.type == "approval/decided"]
        if decided != ["allowed-once", "rejected"]:
            raise RuntimeError(f"the approvals were not logged as asked: {decided}")
        return [str(agent.id)]
    finally:
        await harness.aclose()


async def hooks(home: Path, cwd: Path) -> list[str]:
    """A PreToolUse hook that blocks a bash call (its runs logged as ``hook/*``)."""
    script = [tool_call_response(_bash("c1", "echo blocked")), text_response("it was blocked")]
    sid = await _one(home, cwd, script, "try a command")
    (path,) = (home / "sessions-plain").rglob("session.jsonl")
    if b'"type":"hook/result"' not in path.read_bytes():
        raise RuntimeError("the PreToolUse hook did not run")
    return [sid]


async def session_create_child(home: Path, cwd: Path) -> list[str]:
    """A ``session_create`` child (a delegated session, ``parentSession`` and depth 1)."""
    script = [
        tool_call_response(("c1", "session_create", {"prompt": "say child"})),
        text_response("child answer"),
        text_response("the child answered"),
    ]
    harness = _harness(home, ScriptedModel(script))
    try:
        agent = await harness.create("delegate it", model=MODEL, cwd=cwd)
        await agent.wait_idle()
        children = [
            snapshot.id
            for snapshot in await harness.sessions()
            if snapshot.header.parent_session == agent.id
        ]
        if len(children) != 1:
            raise RuntimeError(f"expected one child session, found {children}")
        return [str(agent.id), children[0]]
    finally:
        await harness.aclose()


HOOK_CONFIG = """[hooks]
dialect = "claude-code"

[[hooks.PreToolUse]]
matcher = "Bash"
hooks = [{ type = "command", command = "echo 'interop: blocked' >&2; exit 2" }]
"""


def _dsh(home: Path, *args: str) -> None:
    env = {**os.environ, "DSH_HOME": str(home)}
    dsh = Path(sys.executable).with_name("dsh")
    subprocess.run([str(dsh), *args], env=env, check=True, capture_output=True)


def _demo(home: Path) -> str:
    env = {**os.environ, "DSH_HOME": str(home)}
    dsh = Path(sys.executable).with_name("dsh")
    done = subprocess.run([str(dsh), "demo", "--json"], env=env, check=True, capture_output=True)
    return str(json.loads(done.stdout)["session_id"])


SCENARIOS: dict[str, tuple[str, Scenario]] = {
    "run-resume": ("", run_and_resume),
    "parallel-tools": ("", parallel_tools),
    "retry-max-tokens": ("", retries_and_max_tokens),
    "cancelled-stream": ("", cancelled_stream),
    "fork-compaction": ("", fork_and_compact),
    "prefix-agents-skill": ("", prefix_with_agents_md_and_skill),
    "crash-resume": ("", crash_then_resume),
    "sqlite-export": ("", sqlite_export),
    "approvals": ('[sandbox]\nmode = "workspace-write"\napproval = "ask"\n', approvals),
    "hooks": (HOOK_CONFIG, hooks),
    "session-create-child": ("", session_create_child),
}


def _derived(root: Path, compression: str, sid: str) -> list[dict[str, Any]]:
    async def read() -> list[dict[str, Any]]:
        persistence = JsonlPersistence(root, compression=compression)  # type: ignore[arg-type]
        try:
            async with await persistence.open(sid, "read") as handle:
                events = list(await handle.read(0))
                session = Session(
                    handle.header, events, inherited_event_count=handle.inherited_event_count
                )
        finally:
            await persistence.aclose()
        return [
            {"role": wire.get("role", "user"), "content": wire["content"]}
            for wire in (m.to_wire() for m in session.derive_messages())
        ]

    return asyncio.run(read())


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    cwd = out / "work"
    cwd.mkdir(exist_ok=True)
    entries: list[dict[str, Any]] = []

    def add(name: str, root: Path, compression: str, ids: list[str]) -> None:
        for sid in ids:
            entries.append(
                {
                    "name": name,
                    "root": str(root),
                    "compression": compression,
                    "id": sid,
                    "derived": _derived(root, compression, sid),
                }
            )

    plain = _home(out, "demo-plain")
    add("demo-plain", plain / "sessions-plain", "none", [_demo(plain)])
    packed = _home(out, "demo-packed", "[persistence]\npack_chunks = true\n")
    add("demo-packed", packed / "sessions-plain", "none", [_demo(packed)])
    zstd = _home(out, "demo-zstd", '[persistence]\ncompression = "zstd"\n')
    zstd_id = _demo(zstd)
    add("demo-zstd", zstd / "sessions", "zstd", [zstd_id])
    _dsh(zstd, "sessions", "migrate", "--to", str(out / "homes" / "migrated"))
    add("migrate", out / "homes" / "migrated", "none", [zstd_id])
    for name, (persistence, scenario) in SCENARIOS.items():
        home = _home(out, name, persistence)
        try:
            ids: list[str] = asyncio.run(scenario(home, cwd))
        except Exception as error:  # one broken scenario must not hide the others
            print(f"scenario {name} failed in dsh-py: {type(error).__name__}: {error}")
            entries.append({"name": name, "error": f"{type(error).__name__}: {error}"})
            continue
        add(name, home / "sessions-plain", "none", ids)
    (out / "manifest.json").write_text(json.dumps(entries, indent=1))
    print(f"wrote {sum('id' in e for e in entries)} logs ({out / 'manifest.json'})")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
