"""`loads` and `dumps` for the modules a hook loads: the C scanner and encoder of the
`json` package, called as that package calls them, without its Python modules, which
load `re` and compile six patterns at import (about a sixth of a bare interpreter's
start, on every tool call an agent makes). Same results and same errors as
`json.loads` and `json.dumps` with the same options; a syntax error is json's own
`JSONDecodeError` (its module loads only then).
"""

from __future__ import annotations

from handrail.typing_light import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from json import JSONDecodeError as JSONDecodeError
    from typing import Any

if TYPE_CHECKING:
    _json: Any
else:
    try:
        import _json
    except ImportError:  # an interpreter without json's C parts: json itself
        _json = None

WHITESPACE = " \t\n\r"  # json.decoder.WHITESPACE
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Decoding:
    """What json's C scanner reads of a `json.JSONDecoder()`, with its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


_scan: Callable[[str, int], tuple[Any, int]] | None = (
    _json.make_scanner(_Decoding()) if _json is not None else None
)


def __getattr__(name: str) -> Any:
    if name == "JSONDecodeError":  # read by an `except` clause only when something was raised
        from json import JSONDecodeError  # lazy: only a syntax error needs it

        return JSONDecodeError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def loads(text: str | bytes) -> Any:
    """As `json.loads(text)`."""
    if _scan is None:
        import json  # lazy: only without json's C parts

        return json.loads(text)
    if not isinstance(text, str):
        text = text.decode(_encoding(text), "surrogatepass")
    elif text.startswith("\ufeff"):
        raise _error("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    start = len(text) - len(text.lstrip(WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as stopped:
        raise _error("Expecting value", text, stopped.value) from None
    except Exception:
        # a syntax error inside: the scanner's error loads json.decoder as it is raised,
        # which fails while json is not loaded yet; json itself reads it again and says
        import json  # lazy: only a syntax error needs it

        return json.loads(text)
    if end != len(text) and text[end:].strip(WHITESPACE):
        raise _error("Extra data", text, len(text) - len(text[end:].lstrip(WHITESPACE)))
    return value


def dumps(
    value: Any,
    *,
    ensure_ascii: bool = True,
    separators: tuple[str, str] = (", ", ": "),
    sort_keys: bool = False,
    allow_nan: bool = True,
) -> str:
    """As `json.dumps(value, ...)` with these options (and the others at json's defaults)."""
    if _json is None:
        import json  # lazy: only without json's C parts

        return json.dumps(
            value, ensure_ascii=ensure_ascii, separators=separators, sort_keys=sort_keys, allow_nan=allow_nan
        )
    quote = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    if isinstance(value, str):
        return quote(value)  # type: ignore[no-any-return]
    item, key = separators
    encode = _json.make_encoder({}, _unknown, quote, None, key, item, sort_keys, False, allow_nan)
    return "".join(encode(value, 0))


def _unknown(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _error(message: str, text: str, position: int) -> Exception:
    from json import JSONDecodeError  # lazy: only a syntax error needs it

    return JSONDecodeError(message, text, position)


def _encoding(data: bytes) -> str:
    """As json.detect_encoding: the BOM, else where the first bytes hold zeros."""
    if data.startswith((b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00")):
        return "utf-32"
    if data.startswith((b"\xfe\xff", b"\xff\xfe")):
        return "utf-16"
    if data.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    if len(data) >= 4:
        if not data[0]:
            return "utf-16-be" if data[1] else "utf-32-be"
        if not data[1]:
            return "utf-16-le" if data[2] or data[3] else "utf-32-le"
    elif len(data) == 2:
        if not data[0]:
            return "utf-16-be"
        if not data[1]:
            return "utf-16-le"
    return "utf-8"
