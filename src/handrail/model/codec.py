"""The one JSON codec: `encode` and `decode` for every message, and `Encoded`, a value
that is already JSON and is spliced into a reply as bytes instead of encoded again;
then the other forms handrail writes and reads: a workflow's document, a size, the
store's JSON columns, a workflow file read exactly, a workflow file's revision.

orjson does the work; the standard library takes what it refuses (integers past 64
bits, lone surrogates), held to the same rules (UTF-8 only, no NaN or Infinity).
A server that answers one message before it loads orjson (`handrail start`:
`stdlib_first`, then `load_orjson`) reads and writes that message with the standard
library, held to the same rules; what it cannot take goes to orjson as always.
"""

from __future__ import annotations

import json
import re
from typing import Any

from handrail.model.wide_integers import may_hold_wide_integers


class Encoded:
    """A result that is already JSON (a workflow's source, a cached listing, a tool's
    answer encoded once): the protocol splices the bytes into its reply instead of
    parsing and encoding them again."""

    __slots__ = ("_fragment", "_quoted", "data")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._quoted: bytes | None = None
        self._fragment: Any = None  # orjson's Fragment of `data`, made when first spliced

    def value(self) -> Any:
        return loads(self.data)

    def fragment(self) -> Any:
        """orjson's Fragment of `data`, made when first spliced and kept: the same step is
        spliced into reply after reply."""
        if self._fragment is None:
            import orjson  # lazy: orjson's 24 ms only for what encodes

            self._fragment = orjson.Fragment(self.data)
        return self._fragment

    def quoted(self) -> bytes:
        """This JSON as a JSON string (the text block of a tool result); made once, since
        the same listing or document is sent again and again."""
        if self._quoted is None:
            self._quoted = dumps(self.data.decode())
        return self._quoted


_orjson: Any = None  # the module, once `_load` has imported it
_stdlib_first = False  # `stdlib_first` was called, and orjson is not loaded yet


def stdlib_first(on: bool = True) -> None:
    """Read and write with the standard library until `load_orjson` (or this, off):
    orjson's import (with dataclasses, inspect, uuid: about 15 ms) would come before a
    server's first answer, which the standard library writes as fast."""
    global _stdlib_first
    _stdlib_first = on and _orjson is None


def load_orjson() -> None:
    """orjson from now on (a server's first answer is out)."""
    global _stdlib_first
    _stdlib_first = False
    _orjson or _load()


def _load() -> Any:
    """orjson, imported on first use: 24 ms that commands which never read or write a
    message do not pay. Then a global: an import statement per call costs 0.2 µs, and
    each request encodes and decodes several times."""
    global _orjson
    import orjson  # lazy: orjson's 24 ms only for what encodes

    _orjson = orjson
    return orjson


def loads(data: bytes | str) -> Any:
    """orjson's reading alone (ValueError when it refuses): for a quick look, where a
    refusal leaves the answer to a later, exact reading."""
    if _stdlib_first:
        try:
            return _quick_stdlib(data)
        except RecursionError:  # nested deeper than the stack: orjson says, as ever
            pass
    return (_orjson or _load()).loads(data)


_SURROGATE = re.compile(rb"\\u[dD]([89abAB]|[c-fC-F])[0-9a-fA-F]{2}")  # an escaped surrogate, high or low


def _may_escape_a_lone_surrogate(raw: bytes) -> bool:
    """Whether the text escapes a high surrogate with no low one after it, or a low one with
    none before it (an escaped backslash before `ud800` also counts: the parse then tells)."""
    paired_to = -1  # where the low half of the last high surrogate was
    for found in _SURROGATE.finditer(raw):
        at, high = found.start(), found.group(1) in b"89abAB"
        if high:
            low = _SURROGATE.match(raw, at + 6)
            if low is None or low.group(1) in b"89abAB":
                return True
            paired_to = at + 6
        elif at != paired_to:
            return True
    return False


