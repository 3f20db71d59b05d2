"""The seam's contract suite (dsh_persistence.testing) over the none, zstd, zstd+pack variants."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import zstandard

from dsh_persistence.testing import PersistenceContract, PersistenceFixture
from dsh_session import decode_row

CHILD_FACTORY = f"{Path(__file__).parent / 'child_factory.py'}:make"


def _spoil_line(lines: list[bytes], seq: int, record: bytes | None = None) -> bool:
    """Make the line holding event ``seq`` invalid JSON of the same length (or ``record``);
    False if absent."""
    for index, line in enumerate(lines):
        if index == 0 or not line:
            continue  # the header, or the b"" after the last newline
        if any(event.seq == seq for event in decode_row(line)):
            lines[index] = b"#" + line[1:] if record is None else record
            return True
    return False


def _frames(data: bytes) -> list[bytes]:
    frames = []
    while data:
        dobj = zstandard.ZstdDecompressor().decompressobj()
        dobj.decompress(data)
        used = len(data) - len(dobj.unused_data)
        frames.append(data[:used])
        data = data[used:]
    return frames


def damage_log(path: Path, compression: str, seq: int, record: bytes | None = None) -> None:
    """Spoil the stored record of event ``seq`` in place, the others intact: plain, one byte of
    its line (no longer JSON) or the whole line replaced by ``record``; zstd, the same in its
    frame, recompressed with a checksum that matches (a checksummed frame holding a bad line
    cannot be a torn write)."""
    data = path.read_bytes()
    if compression == "none":
        lines = data.split(b"\n")
        assert _spoil_line(lines, seq, record), f"damage_event: no event {seq} in {path}"
        path.write_bytes(b"\n".join(lines))
        return
    frames = _frames(data)
    for index, frame in enumerate(frames):
        lines = zstandard.ZstdDecompressor().decompressobj().decompress(frame).split(b"\n")
        if index and _spoil_line(lines, seq, record):
            compressor = zstandard.ZstdCompressor(write_checksum=True, write_content_size=True)
            frames[index] = compressor.compress(b"\n".join(lines))
            path.write_bytes(b"".join(frames))
            return
    raise AssertionError(f"damage_event: no event {seq} in {path}")


class TestJsonlPersistenceContract(PersistenceContract):
    """Every clause, once per selected variant (the ``variant`` fixture of conftest.py)."""

    @pytest.fixture
    def persistence_fixture(self, tmp_path: Path, variant: Any) -> PersistenceFixture:
        root = tmp_path / "sessions"

        async def corrupt_tail(session_id: str) -> None:
            store = variant.make(root)
            snapshot = await store.stat(session_id)
            assert snapshot is not None, f"corrupt_tail: no session {session_id!r}"
            path = store.log_path(snapshot.header)
            if variant.compression == "none":
                torn = b'{"type":"turn/start","seq":99,"ti'
            else:
                whole = zstandard.ZstdCompressor(write_checksum=True).compress(
                    b'{"type":"turn/start","seq":99,"time":1,"data":{"turn":9}}\n'
                )
                torn = whole[: len(whole) // 2]
            with path.open("ab") as f:
                f.write(torn)
            await store.aclose()

        async def damage_event(session_id: str, seq: int) -> None:
            store = variant.make(root)
            snapshot = await store.stat(session_id)
            assert snapshot is not None, f"damage_event: no session {session_id!r}"
            damage_log(store.log_path(snapshot.header), variant.compression, seq)
            await store.aclose()

        async def replace_record(session_id: str, seq: int, record: bytes) -> None:
            store = variant.make(root)
            snapshot = await store.stat(session_id)
            assert snapshot is not None, f"replace_record: no session {session_id!r}"
            damage_log(store.log_path(snapshot.header), variant.compression, seq, record)
            await store.aclose()

        capabilities = {
            "reopen",
            "cross_process",
            "corrupt_tail",
            "damage_event",
            "replace_record",
        }
        if variant.compression == "none":
            capabilities.add("plain_path")
        return PersistenceFixture(
            factory=lambda: variant.make(root),
            capabilities=frozenset(capabilities),
            corrupt_tail=corrupt_tail,
            damage_event=damage_event,
            replace_record=replace_record,
            child_factory=CHILD_FACTORY,
            child_args={"root": str(root), **variant.child_args},
        )
