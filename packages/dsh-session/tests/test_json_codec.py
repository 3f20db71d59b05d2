"""The canonical JSON codec and the lossless-JSON rules (reference §1.9, §7.1)."""

from __future__ import annotations

import collections
import enum
import json
import math
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_session import (
    LosslessJsonError,
    dumps_canonical,
    is_lossless_json,
    js_number,
    lossless_json_snapshot,
)
from dsh_session import _json as _json_module


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e21, "1e+21"),
        (1.5, "1.5"),
        (100.0, "100"),
        (0.1, "0.1"),
        (1e-7, "1e-7"),
        (1.2345e-7, "1.2345e-7"),
        (0.000001, "0.000001"),
        (1e20, "100000000000000000000"),
        (123456789012345680000.0, "123456789012345680000"),
        (1e16, "10000000000000000"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (-2.5, "-2.5"),
        (0.0, "0"),
        (12500.0, "12500"),
    ],
)
def test_floats_are_formatted_like_javascript(value: float, text: str) -> None:
    assert js_number(value) == text
    assert dumps_canonical([value]) == f"[{text}]".encode()


def test_output_is_compact_keeps_key_order_and_writes_utf8() -> None:
    value = {"z": 1, "a": [True, None, "é😀"], "m": {"y": 2, "b": 3}}
    assert dumps_canonical(value) == '{"z":1,"a":[true,null,"é😀"],"m":{"y":2,"b":3}}'.encode()


def test_integers_stay_integers() -> None:
    assert dumps_canonical({"n": 1785918212891}) == b'{"n":1785918212891}'


def test_lone_surrogates_are_escaped_so_output_is_valid_utf8() -> None:
    out = dumps_canonical({"s": "a\ud800b\udfff"})
    assert out == b'{"s":"a\\ud800b\\udfff"}'
    out.decode("utf-8")  # valid UTF-8
    assert json.loads(out) == {"s": "a\ud800b\udfff"}


def test_a_surrogate_pair_held_as_two_code_points_is_one_character() -> None:
    assert dumps_canonical("\ud83d\ude00") == '"😀"'.encode()


def test_control_characters_are_escaped_like_javascript() -> None:
    assert dumps_canonical("\n\t\x01\x7f") == b'"\\n\\t\\u0001\x7f"'


@pytest.mark.parametrize(
    "bad", [math.nan, math.inf, -math.inf, -0.0], ids=["nan", "inf", "-inf", "neg-zero"]
)
def test_non_finite_numbers_and_negative_zero_are_refused(bad: float) -> None:
    with pytest.raises(LosslessJsonError, match="not losslessly JSON-serializable"):
        dumps_canonical({"a": [bad]})


def test_the_error_names_the_path_of_the_bad_value() -> None:
    with pytest.raises(LosslessJsonError) as info:
        dumps_canonical({"a": [1, {"b": math.nan}]})
    assert info.value.path == "$['a'][1]['b']"
    assert isinstance(info.value, TypeError)


@pytest.mark.parametrize(
    "bad",
    [(1, 2), {1, 2}, {1: "x"}, object(), b"bytes", 2**53 + 1],
    ids=["tuple", "set", "int-key", "object", "bytes", "unsafe-int"],
)
def test_values_json_cannot_carry_are_refused(bad: object) -> None:
    assert not is_lossless_json({"v": bad})
    with pytest.raises(LosslessJsonError):
        lossless_json_snapshot({"v": bad})


class _Str(str):
    pass


class _Int(int):
    pass


class _Float(float):
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


class _List(list):  # type: ignore[type-arg]
    pass


class _Number(enum.IntEnum):
    ONE = 1