def _quick_stdlib(data: bytes | str) -> Any:
    """`loads` by the standard library, refusing what orjson refuses: not UTF-8, NaN
    and Infinity, a number too large for a float, a lone surrogate (looked for only where
    the text seems to escape one). An integer past 64 bits is read exactly (orjson: as a
    float), as the compiler reads it."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    if _may_escape_a_lone_surrogate(raw) and _holds_lone_surrogate(value):
        raise ValueError("a lone surrogate in a string")
    return value


def _finite(text: str) -> float:
    number = float(text)
    if number in (_INFINITY, -_INFINITY):
        raise ValueError(f"{text} is too large for a float")
    return number


_INFINITY = float("inf")


def _holds_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and not _utf8(item):
            return True
    return False


def dumps(value: Any) -> bytes:
    """orjson's writing alone (TypeError when it refuses): for values of plain JSON."""
    return (_orjson or _load()).dumps(value)  # type: ignore[no-any-return]


def encode(message: Any) -> bytes:
    if _stdlib_first:
        try:  # what orjson writes (NaN as null, a lone surrogate, a datetime) it writes as ever
            return json.dumps(message, **_STDLIB_WRITES).encode()
        except (TypeError, ValueError, RecursionError):
            pass
    orjson = _orjson or _load()
    try:
        return orjson.dumps(message, default=_spliced)  # type: ignore[no-any-return]
    except (TypeError, orjson.JSONEncodeError):  # huge integers, lone surrogates
        return json.dumps(
            message, ensure_ascii=True, separators=(",", ":"), default=lambda v: json.loads(v.data)
        ).encode()


def encode_sized(value: Any) -> tuple[bytes, int]:
    """`value` encoded, and its size as compact UTF-8 JSON (what `maxReplyBytes` bounds):
    the bytes' length, but where the standard library had to encode (a lone surrogate)
    the size it would have in UTF-8 rather than in escapes."""
    orjson = _orjson or _load()
    try:
        data = orjson.dumps(value, default=_spliced)
    except (TypeError, orjson.JSONEncodeError):
        data = encode(value)
        text = json.dumps(
            value, ensure_ascii=False, separators=(",", ":"), default=lambda v: json.loads(v.data)
        )
        return data, len(text.encode("utf-8", "surrogatepass"))
    return data, len(data)


def _spliced(value: Any) -> Any:
    """Results the service hands over already encoded are spliced in, not re-encoded."""
    if isinstance(value, Encoded):
        return value.fragment()
    raise TypeError(f"cannot encode {type(value).__name__}")


_STDLIB_WRITES: dict[str, Any] = {"ensure_ascii": False, "separators": (",", ":"), "allow_nan": False}


def _parsed(value: Any) -> Any:
    if isinstance(value, Encoded):
        return json.loads(value.data)
    raise TypeError(f"cannot encode {type(value).__name__}")


_STDLIB_WRITES["default"] = _parsed


def decode(data: bytes | str) -> Any:
    if _stdlib_first:
        try:  # what the standard library refuses, orjson reads as ever
            return _strict_loads(data)
        except (ValueError, RecursionError):
            pass
    orjson = _orjson or _load()
    try:
        message = orjson.loads(data)
    except orjson.JSONDecodeError as first:
        try:  # the standard library takes what orjson refuses: escaped lone surrogates
            return _strict_loads(data)
        except RecursionError:
            raise ValueError("nested too deeply") from None
        except (ValueError, UnicodeDecodeError):
            raise ValueError(str(first)) from None
    # orjson reads an integer past 64 bits as a float (an id or a context value 2**70
    # would come back as 1.1805916207174113e+21); the standard library keeps it exact.
    # Only a text with digits enough for such an integer, holding a float id or a float
    # that large, is read again (a float written with an exponent, `1e19`, reads the
    # same in both parsers).
    if (type(data) is not bytes or len(data) - len(data.translate(None, _DIGITS)) >= _WIDE_DIGITS) and (
        _float_id(message) or may_hold_wide_integers(message)
    ):
        try:
            return _strict_loads(data)
        except RecursionError:
            return message
    return message


_DIGITS = b"0123456789"
_WIDE_DIGITS = 19  # an integer orjson reads as a float (2**64 and past) has at least 20


def _float_id(message: Any) -> bool:
    if isinstance(message, dict):
        return type(message.get("id")) is float
    if isinstance(message, list):
        return any(isinstance(m, dict) and type(m.get("id")) is float for m in message)
    return False


