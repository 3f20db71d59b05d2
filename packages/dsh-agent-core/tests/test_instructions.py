"""Project instructions: ``AGENTS.md`` from the DSH home and the project root down to the cwd,
in the session prefix (seed 004), never in the durable history."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dsh_agent_core import (
    INSTRUCTIONS_PLUGIN,
    Config,
    ConfigError,
    ProjectInstructions,
    compose,
    instruction_files,
    load_config,
    load_instructions,
)
from dsh_agent_core._instructions import MAX_INSTRUCTIONS_BYTES, find_git_root
from dsh_agent_core.cli import cli
from dsh_agent_loop import request_from_log
from dsh_llm import ModelRequest, UserMessage
from dsh_llm.testing import ScriptedModel, text_response
from dsh_session import SessionEvent


def configured(home: Path, text: str = "") -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home)})


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def project(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A DSH home, a git repository ``repo`` and a cwd ``repo/a/b/c`` with files at each level:
    the home's, the root's, ``a``'s, ``b``'s only a ``CLAUDE.md``, ``c`` both (``AGENTS.md``
    wins)."""
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    cwd = repo / "a" / "b" / "c"
    cwd.mkdir(parents=True)
    (repo / ".git").mkdir()
    write(home / "AGENTS.md", "home rules\n")
    write(repo / "AGENTS.md", "root rules\n")
    write(repo / "a" / "AGENTS.md", "a rules\n")
    write(repo / "a" / "b" / "CLAUDE.md", "b claude rules\n")
    write(cwd / "AGENTS.md", "c rules\n")
    write(cwd / "CLAUDE.md", "c claude rules: never read\n")
    return home, repo, cwd


def instructions_of(request: ModelRequest) -> str | None:
    """The text of the request's instructions message, if it has one."""
    found = [
        m
        for m in request.messages
        if isinstance(m, UserMessage) and getattr(m.source, "plugin", None) == INSTRUCTIONS_PLUGIN
    ]
    assert len(found) <= 1
    return found[0].content[0].text if found else None  # type: ignore[union-attr]


def headers(events: Any) -> list[dict[str, Any]]:
    return [e.to_wire()["data"] for e in events if e.type == "request/header"]


def no_git_above(path: Path) -> None:
    if find_git_root(path) is not None:
        pytest.skip(f"{path} is inside a git repository")


def test_the_order_is_home_then_root_down_to_cwd_one_file_a_level(tmp_path: Path) -> None:
    home, repo, cwd = project(tmp_path)
    assert instruction_files(home, cwd) == [
        home / "AGENTS.md",
        repo / "AGENTS.md",
        repo / "a" / "AGENTS.md",
        repo / "a" / "b" / "CLAUDE.md",
        cwd / "AGENTS.md",
    ]
    loaded = load_instructions(instruction_files(home, cwd))
    assert [f.text for f in loaded.files] == [
        "home rules\n",
        "root rules\n",
        "a rules\n",
        "b claude rules\n",
        "c rules\n",
    ]
    assert loaded.omitted == ()


def test_claude_md_is_the_fallback_of_its_own_level_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    cwd = repo / "sub"
    cwd.mkdir(parents=True)
    (repo / ".git").write_text("gitdir: elsewhere\n")  # a worktree's .git is a file
    write(repo / "CLAUDE.md", "root claude\n")
    (cwd / "AGENTS.md").mkdir()  # a directory of that name is not a file
    write(cwd / "CLAUDE.md", "sub claude\n")
    target = write(tmp_path / "elsewhere" / "shared.md", "shared home rules\n")
    home.mkdir()
    (home / "AGENTS.md").symlink_to(target)  # a symlinked file is the user's: read it
    assert instruction_files(home, cwd) == [
        home / "AGENTS.md",
        repo / "CLAUDE.md",
        cwd / "CLAUDE.md",
    ]
    texts = [f.text for f in load_instructions(instruction_files(home, cwd)).files]
    assert texts == ["shared home rules\n", "root claude\n", "sub claude\n"]


def test_without_a_git_root_only_the_cwd_level_and_the_home(tmp_path: Path) -> None:
    no_git_above(tmp_path)
    home = tmp_path / "home"
    write(home / "AGENTS.md", "home\n")
    write(tmp_path / "plain" / "AGENTS.md", "parent: not read\n")
    cwd = tmp_path / "plain" / "sub"
    write(cwd / "AGENTS.md", "sub\n")
    assert instruction_files(home, cwd) == [home / "AGENTS.md", cwd / "AGENTS.md"]
    assert instruction_files(home, None) == [home / "AGENTS.md"]
    # the home as the cwd: its file is given once
    assert instruction_files(home, home) == [home / "AGENTS.md"]


