"""Symbolic links and odd files below a JSONL root (issue 24 §1.3): refused with a typed error
naming the path, never followed, read or created through; ``list()`` skips the bad entry (with a
warning naming it) and lists the others. Operations that used to hang run in a child process
with a timeout, so a regression fails instead of hanging the suite."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence import SessionPersistenceCorruptionError
from dsh_persistence_jsonl import JsonlPersistence

_PROBE = r"""
import asyncio, json, sys
from dsh_persistence_jsonl import JsonlPersistence

async def main(root, compression, session_id):
    out = {}
    async def attempt(name, call):
        try:
            result = await call()
        except Exception as error:
            out[name] = [type(error).__name__, getattr(error, "artifact", None), str(error)]
        else:
            out[name] = ["ok", result, None]
    store = JsonlPersistence(root, compression=compression)
    await attempt("stat", lambda: store.stat(session_id))
    async def opened(access):
        handle = await store.open(session_id, access)
        await handle.close()
    await attempt("read", lambda: opened("read"))
    await attempt("write", lambda: opened("write"))
    async def listed():
        return sorted(s.header.id for s in await store.list())
    await attempt("list", listed)
    await store.aclose()
    print(json.dumps(out, default=str))

asyncio.run(main(*sys.argv[1:]))
"""


def probe(root: Path, compression: str, session_id: str = "s-1") -> dict[str, Any]:
    """stat, open(read), open(write) and list() in a child process that must end in 60 s."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(root), compression, session_id],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


async def two_sessions(variant: Any, root: Path, mk: Any) -> tuple[Path, Path]:
    """Sessions ``s-1`` and ``ok`` (same project), closed; their log paths."""
    store = variant.make(root)
    for sid in ("s-1", "ok"):
        async with await store.create(mk.header(sid)) as handle:
            await handle.append(mk.one_turn())
    await store.aclose()
    return store.log_path(mk.header("s-1")), store.log_path(mk.header("ok"))


def refused(outcome: dict[str, Any], path: Path) -> None:
    """stat and both opens raise the corruption error naming ``path``; list() has ``ok`` only."""
    for name in ("stat", "read", "write"):
        kind, artifact, message = outcome[name]
        assert kind == "SessionPersistenceCorruptionError", (name, outcome[name])
        assert artifact == str(path), (name, outcome[name])
        assert "not a regular file" in message or "not a directory" in message, message
    assert outcome["list"][:2] == ["ok", ["ok"]]


async def test_a_log_linking_outside_the_root_is_refused_and_not_appended_to(
    variant: Any, root: Path, mk: Any, tmp_path: Path
) -> None:
    log, _ok = await two_sessions(variant, root, mk)
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(log.read_bytes())
    log.unlink()
    log.symlink_to(outside)
    before = outside.read_bytes()
    refused(probe(root, variant.compression), log)
    assert outside.read_bytes() == before


async def test_a_project_directory_linking_outside_gets_no_log_or_lock(
    variant: Any, root: Path, mk: Any, tmp_path: Path
) -> None:
    log, _ok = await two_sessions(variant, root, mk)
    project = log.parent.parent
    outside = tmp_path / "elsewhere"
    project.rename(outside)
    project.symlink_to(outside)
    outcome = probe(root, variant.compression)
    for name in ("stat", "read", "write"):  # found through the link, then refused
        assert outcome[name][:2] == ["SessionPersistenceCorruptionError", str(project)]
    assert outcome["list"][:2] == ["ok", []]
    before = sorted(p.name for p in outside.rglob("*"))
    store = variant.make(root)
    async with await store.create(mk.header("new")) as handle:
        with pytest.raises(SessionPersistenceCorruptionError) as info:
            await handle.append(mk.one_turn())
        assert info.value.artifact == str(project)
    await store.aclose()
    assert sorted(p.name for p in outside.rglob("*")) == before  # nothing created out there


