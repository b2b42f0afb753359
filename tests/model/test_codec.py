"""The store's JSON columns as a process without orjson writes and reads them (a gate
hook recording a refusal): the standard library's text reads back, in either process,
to what orjson's own would."""

from __future__ import annotations

import math
import subprocess
import sys
from typing import Any

import pytest

from handrail.model import codec

VALUES: list[Any] = [
    {"event": "pre-tool-use", "decision": "deny", "tool": "Edit", "paths": ["src/cart.py"]},
    {"text": "café ☕ 𝄞", "n": -(2**63), "m": 2**64 - 1, "f": 1e16, "g": 0.1, "t": True, "z": None},
    [1, [2, [3, {"deep": []}]]],
    "plain",
    {"wide": 2**64},  # past orjson's integers: written after a space, read exactly
    {"lone": "\ud800"},  # a lone surrogate: escaped after a space
]


@pytest.fixture
def without_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec, "_orjson", None)


@pytest.mark.parametrize("value", VALUES)
def test_a_column_written_without_orjson_reads_back_as_orjson_s_own_text_does(
    value: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_orjson = codec.encode_stored(value)
    monkeypatch.setattr(codec, "_orjson", None)
    text = codec.encode_stored(value)
    assert codec.decode_stored(text) == codec.decode_stored(with_orjson)
    monkeypatch.undo()  # orjson's reading of the same text
    assert codec.decode_stored(text) == codec.decode_stored(with_orjson)
    assert text.startswith(" ") == with_orjson.startswith(" ")
    text.encode("utf-8")  # what SQLite stores


def test_what_only_orjson_writes_is_left_to_orjson(without_orjson: None) -> None:
    assert codec.decode_stored(codec.encode_stored({"x": math.nan})) == {"x": None}
    assert codec._orjson is not None  # loaded for it, as before


def test_a_hook_s_write_and_read_of_small_columns_load_no_orjson() -> None:
    probe = (
        "import sys; from handrail.model import codec\n"
        "value = {'event': 'pre-tool-use', 'text': 'café', 'wide': 2**70}\n"
        "assert codec.decode_stored(codec.encode_stored(value)) == value\n"
        "print('orjson' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


# a server's first message, read and written before orjson loads (codec.stdlib_first)
FIRST_MESSAGES: list[bytes] = [
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}',
    '{"name":"café ☕ 𝄞","quote":"\\"","tab":"\\t\\u001f"}'.encode(),
    b'{"id":18446744073709551616,"wide":[-9223372036854775809]}',  # read exactly, as decode does
    b'{"id":1.5,"pair":"\\ud83d\\ude00"}',
]
LISTINGS: list[bytes] = [
    b'{"id":"a","steps":[{"body":[1]}],"wide":18446744073709551616}',
    b'{"pair":"\\ud83d\\ude00","escaped":"\\\\ud800"}',  # a pair, and a backslash before `ud800`
]
REFUSED_BY_BOTH: list[bytes] = [
    b'{"lone":"\\ud800"}',
    b'{"lone":"\\udc00x"}',
    b'{"n":NaN}',
    b'{"n":1e400}',
    b"\xff{}",
    b'{"open":',
    b"[" * 5_000 + b"]" * 5_000,  # deeper than the stack: orjson's refusal
]


@pytest.fixture
def stdlib_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec, "_orjson", None)
    monkeypatch.setattr(codec, "_stdlib_first", False)  # recorded first, so undone after the test
    codec.stdlib_first()
    assert codec._stdlib_first


@pytest.mark.parametrize("data", FIRST_MESSAGES)
def test_a_first_message_reads_and_writes_before_orjson_as_it_does_after(data: bytes) -> None:
    with_orjson = codec.decode(data)
    written = codec.encode(with_orjson)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(codec, "_orjson", None)
        patch.setattr(codec, "_stdlib_first", True)
        read = codec.decode(data)
        assert read == with_orjson and type(read.get("id")) is type(with_orjson.get("id"))
        assert codec.decode(codec.encode(read)) == codec.decode(written)
        assert codec._orjson is None  # neither loaded it
    assert codec.encode(read) == written


@pytest.mark.parametrize("data", LISTINGS)
def test_a_listing_s_quick_look_before_orjson_takes_what_orjson_takes(
    data: bytes, stdlib_first: None
) -> None:
    looked = codec.loads(data)
    assert codec._orjson is None
    import orjson

    by_orjson = orjson.loads(data)
    assert looked.keys() == by_orjson.keys()
    assert [looked[k] for k in looked if k != "wide"] == [by_orjson[k] for k in by_orjson if k != "wide"]
    assert looked.get("wide", 2**64) == 2**64  # exact, where orjson reads a float: as the compiler does


@pytest.mark.parametrize("data", REFUSED_BY_BOTH)
def test_a_listing_s_quick_look_before_orjson_refuses_what_orjson_refuses(
    data: bytes, stdlib_first: None
) -> None:
    import orjson

    with pytest.raises(ValueError):
        orjson.loads(data)
    with pytest.raises(ValueError):
        codec.loads(data)


def test_what_the_standard_library_cannot_write_before_orjson_is_left_to_orjson(stdlib_first: None) -> None:
    assert codec.decode(b'{"lone":"\\ud800"}') == {"lone": "\ud800"}  # read, as decode always does
    assert codec._orjson is None
    assert codec.decode(codec.encode({"lone": "\ud800"})) == {"lone": "\ud800"}  # escaped
    assert codec._orjson is not None  # loaded for it
    assert codec.encode({"x": math.nan}) == b'{"x":null}'  # as orjson writes NaN


def test_load_orjson_ends_the_standard_library_s_turn(stdlib_first: None) -> None:
    codec.load_orjson()
    assert codec._orjson is not None and not codec._stdlib_first
