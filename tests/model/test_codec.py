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
