"""``decompress_frame``: the bounded read of one compressed record, with a stand-in codec (this
package depends on no compression library; the backends pass ``zstandard`` itself)."""

from __future__ import annotations

import re

import pytest

from dsh_persistence import ZstdApi, decompress_frame


class FakeError(Exception):
    pass


class FakeDecompressor:
    def decompress(self, data: bytes, max_output_size: int = 0) -> bytes:
        if data[9:10] == b"!":
            raise FakeError("corrupt block")
        return data[9 : 9 + max_output_size]


class FakeZstd:
    """Frames ``b"Z" + recorded size (8 bytes, signed) + plaintext``."""

    ZstdError = FakeError
    ZstdDecompressor = FakeDecompressor

    @staticmethod
    def frame_content_size(data: bytes) -> int:
        if not data.startswith(b"Z"):
            raise FakeError("unknown magic")
        return int.from_bytes(data[1:9], "big", signed=True)


def frame(plaintext: bytes, recorded: int | None = None) -> bytes:
    size = len(plaintext) if recorded is None else recorded
    return b"Z" + size.to_bytes(8, "big", signed=True) + plaintext


CODEC: ZstdApi = FakeZstd()


class RowError(ValueError):
    pass


def test_a_frame_within_the_bound_is_its_plaintext() -> None:
    assert decompress_frame(frame(b"x" * 100), 100, CODEC) == b"x" * 100


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"nope", "not a zstd frame (unknown magic)"),
        (frame(b"abc", recorded=-1), "does not record its content size"),
        (frame(b"x" * 101), "claims 101 bytes, more than the bound 100"),
        (frame(b"!bc"), "does not decompress (corrupt block)"),
        (frame(b"abc", recorded=5), "decompressed to another size than it records"),
    ],
)
def test_every_bad_frame_raises_the_callers_error(data: bytes, reason: str) -> None:
    with pytest.raises(RowError, match=re.escape(reason)):
        decompress_frame(data, 100, CODEC, RowError)
    with pytest.raises(ValueError, match="zstd frame"):
        decompress_frame(data, 100, CODEC)