async def test_a_session_directory_link_is_refused(
    variant: Any, root: Path, mk: Any, tmp_path: Path
) -> None:
    log, _ok = await two_sessions(variant, root, mk)
    outside = tmp_path / "session-elsewhere"
    log.parent.rename(outside)
    log.parent.symlink_to(outside)
    outcome = probe(root, variant.compression)
    for name in ("stat", "read", "write"):
        assert outcome[name][:2] == ["SessionPersistenceCorruptionError", str(log.parent)]
    assert outcome["list"][:2] == ["ok", ["ok"]]


async def test_a_dangling_lock_link_does_not_get_its_target_created(
    variant: Any, root: Path, mk: Any, tmp_path: Path
) -> None:
    log, _ok = await two_sessions(variant, root, mk)
    lock = log.parent / "session.lock"
    target = tmp_path / "created-through-the-link"
    lock.unlink()
    lock.symlink_to(target)
    outcome = probe(root, variant.compression)
    kind, artifact, message = outcome["write"]
    assert (kind, artifact) == ("SessionPersistenceCorruptionError", str(lock))
    assert "symbolic link" in message
    assert outcome["read"][0] == "ok"  # reads take no lock
    assert not target.exists()


async def test_a_log_linking_to_dev_zero_is_refused_without_reading_it(
    variant: Any, root: Path, mk: Any
) -> None:
    log, _ok = await two_sessions(variant, root, mk)
    log.unlink()
    log.symlink_to("/dev/zero")
    refused(probe(root, variant.compression), log)


async def test_a_fifo_at_a_log_path_hangs_nothing(variant: Any, root: Path, mk: Any) -> None:
    log, _ok = await two_sessions(variant, root, mk)
    log.unlink()
    os.mkfifo(log)
    refused(probe(root, variant.compression), log)


async def test_a_fifo_at_the_lock_path_hangs_nothing(variant: Any, root: Path, mk: Any) -> None:
    log, _ok = await two_sessions(variant, root, mk)
    lock = log.parent / "session.lock"
    lock.unlink()
    os.mkfifo(lock)
    outcome = probe(root, variant.compression)
    assert outcome["write"][:2] == ["SessionPersistenceCorruptionError", str(lock)]
    assert "a FIFO" in outcome["write"][2]


async def test_a_directory_at_a_log_path_is_a_typed_error(
    variant: Any, root: Path, mk: Any, caplog: pytest.LogCaptureFixture
) -> None:
    log, _ok = await two_sessions(variant, root, mk)
    log.unlink()
    log.mkdir()
    store = variant.make(root)
    for call in (lambda: store.stat("s-1"), lambda: store.open("s-1", "read")):
        with pytest.raises(SessionPersistenceCorruptionError, match="a directory") as info:
            await call()
        assert info.value.artifact == str(log)
    with pytest.raises(SessionPersistenceCorruptionError, match="a directory"):
        await store.open("s-1", "write")
    with caplog.at_level(logging.WARNING, logger="dsh_persistence_jsonl"):
        assert [s.header.id for s in await store.list()] == ["ok"]
    assert any(str(log) in record.getMessage() for record in caplog.records)
    await store.aclose()


async def test_a_fresh_root_still_creates_its_directories(tmp_path: Path, mk: Any) -> None:
    root = tmp_path / "a" / "b" / "sessions"
    store = JsonlPersistence(root)
    async with await store.create(mk.header()) as handle:
        await handle.append(mk.one_turn())
    assert (await store.stat("s-1")) is not None
    await store.aclose()


async def test_a_linked_root_is_the_callers_choice(tmp_path: Path, mk: Any) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    store = JsonlPersistence(tmp_path / "link")
    async with await store.create(mk.header()) as handle:
        await handle.append(mk.one_turn())
    assert [s.header.id for s in await JsonlPersistence(tmp_path / "link").list()] == ["s-1"]
    await store.aclose()