class _Word(enum.StrEnum):
    A = "a"


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        ((1, 2), "$['v'][1]"),
        ({1, 2}, "$['v'][1]"),
        (b"ab", "$['v'][1]"),
        (object(), "$['v'][1]"),
        (_Str("s"), "$['v'][1]"),
        (_Int(1), "$['v'][1]"),
        (_Float(1.5), "$['v'][1]"),
        (_Dict(a=1), "$['v'][1]"),
        (_List([1]), "$['v'][1]"),
        (_Number.ONE, "$['v'][1]"),
        (_Word.A, "$['v'][1]"),
        (collections.OrderedDict(a=1), "$['v'][1]"),
        (2**53 + 1, "$['v'][1]"),
        ({1: "x"}, "$['v'][1]"),
        ({True: "x"}, "$['v'][1]"),
        ({None: "x"}, "$['v'][1]"),
        ({_Str("k"): "x"}, "$['v'][1]"),
    ],
    ids=[
        "tuple",
        "set",
        "bytes",
        "object",
        "str-subclass",
        "int-subclass",
        "float-subclass",
        "dict-subclass",
        "list-subclass",
        "int-enum",
        "str-enum",
        "ordered-dict",
        "unsafe-int",
        "int-key",
        "bool-key",
        "none-key",
        "str-subclass-key",
    ],
)
def test_the_encoder_refuses_what_json_cannot_carry_and_names_it(bad: object, path: str) -> None:
    # pydantic_core.to_json would write most of these (a tuple as a list, an int key as a
    # string): the encoder must refuse them before its fast path, naming where they are
    with pytest.raises(LosslessJsonError) as info:
        dumps_canonical({"v": ["ok", bad, "ok"]})
    assert info.value.path == path


@pytest.mark.parametrize("depth", [254, 255, 256])
def test_nesting_past_the_fast_writer_limit_falls_back_to_the_same_bytes(depth: int) -> None:
    value: object = {"k": "v", "n": [1, 2.5, None, True]}
    for _ in range(depth):
        value = [value]
    assert dumps_canonical(value) == _reference(value).encode()


def test_nesting_the_c_encoder_cannot_take_is_refused_not_crashing() -> None:
    def deep(levels: int) -> object:
        value: object = "v"
        for _ in range(levels):
            value = [value]
        return value

    # find a depth the checks accept but the C encoder (which counts the caller's frames too)
    # does not, whatever this interpreter's limit: either way the answer is bytes or a refusal
    outcomes: list[bool | str] = []
    for levels in range(sys.getrecursionlimit() - 80, sys.getrecursionlimit() + 5):
        try:
            got = dumps_canonical(deep(levels))
        except LosslessJsonError as error:
            outcomes.append(str(error))
        else:
            outcomes.append(got == b"[" * levels + b'"v"' + b"]" * levels)
    assert all(o is True or "nested too deeply" in str(o) for o in outcomes), outcomes


def test_a_typical_event_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # the ~5x faster writer must stay the common case: a spy counts its calls
    calls: list[object] = []
    real = _json_module._rust_encode

    def spy(value: object) -> bytes:
        calls.append(value)
        return real(value)

    monkeypatch.setattr(_json_module, "_rust_encode", spy)
    event = {"type": "assistant/message", "seq": 3, "time": 1, "data": {"text": "hé", "t": 0.7}}
    assert dumps_canonical(event) == _reference(event).encode()
    assert calls == [event]


def test_big_integers_are_allowed_in_the_digits_javascript_writes() -> None:
    assert is_lossless_json(1152921504606847000)  # JSON.stringify(2 ** 60)
    assert not is_lossless_json(2**60)  # JavaScript would write it back as ...847000
    assert dumps_canonical(10**20) == b"100000000000000000000"


def test_cycles_are_refused_but_shared_references_are_allowed() -> None:
    shared = {"x": 1}
    assert is_lossless_json({"a": shared, "b": shared})
    cyclic: list[object] = []
    cyclic.append(cyclic)
    assert not is_lossless_json(cyclic)


def test_snapshot_is_a_detached_copy() -> None:
    shared = {"x": [1]}
    value = {"a": shared, "b": shared}
    snap = lossless_json_snapshot(value)
    assert snap == value
    assert isinstance(snap, dict)
    assert snap["a"] is not shared
    assert snap["a"] is not snap["b"]


