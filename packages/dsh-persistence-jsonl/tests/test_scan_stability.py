"""White-box tests of the plain log loader: the result does not depend on the block size, and a
log that changes while it is read is read again instead of being reported as damaged."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import dsh_persistence_jsonl._store as store_module
from dsh_persistence_jsonl._scan import LogDamage, PlainScanner
from dsh_session import encode_event, make_event

HEADER = b'{"type":"session","version":0,"id":"s-1","createdAt":1000}'


def event_line(kind: str, seq: int) -> bytes:
    data: dict[str, Any] = {"turn": 1}
    if kind == "turn/end":
        data["reason"] = {"kind": "completed"}
    elif kind != "turn/start":
        data["step"] = 1
    return encode_event(make_event(kind, seq, 5000 + seq, data))


def no_header(_line: bytes) -> tuple[Any, int]:
    return None, 0


def outcome(data: bytes, block: int) -> tuple[Any, ...]:
    """Everything a load of ``data`` decides, read ``block`` bytes at a time."""
    saved = store_module._BLOCK
    store_module._BLOCK = block
    try:
        _h, _cut, header_line, header_end, body, size = store_module.load_plain(
            io.BytesIO(data), no_header
        )
    except LogDamage as damage:
        return ("damage", damage.line, damage.reason)
    finally:
        store_module._BLOCK = saved
    return (
        header_line,
        header_end,
        [encode_event(e) for e in body.events],
        body.committed_end,
        body.lines,
        body.discarded_tail,
        size,
    )


# a body line: the next event, one out of sequence, a turn/end, or damage of several shapes
LINE_KINDS = st.sampled_from(["next", "next", "next", "end", "gap", "garbage", "empty", "cr"])


@given(
    kinds=st.lists(LINE_KINDS, max_size=25),
    torn=st.sampled_from([b"", b'{"type":"tu', b"x" * 40]),
    blocks=st.lists(st.integers(1, 300), min_size=1, max_size=3),
)
def test_a_load_decides_the_same_whatever_the_block_size(
    kinds: list[str], torn: bytes, blocks: list[int]
) -> None:
    lines = [HEADER]
    seq = 0
    for kind in kinds:
        if kind in ("next", "end"):
            lines.append(event_line("turn/end" if kind == "end" else "step/start", seq))
            seq += 1
        elif kind == "gap":
            lines.append(event_line("step/end", seq + 5))
        elif kind == "garbage":
            lines.append(b'{"type":"step/start","seq":')
        elif kind == "empty":
            lines.append(b"")
        else:
            lines.append(event_line("step/start", seq) + b"\r")
    data = b"".join(line + b"\n" for line in lines) + torn
    whole = outcome(data, len(data) + 1)
    for block in blocks:
        assert outcome(data, block) == whole


def test_damage_found_in_one_block_and_its_turn_end_in_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = [event_line("turn/start", 0), b"{broken", event_line("turn/end", 1)]
    data = b"".join(line + b"\n" for line in [HEADER, *body])
    ends_after_the_bad_line = len(HEADER) + 1 + len(body[0]) + 1 + len(body[1]) + 1
    monkeypatch.setattr(store_module, "_BLOCK", ends_after_the_bad_line)
    with pytest.raises(LogDamage) as info:
        store_module.load_plain(io.BytesIO(data), no_header)
    assert info.value.line == 3
    assert "followed by the intact line 4" in info.value.reason


def write_log(path: Path, lines: list[bytes], tail: bytes = b"") -> int:
    """Write a log; return the offset where ``tail`` starts."""
    data = b"".join(line + b"\n" for line in lines)
    path.write_bytes(data + tail)
    return len(data)


def truncate_and_append(path: Path, at: int, lines: list[bytes]) -> None:
    """What a writer's first append does to a discardable tail: cut it, write the batch."""
    with path.open("r+b") as f:
        f.truncate(at)
        f.seek(at)
        f.write(b"".join(line + b"\n" for line in lines))


class Reads:
    """A header decoder for ``load_log`` that counts the reads (it runs once per read, after the
    first block) and calls ``during(read_number)``: what another process does meanwhile."""

    def __init__(self, during: Callable[[int], object] = lambda _read: None) -> None:
        self.count = 0
        self.during = during

    def __call__(self, _line: bytes) -> tuple[Any, int]:
        self.count += 1
        self.during(self.count)
        return None, 0


def append_lines(path: Path, *lines: bytes) -> None:
    with path.open("ab") as f:
        f.write(b"".join(line + b"\n" for line in lines))


def test_damage_in_bytes_changing_under_the_read_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "session.jsonl"
    committed = [HEADER, event_line("turn/start", 0), event_line("turn/end", 1)]
    cut = write_log(path, committed, tail=b"garbage-" + b"g" * 200 + b"\n")
    monkeypatch.setattr(store_module, "_BLOCK", cut + 10)  # the first block: the garbage's start
    new_turn = [event_line("turn/start", 2), event_line("turn/end", 3)]

    def writer(read: int) -> None:
        if read == 1:  # after the first block was read: a writer replaces the tail
            truncate_and_append(path, cut, new_turn)

    reads = Reads(writer)

    loaded = store_module.load_log(path, "none", reads)
    assert reads.count == 2  # the first read saw damage in changing bytes and read again
    assert [e.seq for e in loaded.body.events] == [0, 1, 2, 3]
    assert loaded.body.committed_end == loaded.size == path.stat().st_size
    assert not loaded.body.discarded_tail


