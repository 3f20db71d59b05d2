"""A session directory the TypeScript harness upgraded to a newer log generation
(``session.vN.jsonl[.zstd]`` beside the old ``session.jsonl``, issue 35 §3): this build reads
and writes v0 only, so such a session is refused naming both files, never read through the stale
v0 file nor appended to (which split the history, silently, before)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence import SessionFormatUnsupportedError
from dsh_persistence_jsonl import JsonlPersistence
from dsh_session import SessionHeader, make_event


async def _stored(store: JsonlPersistence, session_id: str, root: Path) -> Path:
    header = SessionHeader(id=session_id, created_at=1, cwd=str(root))
    async with await store.create(header) as handle:
        await handle.append([make_event("turn/start", 0, 1, {"turn": 1})])
    return store.log_path(header)


@pytest.mark.parametrize("newer", ["session.v4.jsonl", "session.v2.jsonl.zstd"])
@pytest.mark.parametrize("access", ["read", "write"])
async def test_a_session_upgraded_beside_its_v0_log_is_refused_naming_both(
    root: Path, newer: str, access: Any
) -> None:
    store = JsonlPersistence(root)
    log = await _stored(store, "s-upgraded", root)
    before = log.read_bytes()
    (log.parent / newer).write_bytes(b'{"type":"session","version":4}\n')
    with pytest.raises(SessionFormatUnsupportedError) as raised:
        await store.open("s-upgraded", access)
    message = str(raised.value)
    assert newer in message
    assert "session.jsonl" in message
    assert "split the session" in message
    assert raised.value.artifact == str(log.parent / newer)
    with pytest.raises(SessionFormatUnsupportedError):
        await store.stat("s-upgraded")
    assert log.read_bytes() == before  # the v0 file is untouched


async def test_only_a_newer_generation_is_refused_not_missing(root: Path) -> None:
    store = JsonlPersistence(root)
    log = await _stored(store, "s-only-newer", root)
    (log.parent / "session.v3.jsonl").write_bytes(log.read_bytes())
    log.unlink()
    with pytest.raises(SessionFormatUnsupportedError, match=r"session\.v3\.jsonl"):
        await store.open("s-only-newer", "read")


async def test_list_leaves_out_a_session_with_only_a_newer_generation_and_says_why(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A directory holding both is listed from its v0 file (looking in every directory would
    cost ``list()`` its bar; see the module): opening it is what refuses."""
    store = JsonlPersistence(root)
    await _stored(store, "s-plain", root)
    both = await _stored(store, "s-both", root)
    (both.parent / "session.v4.jsonl").write_bytes(b"{}\n")
    only = await _stored(store, "s-only-newer", root)
    (only.parent / "session.v4.jsonl").write_bytes(b"{}\n")
    (only.parent / "session.v2.jsonl").write_bytes(b"{}\n")
    only.unlink()
    with caplog.at_level(logging.WARNING):
        listed = await JsonlPersistence(root).list()
    assert sorted(s.id for s in listed) == ["s-both", "s-plain"]
    (warning,) = [
        r.getMessage() for r in caplog.records if "newer log generation" in r.getMessage()
    ]
    assert "session.v2.jsonl, session.v4.jsonl" in warning  # oldest generation first
    with pytest.raises(SessionFormatUnsupportedError):
        await store.open("s-both", "read")


async def test_files_that_only_look_like_generations_change_nothing(root: Path) -> None:
    store = JsonlPersistence(root)
    log = await _stored(store, "s-odd-names", root)
    for name in ("session.v0.jsonl", "session.vx.jsonl", "session.v4.json", "notes.v4.jsonl"):
        (log.parent / name).write_bytes(b"{}\n")
    async with await store.open("s-odd-names", "write") as handle:
        assert len(await handle.read()) == 1
