"""`handrail.json_light` reads and writes JSON exactly as `json` does, errors included,
for the calls the modules a hook loads make, in a process that never loads `re`."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from handrail import json_light

VALUES: list[Any] = [
    {"session_id": "s-1", "tool_input": {"file_path": "src/cart.py", "n": [1, 2.5, -0.0, 1e300, 10**40]}},
    {"z": None, "a": True, "m": False, "é": "ünïcödé ☃ \U0001f600", "ctl": '\x00\x1f\u2028"\\/'},
    {"lone": "\ud800 half", "nested": [[[{"k": []}]]], "": {}},
    "just a string \n",
    [1, "two", 3.0, None],
    42,
]
TEXTS = [
    '{"a": 1}',
    '  \n\t{"a": [1, 2, {"b": null}]}  \r\n',
    '"\\ud83d\\ude00 \\u00e9"',
    "[NaN, Infinity, -Infinity, 1.5e3, -12]",
    '{"dup": 1, "dup": 2}',
    "",
    "   ",
    '{"a": 1} x',
    '{"a": 1',
    '{"a" 1}',
    "[1,]",
    '"unterminated',
    '"bad \\x escape"',
    '"tab\tinside"',
    "\ufeff{}",
    "nul",
    "01",
]


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("sort_keys", [True, False])
def test_a_value_is_written_as_json_writes_it(value: Any, ascii_only: bool, sort_keys: bool) -> None:
    for separators in ((",", ":"), (", ", ": ")):
        options: dict[str, Any] = {
            "ensure_ascii": ascii_only,
            "separators": separators,
            "sort_keys": sort_keys,
        }
        assert json_light.dumps(value, **options) == json.dumps(value, **options)


def test_what_json_refuses_to_write_is_refused_alike() -> None:
    for value, options in [
        (float("nan"), {"allow_nan": False}),
        ({"x": float("inf")}, {"allow_nan": False}),
        ({"x": object()}, {}),
        ({(1, 2): "tuple key"}, {}),
    ]:
        with pytest.raises((ValueError, TypeError)) as theirs:
            json.dumps(value, **options)
        with pytest.raises(type(theirs.value)) as ours:
            json_light.dumps(value, **options)
        assert str(ours.value) == str(theirs.value)
    assert json_light.dumps(float("nan")) == "NaN"


@pytest.mark.parametrize("text", TEXTS)
def test_a_text_is_read_as_json_reads_it(text: str) -> None:
    for given in (text, text.encode("utf-8", "surrogatepass")):
        try:
            expected: Any = json.loads(given)
        except ValueError as exc:
            with pytest.raises(type(exc)) as raised:
                json_light.loads(given)
            assert str(raised.value) == str(exc)
            continue
        got = json_light.loads(given)
        assert json.dumps(got) == json.dumps(expected)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"])
def test_bytes_in_each_encoding_json_detects_are_read_alike(encoding: str) -> None:
    data = '{"é": ["☃", 1]}'.encode(encoding)
    assert json_light.loads(data) == json.loads(data)


def test_a_syntax_error_is_jsons_own_and_can_be_caught_by_its_name_here() -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        json_light.loads('{"a": }')
    assert (raised.value.lineno, raised.value.colno) == (1, 7)
    try:
        json_light.loads("[")
    except json_light.JSONDecodeError as exc:
        assert exc.msg == "Expecting value"


@pytest.mark.parametrize("text", [t for t in TEXTS if t.strip()])
def test_a_text_is_read_as_json_reads_it_in_a_process_that_has_not_loaded_json(text: str) -> None:
    code = (
        "import sys; from handrail import json_light\n"
        "try:\n    print(repr(json_light.loads(sys.argv[1])))\n"
        "except ValueError as exc:\n    print(type(exc).__name__, exc)"
    )
    done = subprocess.run([sys.executable, "-c", code, text], capture_output=True, text=True, check=True)
    try:
        expected = repr(json.loads(text))
    except ValueError as exc:
        expected = f"{type(exc).__name__} {exc}"
    assert done.stdout.strip() == expected.strip()


def test_reading_and_writing_loads_neither_json_nor_re() -> None:
    code = (
        "import sys; from handrail import json_light; "
        'json_light.dumps(json_light.loads(b\'{"a": [1, 2.5, "x"]}\'), sort_keys=True); '
        "print(sorted({'json', 're'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