def test_damage_in_a_file_that_does_not_change_is_reported_at_once(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    write_log(path, [HEADER, event_line("turn/start", 0), b"{broken", event_line("turn/end", 1)])
    reads = Reads()
    with pytest.raises(LogDamage) as info:
        store_module.load_log(path, "none", reads)
    assert (reads.count, info.value.line) == (1, 3)


def test_a_clean_read_of_a_log_growing_meanwhile_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    write_log(path, [HEADER, event_line("turn/start", 0), event_line("turn/end", 1)])
    # another process appends a turn during the read
    reads = Reads(
        lambda _read: append_lines(path, event_line("turn/start", 2), event_line("turn/end", 3))
    )
    loaded = store_module.load_log(path, "none", reads)
    assert reads.count == 1  # one read: a clean prefix of an append-only log stays true
    assert [e.seq for e in loaded.body.events] == list(range(loaded.body.lines))
    assert loaded.body.lines == 4  # the read went on to EOF, the appended turn included
    assert loaded.body.committed_end == loaded.size


def test_damage_in_a_log_changing_on_every_read_is_raised_after_five_reads(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session.jsonl"
    write_log(path, [HEADER, event_line("turn/start", 0), b"{broken", event_line("turn/end", 1)])
    # a steady stream of appends behind real damage
    reads = Reads(lambda read: append_lines(path, event_line("step/start", 1 + read)))
    with pytest.raises(LogDamage) as info:
        store_module.load_log(path, "none", reads)
    assert reads.count == 5
    assert info.value.line == 3


def test_a_log_removed_during_a_clean_read_is_served_as_read(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    write_log(path, [HEADER, event_line("turn/start", 0)])
    # the open file stays readable; the handle's next read says NotFound
    loaded = store_module.load_log(path, "none", Reads(lambda _read: path.unlink()))
    assert [e.seq for e in loaded.body.events] == [0]


def test_a_damaged_log_removed_during_the_read_is_not_found(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    write_log(path, [HEADER, b"{broken", event_line("turn/end", 0)])
    with pytest.raises(FileNotFoundError):  # the damage was in a changing file: read again
        store_module.load_log(path, "none", Reads(lambda _read: path.unlink(missing_ok=True)))


class CountingScanner(PlainScanner):
    """A ``PlainScanner`` that counts the scans begun (one per read of a suffix)."""

    made = 0

    def __init__(self, *, base: int, expected_seq: int, first_line: int) -> None:
        type(self).made += 1
        super().__init__(base=base, expected_seq=expected_seq, first_line=first_line)


def test_a_suffix_read_across_a_writer_replacing_the_tail_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "session.jsonl"
    committed = [HEADER, event_line("turn/start", 0), event_line("turn/end", 1)]
    cut = write_log(path, committed, tail=b"garbage\n" + b"g" * 200 + b"\n")
    ino = path.stat().st_ino
    # the first block: the discardable line "garbage" and the start of the next one; the writer
    # then cuts the tail and appends, so the next block continues inside its new line
    monkeypatch.setattr(store_module, "_BLOCK", len(b"garbage\n") + 5)

    class WriterInTheMiddle(CountingScanner):
        made = 0

        def feed(self, lines: list[bytes], end: int) -> None:
            if self.made == 1 and lines == [b"garbage"]:
                new_turn = [event_line("turn/start", 2), event_line("turn/end", 3)]
                truncate_and_append(path, cut, new_turn)
            super().feed(lines, end)

    monkeypatch.setattr(store_module, "PlainScanner", WriterInTheMiddle)
    got = store_module.read_suffix(path, "none", offset=cut, expected_seq=2, first_line=4, ino=ino)
    assert got is not None
    scan, end = got
    assert WriterInTheMiddle.made == 2  # the first read saw damage in changing bytes
    assert [e.seq for e in scan.events] == [2, 3]
    assert scan.committed_end == end == path.stat().st_size


def test_a_suffix_read_reports_damage_in_an_unchanging_file_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "session.jsonl"
    cut = write_log(path, [HEADER, event_line("turn/start", 0), event_line("turn/end", 1)])
    with path.open("ab") as f:
        f.write(b"{broken\n" + event_line("turn/end", 3) + b"\n")

    class Counted(CountingScanner):
        made = 0

    monkeypatch.setattr(store_module, "PlainScanner", Counted)
    with pytest.raises(LogDamage) as info:
        store_module.read_suffix(
            path, "none", offset=cut, expected_seq=2, first_line=4, ino=path.stat().st_ino
        )
    assert Counted.made == 1
    assert (info.value.line, "intact line 5" in info.value.reason) == (4, True)
