"""The zstd encoding: one checksummed frame per batch; torn final frame vs. damaged frame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import zstandard

from dsh_persistence import SessionPersistenceCorruptionError
from dsh_persistence_jsonl import JsonlPersistence
from dsh_session import encode_event, encode_header_line


async def _written(root: Path, mk: Any, batches: int = 2) -> tuple[JsonlPersistence, Path]:
    store = JsonlPersistence(root, compression="zstd")
    async with await store.create(mk.header()) as handle:
        for turn in range(batches):
            await handle.append(mk.one_turn(6 * turn, turn=turn + 1))
    return store, store.log_path(mk.header())


def _frames(data: bytes) -> list[bytes]:
    frames = []
    while data:
        assert zstandard.get_frame_parameters(data).has_checksum
        dobj = zstandard.ZstdDecompressor().decompressobj()
        dobj.decompress(data)
        used = len(data) - len(dobj.unused_data)
        frames.append(data[:used])
        data = data[used:]
    return frames


async def test_one_header_frame_then_one_frame_per_append(tmp_path: Path, mk: Any) -> None:
    store, path = await _written(tmp_path, mk, batches=3)
    frames = _frames(path.read_bytes())
    assert len(frames) == 4
    header = zstandard.ZstdDecompressor().decompress(frames[0])
    assert header.startswith(b'{"type":"session"')
    assert header.count(b"\n") == 1
    await store.aclose()


@pytest.mark.parametrize("cut", [1, 3, 6, 9])
async def test_a_torn_final_frame_is_discarded_whole(tmp_path: Path, mk: Any, cut: int) -> None:
    store, path = await _written(tmp_path, mk)
    data = path.read_bytes()
    path.write_bytes(data[:-cut])
    async with await store.open("s-1", "read") as reader:
        assert len(await reader.read()) == 6
    async with await store.open("s-1", "write") as writer:
        await writer.append(mk.one_turn(6, turn=2))
    async with await JsonlPersistence(tmp_path, compression="zstd").open("s-1", "read") as r:
        assert [e.seq for e in await r.read()] == list(range(12))
    await store.aclose()


@pytest.mark.parametrize("keep", [2, 4, 5, 7, 12])
async def test_a_final_frame_cut_inside_its_header_is_torn(
    tmp_path: Path, mk: Any, keep: int
) -> None:
    store, path = await _written(tmp_path, mk)
    frames = _frames(path.read_bytes())
    path.write_bytes(b"".join(frames[:-1]) + frames[-1][:keep])
    async with await store.open("s-1", "read") as reader:
        assert len(await reader.read()) == 6
    assert (await store.stat("s-1")) is not None
    await store.aclose()


async def test_a_checksum_failure_in_the_final_frame_is_a_torn_tail(
    tmp_path: Path, mk: Any
) -> None:
    store, path = await _written(tmp_path, mk)
    data = bytearray(path.read_bytes())
    data[-2] ^= 0xFF  # inside the final frame's checksum: the structure stays complete
    path.write_bytes(bytes(data))
    async with await store.open("s-1", "read") as reader:
        assert [e.seq for e in await reader.read()] == list(range(6))
    async with await store.open("s-1", "write") as writer:
        await writer.append(mk.one_turn(6, turn=2))
    async with await JsonlPersistence(tmp_path, compression="zstd").open("s-1", "read") as r:
        assert [e.seq for e in await r.read()] == list(range(12))
    await store.aclose()


async def test_a_checksum_failure_with_a_frame_after_it_is_corruption(
    tmp_path: Path, mk: Any
) -> None:
    store, path = await _written(tmp_path, mk, batches=3)
    frames = _frames(path.read_bytes())
    spoiled = bytearray(frames[2])
    spoiled[-2] ^= 0xFF  # the second body frame's checksum; the third frame is intact
    path.write_bytes(b"".join([*frames[:2], bytes(spoiled), frames[3]]))
    before = path.read_bytes()
    with pytest.raises(SessionPersistenceCorruptionError, match=r"checksum|decompress") as info:
        await store.open("s-1", "read")
    offset = len(frames[0]) + len(frames[1])
    assert f"zstd frame at byte {offset}" in str(info.value)
    assert info.value.artifact == str(path)
    assert info.value.line == 1 + 6 + 1  # where the spoiled frame's lines would start
    with pytest.raises(SessionPersistenceCorruptionError):
        await store.open("s-1", "write")
    assert path.read_bytes() == before  # never truncated
    await store.aclose()


async def test_garbage_without_a_magic_number_at_the_end_is_a_torn_tail(
    tmp_path: Path, mk: Any
) -> None:
    store, path = await _written(tmp_path, mk)
    path.write_bytes(path.read_bytes() + b"\x00" * 600)  # zeros a crash can leave
    async with await store.open("s-1", "read") as reader:
        assert len(await reader.read()) == 12
    await store.aclose()


async def test_a_bad_magic_number_with_a_frame_after_it_is_corruption(
    tmp_path: Path, mk: Any
) -> None:
    store, path = await _written(tmp_path, mk)
    frames = _frames(path.read_bytes())
    path.write_bytes(b"".join(frames[:2]) + b"\x00\x01\x02\x03\x04\x05" + frames[2])
    with pytest.raises(SessionPersistenceCorruptionError, match="magic"):
        await store.open("s-1", "read")
    await store.aclose()


async def test_a_final_frame_of_the_magic_number_alone_is_a_torn_tail(
    tmp_path: Path, mk: Any
) -> None:
    store, path = await _written(tmp_path, mk)
    clean = path.read_bytes()
    path.write_bytes(clean + b"\x28\xb5\x2f\xfd")
    async with await store.open("s-1", "read") as reader:
        assert len(await reader.read()) == 12
    assert (await store.stat("s-1")) is not None
    async with await store.open("s-1", "write") as writer:
        await writer.append(mk.one_turn(12, turn=3))
    assert path.read_bytes().startswith(clean)
    assert len(path.read_bytes()) > len(clean) + 4
    async with await JsonlPersistence(tmp_path, compression="zstd").open("s-1", "read") as r:
        assert [e.seq for e in await r.read()] == list(range(18))
    await store.aclose()


async def test_a_complete_frame_ending_mid_line_is_corruption(tmp_path: Path, mk: Any) -> None:
    store, path = await _written(tmp_path, mk, batches=1)
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    path.write_bytes(path.read_bytes() + compressor.compress(b'{"type":"turn/start"'))
    with pytest.raises(SessionPersistenceCorruptionError, match="middle of a line"):
        await store.open("s-1", "read")
    await store.aclose()


async def test_a_first_frame_that_is_not_one_header_line_is_corruption(
    tmp_path: Path, mk: Any
) -> None:
    store, path = await _written(tmp_path, mk, batches=1)
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    plain = b"".join(
        zstandard.ZstdDecompressor().decompressobj().decompress(f)
        for f in _frames(path.read_bytes())
    )
    path.write_bytes(compressor.compress(plain))  # header and events in one frame
    with pytest.raises(SessionPersistenceCorruptionError, match="header line") as info:
        await store.open("s-1", "read")
    assert info.value.line == 1
    await store.aclose()


async def test_stat_decompresses_only_the_header_frame(tmp_path: Path, mk: Any) -> None:
    store, path = await _written(tmp_path, mk)
    data = bytearray(path.read_bytes())
    data[-2] ^= 0xFF  # damage the body: stat never looks at it
    path.write_bytes(bytes(data))
    snap = await store.stat("s-1")
    assert snap is not None
    assert snap.header.id == "s-1"
    await store.aclose()


async def test_stat_and_list_ignore_garbage_after_the_header_frame(tmp_path: Path, mk: Any) -> None:
    store, path = await _written(tmp_path, mk)
    frames = _frames(path.read_bytes())
    path.write_bytes(b"".join(frames[:2]) + b"garbage that is no zstd frame" + frames[2])
    snap = await store.stat("s-1")
    assert snap is not None
    assert [s.header.id for s in await store.list()] == ["s-1"]
    with pytest.raises(SessionPersistenceCorruptionError, match="magic"):
        await store.open("s-1", "read")
    await store.aclose()


async def test_zstd_log_is_smaller_than_plain_for_repetitive_turns(tmp_path: Path, mk: Any) -> None:
    plain = JsonlPersistence(tmp_path / "plain")
    packed = JsonlPersistence(tmp_path / "zstd", compression="zstd")
    for store in (plain, packed):
        async with await store.create(mk.header()) as handle:
            await handle.append([e for t in range(20) for e in mk.one_turn(6 * t, turn=t + 1)])
    assert packed.log_path(mk.header()).stat().st_size < plain.log_path(mk.header()).stat().st_size


def _log_of_frames(mk: Any, frames: list[list[bytes]]) -> bytes:
    """A zstd log: the header frame, then one frame per list of lines."""
    compress = zstandard.ZstdCompressor(write_checksum=True).compress
    out = [compress(encode_header_line(mk.header()) + b"\n")]
    out += [compress(b"".join(line + b"\n" for line in lines)) for lines in frames]
    return b"".join(out)


def _put(root: Path, mk: Any, data: bytes) -> tuple[JsonlPersistence, Path]:
    store = JsonlPersistence(root, compression="zstd")
    path = store.log_path(mk.header())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return store, path


async def test_a_bad_line_before_a_turn_end_in_the_same_frame_is_corruption(
    tmp_path: Path, mk: Any
) -> None:
    first = [encode_event(e) for e in mk.one_turn()]
    second = [encode_event(e) for e in mk.one_turn(6, turn=2)]
    second[2] = b"{broken"
    store, path = _put(tmp_path, mk, _log_of_frames(mk, [first, second]))
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        await store.open("s-1", "read")
    assert info.value.artifact == str(path)
    assert info.value.line == 1 + 6 + 3  # header, the first frame's six lines, then the third
    assert f"zstd frame at byte {len(_log_of_frames(mk, [first]))}" in str(info.value)
    await store.aclose()


async def test_a_final_checksummed_frame_with_a_bad_line_is_corruption(
    tmp_path: Path, mk: Any
) -> None:
    first = [encode_event(e) for e in mk.one_turn()]
    second = [encode_event(e) for e in mk.one_turn(6, turn=2)][:4]
    second[2] = b"{broken"  # no turn/end after it, but a checksum that matches is no torn write
    store, path = _put(tmp_path, mk, _log_of_frames(mk, [first, second]))
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        await store.open("s-1", "read")
    assert info.value.line == 1 + 6 + 3
    assert f"zstd frame at byte {len(_log_of_frames(mk, [first]))}" in str(info.value)
    assert info.value.artifact == str(path)
    await store.aclose()


async def test_a_committed_turn_end_then_a_bad_line_in_one_frame_is_corruption(
    tmp_path: Path, mk: Any
) -> None:
    first = [encode_event(e) for e in mk.one_turn()]
    second = [*(encode_event(e) for e in mk.one_turn(6, turn=2)), b"{broken"]
    store, path = _put(tmp_path, mk, _log_of_frames(mk, [first, second]))
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        await store.open("s-1", "write")
    assert info.value.line == 1 + 12 + 1
    assert path.read_bytes() == _log_of_frames(mk, [first, second])
    await store.aclose()


async def test_many_frames_read_back_in_order(tmp_path: Path, mk: Any) -> None:
    store, _path = await _written(tmp_path, mk, batches=300)
    async with await JsonlPersistence(tmp_path, compression="zstd").open("s-1", "read") as r:
        assert [e.seq for e in await r.read()] == list(range(1800))
    await store.aclose()


def test_a_thread_decodes_good_frames_after_a_bad_one() -> None:
    from dsh_persistence_jsonl._zstdframes import FrameError, decompress_frame

    good = zstandard.ZstdCompressor(write_checksum=True).compress(b"line\n" * 50)
    bad = bytearray(good)
    bad[-1] ^= 0xFF  # the checksum no longer matches
    for _ in range(3):  # the thread's one decompressor is reused across failures
        with pytest.raises(FrameError):
            decompress_frame(bytes(bad), 0)
        with pytest.raises(FrameError):
            decompress_frame(good[: len(good) // 2], 0)
        assert decompress_frame(good, 0) == b"line\n" * 50
