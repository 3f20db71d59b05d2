"""The storage helpers backends share: lossless TEXT columns and the paused GC."""

from __future__ import annotations

import gc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_persistence import TEXT_COLUMN_ESCAPE, gc_paused, text_from_column, text_to_column


@pytest.mark.parametrize("value", ["s-1", "/work/ü", "日本語", "a\x00b", ""])
def test_a_string_with_a_utf8_form_is_stored_as_itself(value: str) -> None:
    assert text_to_column(value) == value


@pytest.mark.parametrize("value", ["s\ud800", "\udfff/w", TEXT_COLUMN_ESCAPE + "x"])
def test_a_lone_surrogate_or_the_marker_is_escaped_as_a_json_literal(value: str) -> None:
    stored = text_to_column(value)
    assert stored.startswith(TEXT_COLUMN_ESCAPE)
    assert stored[1:].isascii()
    assert text_from_column(stored) == value


def test_nul_is_escaped_only_when_asked() -> None:
    assert text_to_column("a\x00b") == "a\x00b"
    stored = text_to_column("a\x00b", escape_nul=True)
    assert stored == TEXT_COLUMN_ESCAPE + '"a\\u0000b"'
    assert text_from_column(stored) == "a\x00b"


@given(st.text(), st.booleans())
def test_every_string_round_trips_and_distinct_strings_stay_distinct(
    value: str, escape_nul: bool
) -> None:
    stored = text_to_column(value, escape_nul=escape_nul)
    stored.encode("utf-8")  # always storable as UTF-8
    assert text_from_column(stored) == value
    assert text_to_column(value + "\ud800", escape_nul=escape_nul) != stored


@pytest.mark.parametrize("stored", [TEXT_COLUMN_ESCAPE + "{", TEXT_COLUMN_ESCAPE + "1"])
def test_an_escaped_column_that_is_no_json_string_is_a_value_error(stored: str) -> None:
    with pytest.raises(ValueError, match="escaped text column"):
        text_from_column(stored)


def test_a_column_that_is_no_string_comes_back_as_it_is() -> None:
    assert text_from_column(None) is None
    assert text_from_column(7) == 7


def _decode_that_fails() -> None:
    with gc_paused():
        assert not gc.isenabled()
        raise RuntimeError("decode failed")


def test_gc_paused_restores_the_collector_as_it_was_even_on_error() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="decode failed"):
        _decode_that_fails()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
