"""OutputCollector: a byte-exact tail in memory, a bounded spill file, incremental reads."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from dsh_bash_local._collector import OutputCollector, complete_utf8_end


def _collector(tmp_path: Path, max_bytes: int, spill_cap: int) -> OutputCollector:
    counter = iter(range(1_000_000))

    def open_spill() -> tuple[int, Path]:
        path = tmp_path / f"spill-{next(counter)}.log"
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), path

    return OutputCollector(max_bytes, spill_cap, open_spill)


def _no_spill() -> tuple[int, Path]:
    raise OSError("spill is disabled in this test")


def test_the_tail_is_kept_byte_exact(tmp_path: Path) -> None:
    collector = _collector(tmp_path, 5, 0)
    collector.feed(b"abc")
    collector.feed(b"defgh")
    assert (collector.text(), collector.truncated, collector.total) == ("defgh", True, 8)


def test_output_within_the_cap_is_not_truncated_and_not_spilled(tmp_path: Path) -> None:
    collector = _collector(tmp_path, 5, 100)
    collector.feed(b"abcde")
    assert (collector.truncated, collector.spill_path) == (False, None)


def test_the_first_overflow_spills_the_whole_stream_so_far(tmp_path: Path) -> None:
    collector = _collector(tmp_path, 4, 100)
    for chunk in (b"ab", b"cd", b"ef", b"gh"):
        collector.feed(chunk)
    collector.close()
    assert collector.spill_path is not None
    assert collector.spill_path.read_bytes() == b"abcdefgh"


def test_a_stream_over_the_spill_cap_deletes_its_spill_file(tmp_path: Path) -> None:
    collector = _collector(tmp_path, 2, 6)
    collector.feed(b"abcd")
    spilled = collector.spill_path
    assert spilled is not None
    assert spilled.exists()
    collector.feed(b"efg")
    assert collector.spill_path is None
    assert not spilled.exists()


def test_a_truncated_tail_does_not_start_with_half_a_character(tmp_path: Path) -> None:
    collector = _collector(tmp_path, 3, 0)
    collector.feed("xé".encode() + b"ab")  # the cut falls inside é
    assert collector.text() == "ab"


def test_reads_are_incremental_and_consuming(tmp_path: Path) -> None:
    collector = _collector(tmp_path, 100, 0)
    collector.feed(b"one\n")
    text, offset, lossy = collector.read_from(0, final=False)
    collector.feed(b"two\n")
    again, offset, _ = collector.read_from(offset, final=False)
    assert (text, again, lossy) == ("one\n", "two\n", False)
    assert collector.read_from(offset, final=True)[0] == ""


def test_a_read_behind_the_window_is_lossy_and_returns_the_whole_tail(tmp_path: Path) -> None:
    collector = _collector(tmp_path, 4, 0)
    collector.feed(b"abcdefgh")
    assert collector.read_from(0, final=True) == ("efgh", 8, True)


def test_an_open_stream_holds_back_an_incomplete_character(tmp_path: Path) -> None:
    collector = _collector(tmp_path, 100, 0)
    encoded = "é".encode()
    collector.feed(b"a" + encoded[:1])
    text, offset, _ = collector.read_from(0, final=False)
    collector.feed(encoded[1:])
    rest, _, _ = collector.read_from(offset, final=False)
    assert (text, rest) == ("a", "é")


def test_complete_utf8_end_keeps_complete_sequences() -> None:
    assert complete_utf8_end("aé€😀".encode()) == len("aé€😀".encode())


@given(text=st.text(max_size=200), cuts=st.lists(st.integers(0, 800), max_size=10))
def test_incremental_reads_of_any_chunking_rebuild_the_text(text: str, cuts: list[int]) -> None:
    data = text.encode()
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    collector = OutputCollector(10_000, 0, _no_spill)
    offset, seen = 0, ""
    for start, end in itertools.pairwise(bounds):
        collector.feed(data[start:end])
        delta, offset, _ = collector.read_from(offset, final=False)
        seen += delta
    seen += collector.read_from(offset, final=True)[0]
    assert seen == text