def _strict_loads(data: bytes | str) -> Any:
    """The standard library, held to what orjson accepts: UTF-8 only, no NaN or Infinity."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return json.loads(text, parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def encode_document(value: Any) -> bytes:
    """A document as compact UTF-8 JSON (a workflow's source, which workflow_get sends):
    orjson, else the standard library (RecursionError or ValueError when it cannot)."""
    orjson = _orjson or _load()
    try:
        return orjson.dumps(value)  # type: ignore[no-any-return]
    except TypeError:  # orjson refuses integers past 64 bits, and nesting deeper than 254
        data = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    if _deeper_than(value, _ORJSON_DEPTH):
        raise ValueError(f"nested deeper than {_ORJSON_DEPTH} levels")
    return data


_ORJSON_DEPTH = 254  # the deepest nesting orjson reads or writes


def _deeper_than(value: Any, levels: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > levels:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, dict | list))
    return False


def json_size(value: Any) -> int:
    """Bytes of `value` as compact UTF-8 JSON (numbers past 64 bits and lone surrogates
    included): what a size limit counts."""
    orjson = _orjson or _load()
    try:
        return len(orjson.dumps(value))
    except TypeError:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return len(text.encode("utf-8", "surrogatepass"))


def encode_stored(value: Any) -> str:
    """A value as the text of a store's JSON column. What orjson refuses (integers past 64
    bits, lone surrogates) the standard library writes in ASCII escapes, so that no value
    can make the row unwritable, after a space (still JSON) that tells `decode_stored`
    to read it back the same way: orjson would turn such integers into floats. A process
    that has not loaded orjson (a gate hook recording a refusal: the import costs more
    than its write) writes with the standard library the text that reads back the same."""
    if _orjson is None:
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError):  # a type only orjson writes (a datetime), NaN: orjson says
            pass
        else:
            if text.isascii() or _utf8(text):
                return " " + _ascii(value) if _holds_wide_integer(value) else text
            return " " + _ascii(value)
    orjson = _orjson or _load()
    try:
        return orjson.dumps(value).decode()  # type: ignore[no-any-return]
    except TypeError:
        return " " + _ascii(value)


def _ascii(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def _utf8(text: str) -> bool:
    """Whether `text` holds no lone surrogate (which orjson refuses, and UTF-8 cannot hold)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_INT64 = (-(2**63), 2**64 - 1)  # the integers orjson writes and reads exactly


def _holds_wide_integer(value: Any) -> bool:
    """Whether `value` holds an integer orjson refuses to write."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif isinstance(item, int) and not _INT64[0] <= item <= _INT64[1]:
            return True
    return False


BIG_STORED = 32 * 1024  # past this, orjson's faster reading pays back its import


def decode_stored(text: str) -> Any:
    """A store's JSON column read back. The text is orjson's own (or, after a space,
    json's escaped form), which json reads to the same value; so a process that has not
    loaded orjson (a gate hook: its import costs more than the hook's whole reading)
    reads a small column with json."""
    if text.startswith(" ") or (_orjson is None and len(text) <= BIG_STORED):
        return json.loads(text)
    return (_orjson or _load()).loads(text)


def decode_exact(text: str) -> Any:
    """A document read strictly (orjson's rules: json.JSONDecodeError, with its position,
    for what it refuses) and exactly (an integer past 64 bits stays an integer)."""
    document = (_orjson or _load()).loads(text)
    if not may_hold_wide_integers(document):
        return document
    try:  # orjson read such an integer as a float; the standard library keeps it exact
        return json.loads(text)
    except RecursionError:
        return document


def source_revision(body: bytes) -> str:
    """`Workflow.revision` of a workflow file's bytes, a UTF-8 BOM left out: hashed once
    per file read, by the catalog (or by the compiler when nobody has). Here, not with
    the workflow model, so that the catalog lists files without loading the model."""
    from handrail.internals import sha256  # CPython's own SHA-256: no OpenSSL before the first answer

    return sha256(body).hexdigest()[:16]  # type: ignore[no-any-return]