def test_the_total_is_capped_at_64_kib_and_says_where_it_was_cut(tmp_path: Path) -> None:
    first = write(tmp_path / "one.md", "a" * 40_000)
    second = write(tmp_path / "two.md", "b" * 40_000)
    third = write(tmp_path / "three.md", "c\n")
    loaded = load_instructions([first, second, third])
    assert [f.path for f in loaded.files] == [first, second]
    assert loaded.files[0].cut_at is None
    assert loaded.files[1].cut_at == MAX_INSTRUCTIONS_BYTES - 40_000
    assert len(loaded.files[1].text) == MAX_INSTRUCTIONS_BYTES - 40_000
    assert loaded.omitted == (third,)
    message = ProjectInstructions(tmp_path).message(loaded)
    assert message is not None
    text = message.content[0].text  # type: ignore[union-attr]
    assert f"[cut here, at byte {MAX_INSTRUCTIONS_BYTES - 40_000} of {second}" in text
    assert f"[not read, over the {MAX_INSTRUCTIONS_BYTES}-byte cap: {third}]" in text
    assert text.index(str(first)) < text.index(str(second)) < text.index("cut here")
    # one file over the cap is cut at 64 KiB (on a character boundary)
    huge = write(tmp_path / "huge.md", "é" * 100_000)  # two bytes each
    alone = load_instructions([huge])
    assert alone.files[0].cut_at == MAX_INSTRUCTIONS_BYTES
    assert alone.files[0].text == "é" * (MAX_INSTRUCTIONS_BYTES // 2)
    exact = write(tmp_path / "exact.md", "x" * MAX_INSTRUCTIONS_BYTES)
    assert load_instructions([exact]).files[0].cut_at is None


def test_a_file_is_never_read_past_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = write(tmp_path / "big.md", "z" * (4 * MAX_INSTRUCTIONS_BYTES))
    asked: list[int] = []
    real_read = os.read

    def spying_read(fd: int, size: int) -> bytes:
        asked.append(size)
        return real_read(fd, size)

    monkeypatch.setattr(os, "read", spying_read)
    loaded = load_instructions([big])
    assert loaded.files[0].cut_at == MAX_INSTRUCTIONS_BYTES
    assert sum(asked) == MAX_INSTRUCTIONS_BYTES


def test_unreadable_and_non_utf8_files_are_skipped_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    good = write(tmp_path / "good.md", "good\n")
    latin = tmp_path / "latin.md"
    latin.write_bytes("caf\xe9\n".encode("latin-1"))
    locked = write(tmp_path / "locked.md", "locked\n")
    real_open = os.open

    def refusing_open(path: Any, *args: Any, **kwargs: Any) -> int:
        if Path(path) == locked:  # running as root, a mode of 000 would not refuse
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    with caplog.at_level(logging.WARNING, logger="dsh_agent_core"):
        loaded = load_instructions([latin, locked, good])
    assert [f.path for f in loaded.files] == [good]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(str(latin) in w and "UTF-8" in w for w in warnings)
    assert any(str(locked) in w and "cannot be read" in w for w in warnings)


async def test_the_prefix_reaches_the_model_and_the_header_never_the_history(
    tmp_path: Path,
) -> None:
    home, repo, cwd = project(tmp_path)
    model = ScriptedModel([text_response("ok")])
    async with compose(configured(home), models={"scripted": model}) as harness:
        agent = await harness.create("hi", model="scripted:m", cwd=cwd)
        await agent.wait_idle()
        request = model.requests[0]
        first = request.messages[0]
        assert isinstance(first, UserMessage)
        assert first.source.to_wire() == {
            "kind": "plugin",
            "plugin": INSTRUCTIONS_PLUGIN,
            "form": "snapshot",
        }
        text = instructions_of(request)
        assert text is not None
        order = [
            str(home / "AGENTS.md"),
            "home rules",
            str(repo / "AGENTS.md"),
            "root rules",
            str(repo / "a" / "AGENTS.md"),
            "a rules",
            str(repo / "a" / "b" / "CLAUDE.md"),
            "b claude rules",
            str(cwd / "AGENTS.md"),
            "c rules",
        ]
        places = [text.index(part) for part in order]
        assert places == sorted(places)
        assert "never read" not in text
        (header,) = headers(agent.session.events)
        assert header["reason"] == "initial"
        assert header["header"]["messagePrefix"] == [first.to_wire()]
        derived = agent.session.derive_messages()
        assert all(getattr(m.source, "plugin", None) != INSTRUCTIONS_PLUGIN for m in derived)
        rebuilt = request_from_log(agent.session)  # the log alone rebuilds it (+ the answer)
        assert rebuilt.messages[: len(request.messages)] == request.messages
        assert len(rebuilt.messages) == len(request.messages) + 1


async def test_a_resume_recomposes_and_its_header_carries_the_change(tmp_path: Path) -> None:
    home, repo, cwd = project(tmp_path)
    model = ScriptedModel([text_response("one"), text_response("two")])
    async with compose(configured(home), models={"scripted": model}) as harness:
        agent = await harness.create("first", model="scripted:m", cwd=cwd)
        await agent.wait_idle()
        session_id = agent.id
    write(repo / "AGENTS.md", "root rules, revised\n")
    async with compose(configured(home), models={"scripted": model}) as harness:
        resumed = await harness.resume(session_id)
        resumed.followup("second")
        await resumed.wait_idle()
        events: list[SessionEvent] = list(resumed.session.events)
    logged = headers(events)
    assert [h["reason"] for h in logged] == ["initial", "resume"]
    before = json.dumps(logged[0]["header"]["messagePrefix"])
    after = json.dumps(logged[1]["header"]["messagePrefix"])
    assert "root rules\\n" in before
    assert "revised" not in before
    assert "root rules, revised" in after
    resent = model.requests[1].messages[0]  # the resumed instance sends what it logged
    assert logged[1]["header"]["messagePrefix"] == [resent.to_wire()]
    assert "root rules, revised" in (instructions_of(model.requests[1]) or "")


async def test_disabled_means_no_message_and_no_prefix(tmp_path: Path) -> None:
    home, _, cwd = project(tmp_path)
    model = ScriptedModel([text_response("ok")])
    config = configured(home, "[instructions]\nenabled = false\n")
    async with compose(config, models={"scripted": model}) as harness:
        assert harness.instructions is None
        agent = await harness.create("hi", model="scripted:m", cwd=cwd)
        await agent.wait_idle()
        assert instructions_of(model.requests[0]) is None
        (header,) = headers(agent.session.events)
        assert "messagePrefix" not in header["header"]


async def test_no_files_means_no_message(tmp_path: Path) -> None:
    no_git_above(tmp_path)
    model = ScriptedModel([text_response("ok")])
    async with compose(configured(tmp_path / "home"), models={"scripted": model}) as harness:
        agent = await harness.create("hi", model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        assert instructions_of(model.requests[0]) is None


def test_the_instructions_table_is_validated(tmp_path: Path) -> None:
    assert configured(tmp_path).instructions.enabled is True
    with pytest.raises(ConfigError, match=r"instructions\.max_bytes"):
        configured(tmp_path, "[instructions]\nmax_bytes = 10\n")
    with pytest.raises(ConfigError, match=r"instructions\.enabled"):
        configured(tmp_path, '[instructions]\nenabled = "perhaps"\n')


def test_config_dump_lists_the_files_for_this_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, _, cwd = project(tmp_path)
    configured(home)
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("DSH_CONFIG", raising=False)
    monkeypatch.delenv("DSH_PROFILE", raising=False)
    runner = CliRunner()
    as_json = runner.invoke(cli, ["--home", str(home), "config", "--dump", "--json"])
    assert as_json.exit_code == 0, as_json.output
    expected = [str(p) for p in instruction_files(home, cwd)]
    assert len(expected) == 5
    assert json.loads(as_json.output)["instructions"] == {"enabled": True, "files": expected}
    as_toml = runner.invoke(cli, ["--home", str(home), "config", "--dump"])
    assert as_toml.exit_code == 0, as_toml.output
    assert f"[instructions]\nenabled = true\n# files = {json.dumps(expected)}" in as_toml.output
    (home / "config.toml").write_text("[instructions]\nenabled = false\n")
    disabled = runner.invoke(cli, ["--home", str(home), "config", "--json"])
    assert json.loads(disabled.output)["instructions"] == {"enabled": False, "files": []}
