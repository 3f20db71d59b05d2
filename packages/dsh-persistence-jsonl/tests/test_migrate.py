"""migrate_root: a zstd root into a new plain root, verified, never overwriting, source kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import zstandard

from dsh_persistence_jsonl import (
    JsonlPersistence,
    MigrationRootError,
    MigrationStep,
    RootEncodingError,
    migrate_root,
)
from dsh_session import encode_event


async def _zstd_root(root: Path, mk: Any, ids: list[str], *, pack: bool = True) -> None:
    store = JsonlPersistence(root, compression="zstd", pack_chunks=pack)
    for sid in ids:
        async with await store.create(mk.header(sid)) as handle:
            await handle.append([*mk.one_turn(), *mk.text_chunks(6, 5)])
            await handle.append(mk.one_turn(11, turn=2))
    await store.aclose()


def _frame_starts(data: bytes) -> list[int]:
    """Where each zstd frame of ``data`` starts."""
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        dobj = zstandard.ZstdDecompressor().decompressobj()
        dobj.decompress(data[pos:])
        pos = len(data) - len(dobj.unused_data)
    return starts


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


async def test_every_session_is_migrated_to_a_readable_plain_root(tmp_path: Path, mk: Any) -> None:
    await _zstd_root(tmp_path / "src", mk, ["a", "b"])
    report = await migrate_root(tmp_path / "src", tmp_path / "dst")
    assert sorted(s.session_id for s in report.migrated) == ["a", "b"]
    assert report.ok
    assert not report.skipped
    plain = JsonlPersistence(tmp_path / "dst")
    source = JsonlPersistence(tmp_path / "src", compression="zstd")
    for sid in ("a", "b"):
        snap = await plain.stat(sid)
        assert snap is not None
        assert snap.plain_path is not None
        assert snap.event_count == 17
        async with await plain.open(sid, "read") as got, await source.open(sid, "read") as want:
            assert [encode_event(e) for e in await got.read()] == [
                encode_event(e) for e in await want.read()
            ]


async def test_packed_rows_come_out_expanded_one_event_per_line(tmp_path: Path, mk: Any) -> None:
    await _zstd_root(tmp_path / "src", mk, ["a"])
    await migrate_root(tmp_path / "src", tmp_path / "dst")
    snap = await JsonlPersistence(tmp_path / "dst").stat("a")
    assert snap is not None
    assert snap.plain_path is not None
    assert len(mk.lines_of(Path(snap.plain_path))) == 1 + 17


async def test_the_source_is_kept_byte_for_byte(tmp_path: Path, mk: Any) -> None:
    await _zstd_root(tmp_path / "src", mk, ["a"])
    before = _tree(tmp_path / "src")
    await migrate_root(tmp_path / "src", tmp_path / "dst")
    assert _tree(tmp_path / "src") == before


async def test_an_existing_destination_session_is_skipped_not_overwritten(
    tmp_path: Path, mk: Any
) -> None:
    await _zstd_root(tmp_path / "src", mk, ["a", "b"])
    dest = JsonlPersistence(tmp_path / "dst")
    async with await dest.create(mk.header("a")) as handle:
        await handle.flush()
    before = _tree(tmp_path / "dst")
    report = await migrate_root(tmp_path / "src", tmp_path / "dst")
    assert [s.session_id for s in report.skipped] == ["a"]
    assert [s.session_id for s in report.migrated] == ["b"]
    after = _tree(tmp_path / "dst")
    assert {k: v for k, v in after.items() if k in before} == before


async def test_a_session_open_for_writing_fails_with_that_reason(tmp_path: Path, mk: Any) -> None:
    await _zstd_root(tmp_path / "src", mk, ["a"])
    source = JsonlPersistence(tmp_path / "src", compression="zstd")
    async with await source.open("a", "write"):
        report = await migrate_root(tmp_path / "src", tmp_path / "dst")
    (failed,) = report.failed
    assert failed.reason is not None
    assert "open for writing" in failed.reason
    assert not report.ok
    assert await JsonlPersistence(tmp_path / "dst").list() == []


async def test_a_session_upgraded_to_a_newer_generation_is_not_copied(
    tmp_path: Path, mk: Any
) -> None:
    """Its v0 log is the stale file the harness superseded: a copy would split the session."""
    await _zstd_root(tmp_path / "src", mk, ["a", "b"])
    path = JsonlPersistence(tmp_path / "src", compression="zstd").log_path(mk.header("a"))
    (path.parent / "session.v2.jsonl.zstd").write_bytes(b"not read")
    report = await migrate_root(tmp_path / "src", tmp_path / "dst")
    (failed,) = report.failed
    assert failed.reason is not None
    assert "session.v2.jsonl.zstd" in failed.reason
    assert [s.session_id for s in report.migrated] == ["b"]
    assert [s.id for s in await JsonlPersistence(tmp_path / "dst").list()] == ["b"]


async def test_a_damaged_source_fails_naming_the_file(tmp_path: Path, mk: Any) -> None:
    await _zstd_root(tmp_path / "src", mk, ["a", "b"])
    path = JsonlPersistence(tmp_path / "src", compression="zstd").log_path(mk.header("a"))
    data = bytearray(path.read_bytes())
    frames = _frame_starts(bytes(data))
    data[frames[2] - 2] ^= 0xFF  # the first body frame's checksum; the second frame follows
    path.write_bytes(bytes(data))
    report = await migrate_root(tmp_path / "src", tmp_path / "dst")
    (failed,) = report.failed
    assert failed.reason is not None
    assert str(path) in failed.reason
    assert [s.session_id for s in report.migrated] == ["b"]


async def test_progress_is_called_once_per_session(tmp_path: Path, mk: Any) -> None:
    await _zstd_root(tmp_path / "src", mk, ["a", "b", "c"])
    seen: list[MigrationStep] = []
    await migrate_root(tmp_path / "src", tmp_path / "dst", progress=seen.append)
    assert [(s.done, s.total, s.outcome) for s in seen] == [
        (1, 3, "migrated"),
        (2, 3, "migrated"),
        (3, 3, "migrated"),
    ]


async def test_a_plain_source_root_is_refused(tmp_path: Path, mk: Any) -> None:
    store = JsonlPersistence(tmp_path / "src")
    async with await store.create(mk.header("a")) as handle:
        await handle.flush()
    with pytest.raises(RootEncodingError):
        await migrate_root(tmp_path / "src", tmp_path / "dst")


async def test_a_torn_tail_is_left_behind(tmp_path: Path, mk: Any) -> None:
    await _zstd_root(tmp_path / "src", mk, ["a"])
    path = JsonlPersistence(tmp_path / "src", compression="zstd").log_path(mk.header("a"))
    whole = zstandard.ZstdCompressor(write_checksum=True).compress(b'{"type":"turn/start"}\n')
    path.write_bytes(path.read_bytes() + whole[: len(whole) // 2])
    report = await migrate_root(tmp_path / "src", tmp_path / "dst")
    assert [s.session_id for s in report.migrated] == ["a"]
    snap = await JsonlPersistence(tmp_path / "dst").stat("a")
    assert snap is not None
    assert snap.event_count == 17


async def test_a_failing_session_is_reported_and_the_rest_migrate(tmp_path: Path, mk: Any) -> None:
    await _zstd_root(tmp_path / "src", mk, ["a", "b", "c"])
    path = JsonlPersistence(tmp_path / "src", compression="zstd").log_path(mk.header("b"))
    path.write_bytes(b"\x28\xb5\x2f\xfd\x00")  # no header frame: b cannot even be named
    seen: list[MigrationStep] = []
    report = await migrate_root(tmp_path / "src", tmp_path / "dst", progress=seen.append)
    assert [s.session_id for s in report.migrated] == ["a", "c"]
    (failed,) = report.failed
    assert (failed.source, failed.stage, failed.outcome) == (str(path), "read", "failed")
    assert failed.reason is not None
    assert str(path) in failed.reason
    assert [s.outcome for s in seen] == ["migrated", "failed", "migrated"]


async def test_a_session_failing_after_its_header_is_named(
    tmp_path: Path, mk: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _zstd_root(tmp_path / "src", mk, ["a", "b"])
    import dsh_persistence_jsonl._migrate as migrate_module

    real = migrate_module._publish

    def publish(root: Path, target: Path, content: bytes) -> None:
        if "/b/" in str(target):
            raise OSError(28, "No space left on device")
        real(root, target, content)

    monkeypatch.setattr(migrate_module, "_publish", publish)
    report = await migrate_root(tmp_path / "src", tmp_path / "dst")
    (failed,) = report.failed
    assert (failed.session_id, failed.stage) == ("b", "write")
    assert failed.reason is not None
    assert "session 'b'" in failed.reason
    assert "No space left" in failed.reason
    assert [s.session_id for s in report.migrated] == ["a"]


async def test_an_integer_without_an_exact_double_migrates_as_the_harness_reads_it(
    tmp_path: Path, mk: Any
) -> None:
    store = JsonlPersistence(tmp_path / "src", compression="zstd")
    async with await store.create(mk.header("a")) as handle:
        await handle.append(mk.one_turn())
    await store.aclose()
    path = store.log_path(mk.header("a"))
    odd = b'{"type":"x/custom","seq":6,"time":1,"ignorable":true,'
    odd += b'"data":{"n":11111111111111111111111111}}\n'
    path.write_bytes(
        path.read_bytes() + zstandard.ZstdCompressor(write_checksum=True).compress(odd)
    )
    await _zstd_root(tmp_path / "src", mk, ["b"])
    report = await migrate_root(tmp_path / "src", tmp_path / "dst")
    assert [s.session_id for s in report.migrated] == ["a", "b"], report.failed
    plain = JsonlPersistence(tmp_path / "dst").log_path(mk.header("a"))
    assert b'"n":1.111111111111111e+25' in plain.read_bytes()


async def test_a_missing_source_root_is_refused_naming_both_paths(tmp_path: Path) -> None:
    with pytest.raises(MigrationRootError, match="does not exist") as info:
        await migrate_root(tmp_path / "nowhere", tmp_path / "dst")
    assert (info.value.source, info.value.dest) == (
        str(tmp_path / "nowhere"),
        str(tmp_path / "dst"),
    )
    assert not (tmp_path / "dst").exists()


@pytest.mark.parametrize("inside", ["src", "src/plain", "src/--p--/deeper"])
async def test_a_destination_inside_the_source_is_refused(
    tmp_path: Path, mk: Any, inside: str
) -> None:
    await _zstd_root(tmp_path / "src", mk, ["a"])
    before = _tree(tmp_path / "src")
    with pytest.raises(MigrationRootError, match="inside the source") as info:
        await migrate_root(tmp_path / "src", tmp_path / inside)
    assert str(tmp_path / "src") in str(info.value)
    assert str(tmp_path / inside) in str(info.value)
    assert _tree(tmp_path / "src") == before


async def test_linked_sessions_in_the_source_fail_by_name_and_nothing_is_created_through_them(
    tmp_path: Path, mk: Any
) -> None:
    await _zstd_root(tmp_path / "src", mk, ["a", "b", "c"])
    source = JsonlPersistence(tmp_path / "src", compression="zstd")
    b_dir = source.log_path(mk.header("b")).parent
    outside = tmp_path / "outside-b"
    b_dir.rename(outside)
    b_dir.symlink_to(outside)
    (outside / "session.lock").unlink()
    c_log = source.log_path(mk.header("c"))
    c_log.rename(tmp_path / "outside-c.zstd")
    c_log.symlink_to(tmp_path / "outside-c.zstd")
    report = await migrate_root(tmp_path / "src", tmp_path / "dst")
    assert [s.session_id for s in report.migrated] == ["a"]
    failed = {step.source: step for step in report.failed}
    assert set(failed) == {str(b_dir / "session.jsonl.zstd"), str(c_log)}
    assert "symbolic link" in (failed[str(b_dir / "session.jsonl.zstd")].reason or "")
    assert "symbolic link" in (failed[str(c_log)].reason or "")
    assert not (outside / "session.lock").exists()