def test_a_proto_key_is_kept_as_data() -> None:
    assert dumps_canonical({"__proto__": 1}) == b'{"__proto__":1}'


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False).filter(
        lambda f: not (f == 0 and math.copysign(1, f) < 0)
    )
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_any_lossless_value_round_trips_through_its_bytes(value: object) -> None:
    assert is_lossless_json(value)
    # JavaScript reads every number as a double, so compare as doubles (3.5e16 is written
    # "35273557931059370", which Python reads back as an int)
    assert json.loads(dumps_canonical(value), parse_int=float) == json.loads(
        json.dumps(value), parse_int=float
    )


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_javascript_number_text_reads_back_as_the_same_float(value: float) -> None:
    assert float(js_number(value)) == value


def test_nesting_deeper_than_python_recursion_is_refused_not_crashing() -> None:
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(LosslessJsonError, match="nested too deeply"):
        dumps_canonical(deep)
    with pytest.raises(LosslessJsonError, match="nested too deeply"):
        lossless_json_snapshot(deep)
    assert not is_lossless_json(deep)


def test_a_big_integer_is_allowed_only_as_javascript_writes_it() -> None:
    assert is_lossless_json(52841431442818820)  # JSON.stringify(5.284143144281882e16)
    assert not is_lossless_json(52841431442818816)  # the double's exact value: JS never writes it
    assert not is_lossless_json(2**53 + 1)


# -- the fast path and the reference encoding agree ----------------------------------------


def _reference_string(text: str) -> str:
    """``JSON.stringify`` of a string, written out character by character (UTF-16 view)."""
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
    short["\t"] = "\\t"
    out = ['"']
    index = 0
    while index < len(text):
        char = text[index]
        code = ord(char)
        if char in short:
            out.append(short[char])
        elif code < 0x20:
            out.append(f"\\u{code:04x}")
        elif (
            0xD800 <= code <= 0xDBFF
            and index + 1 < len(text)
            and 0xDC00 <= ord(text[index + 1]) <= 0xDFFF
        ):  # a pair held as two code points is one character in JavaScript
            out.append(chr(0x10000 + ((code - 0xD800) << 10) + ord(text[index + 1]) - 0xDC00))
            index += 1
        elif 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
        index += 1
    out.append('"')
    return "".join(out)


def _reference(value: object) -> str:
    """``JSON.stringify`` of a lossless value, written out independently of the codec."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, str):
        return _reference_string(value)
    if isinstance(value, list):
        return "[" + ",".join(_reference(item) for item in value) + "]"
    assert isinstance(value, dict)
    items = (_reference_string(key) + ":" + _reference(item) for key, item in value.items())
    return "{" + ",".join(items) + "}"


any_text = st.lists(  # joined by hand: st.text never yields surrogates
    st.characters(exclude_categories=())
    | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=())
    | st.characters(max_codepoint=0x20)
    | st.sampled_from(['"', "\\", "\x7f", "\u2028", "\u2029", "\ufeff", "\U0001f600"]),
    max_size=12,
).map("".join)

any_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False).filter(
        lambda f: not (f == 0 and math.copysign(1, f) < 0)
    )
    | any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=20,
)


@given(any_values)
def test_encoding_equals_the_reference_byte_for_byte(value: object) -> None:
    # whichever path the encoder takes (fast, C, or JavaScript floats), the bytes are these
    assert dumps_canonical(value) == _reference(value).encode("utf-8")


@given(
    st.floats(allow_nan=False, allow_infinity=False).filter(
        lambda f: not (f == 0 and math.copysign(1, f) < 0)
    )
)
def test_a_float_inside_data_is_written_as_javascript_writes_it(value: float) -> None:
    assert dumps_canonical({"x": [value, 1]}) == b'{"x":[' + js_number(value).encode() + b",1]}"


def test_every_character_is_encoded_as_javascript_encodes_it() -> None:
    for code in range(0x110000):
        text = chr(code)
        assert dumps_canonical([text]) == f"[{_reference_string(text)}]".encode(), hex(code)


@pytest.mark.parametrize("depth", [200, 254, 255, 256, 300])
def test_deep_but_allowed_nesting_is_encoded_whole(depth: int) -> None:
    value: object = {"k": "v\ud800", "n": 1.5}
    for _ in range(depth):
        value = [value]
    assert dumps_canonical(value) == _reference(value).encode()
