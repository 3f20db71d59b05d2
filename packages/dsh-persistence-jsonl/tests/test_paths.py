"""Path encoding of reference §3.2: ids and cwds never reach the filesystem raw."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_persistence_jsonl import JsonlPersistence, encode_segment, project_key


def test_safe_characters_are_kept() -> None:
    assert encode_segment("session-1_a.B") == "session-1_a.B"


def test_dot_and_dot_dot_are_escaped() -> None:
    assert encode_segment(".") == "~002E"
    assert encode_segment("..") == "~002E~002E"


def test_separators_and_tilde_are_escaped() -> None:
    assert encode_segment("../a/b\\c~") == "..~002Fa~002Fb~005Cc~007E"


def test_astral_character_becomes_two_utf16_escapes() -> None:
    assert encode_segment("😀") == "~D83D~DE00"


def test_lone_surrogates_encode_distinctly() -> None:
    assert encode_segment("\ud800") != encode_segment("\udc00")
    assert encode_segment("\ud800") == "~D800"


def test_empty_segment_raises() -> None:
    with pytest.raises(ValueError, match="empty"):
        encode_segment("")


@given(st.text(min_size=1), st.text(min_size=1))
def test_encoding_is_injective(a: str, b: str) -> None:
    if a != b:
        assert encode_segment(a) != encode_segment(b)


def _by_code_units(text: str) -> str:
    raw = text.encode("utf-16-le", "surrogatepass")
    units = [raw[i] | (raw[i + 1] << 8) for i in range(0, len(raw), 2)]
    safe = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
    return "".join(chr(u) if u in safe else f"~{u:04X}" for u in units)


_ANY_UNIT = st.lists(
    st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr)), min_size=1
).map("".join)  # lone surrogates included


@given(_ANY_UNIT.filter(lambda t: t not in (".", "..")))
def test_encoding_equals_the_utf16_code_unit_definition(text: str) -> None:
    assert encode_segment(text) == _by_code_units(text)


@given(st.text(min_size=1))
def test_encoded_segment_is_one_safe_path_component(text: str) -> None:
    encoded = encode_segment(text)
    assert encoded not in (".", "..")
    assert all(c.isascii() and (c.isalnum() or c in "._-~") for c in encoded)


def test_project_key_examples() -> None:
    assert project_key("/") == "--root--"
    assert project_key("/home/u/p") == "--home-u-p--"
    assert project_key("C:\\x") == "--C-x--"
    assert project_key("/a//b") == "--a-b--"


def test_project_key_escapes_other_units_and_resets_the_run() -> None:
    assert project_key("/a b/c") == "--a~0020b-c--"


def test_project_key_is_bounded() -> None:
    key = project_key("/" + "x" * 1000)
    assert len(key) == 251 + 4


def test_empty_cwd_raises() -> None:
    with pytest.raises(ValueError, match="empty"):
        project_key("")


def test_layout_path_uses_project_key_and_encoded_id(tmp_path: Path, mk: Any) -> None:
    store = JsonlPersistence(tmp_path)
    path = store.log_path(mk.header("../evil", cwd="/home/u/p"))
    assert path == tmp_path / "--home-u-p--" / "..~002Fevil" / "session.jsonl"


def test_session_without_cwd_lives_under_no_cwd(tmp_path: Path, mk: Any) -> None:
    store = JsonlPersistence(tmp_path, compression="zstd")
    path = store.log_path(mk.header("s", cwd=None))
    assert path == tmp_path / "_no-cwd" / "s" / "session.jsonl.zstd"


def test_long_id_is_cut_and_hash_suffixed_within_200_bytes(tmp_path: Path, mk: Any) -> None:
    store = JsonlPersistence(tmp_path)
    a = store.log_path(mk.header("é" * 300)).parent.name
    b = store.log_path(mk.header("é" * 299 + "e")).parent.name
    assert len(a.encode()) <= 200
    assert len(b.encode()) <= 200
    assert a != b
    assert "~~" in a


def test_relative_root_is_resolved_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = JsonlPersistence("rel")
    monkeypatch.chdir("/")
    assert store.root == tmp_path / "rel"
