"""The other checks, run on what can be read of a file that fails the schema, so
that one run of `handrail check` shows every problem: an unknown field does not hide
a bad loop body, a bad regex or a file-name warning.

The builder expects the shapes the schema guarantees, so it runs on a copy in which
what it cannot read is filled in (texts missing → "") or left out (a step without
an id, a loop without a readable `loop`); what the schema already said about a place
is not said again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from handrail.compiler.build import build_workflow
from handrail.compiler.checks import CHECK_FIELDS, COMMON_FIELDS
from handrail.model.errors import Finding, Reporter

_LOOP_KINDS = ("while", "until", "for", "forEach")


def readable_checks(document: Any, text: str, file: str, report: Reporter) -> None:
    copy = _readable_workflow(document, file)
    if copy is None:
        return
    # a shape no one foresaw stops these checks; the schema's errors stand alone then
    with contextlib.suppress(Exception):
        build_workflow(copy, "", file, report)  # only its findings are wanted: no revision


def not_said_already(late: list[Finding], said: list[Finding]) -> list[Finding]:
    """`late` without what falls where the schema already reported a problem (an
    unknown or missing field is reported on its object, so what lies inside is kept)."""
    places = {pointer for code, _, _, pointer, *_ in said if code not in ("H100", "H101")}
    places |= {pointer for code, _, _, pointer, *_ in said if code == "H101"}
    return [
        item
        for item in late
        if not any(item.pointer == p or item.pointer.startswith(p + "/") for p in places if p)
    ]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _readable_workflow(document: Any, file: str) -> dict[str, Any] | None:
    if not isinstance(document, Mapping) or not isinstance(document.get("steps"), list):
        return None
    copy = dict(document)
    if not isinstance(copy.get("id"), str) or not copy["id"]:
        copy["id"] = PurePath(file).stem  # no id to compare with the file name
    for key in ("name", "description", "version"):
        copy[key] = _text(copy.get(key))
    for key in ("metaGuidance", "preconditions", "clarificationPrompts"):
        value = copy.get(key)
        copy[key] = [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
    copy["steps"] = _readable_steps(copy["steps"])
    return copy


def _readable_steps(steps: list[Any]) -> list[Any]:
    """Steps with an id, in place (indexes, hence pointers, kept): an unreadable step
    becomes a plain step with a fresh id that no other check will mention."""
    out: list[Any] = []
    for index, raw in enumerate(steps):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str):
            out.append({"id": f"\0unreadable-{index}", "title": "", "prompt": ""})
            continue
        step = dict(raw)
        step["title"], step["prompt"] = _text(step.get("title")), _text(step.get("prompt"))
        if step.get("type") == "loop":
            cfg, body = step.get("loop"), step.get("body")
            readable = (
                isinstance(cfg, Mapping)
                and cfg.get("type") in _LOOP_KINDS
                and isinstance(cfg.get("maxIterations"), int | float)
                and not isinstance(cfg.get("maxIterations"), bool)
                and isinstance(body, str | list)
            )
            if not readable:
                step.pop("type")
            elif isinstance(body, list):
                step["body"] = _readable_steps(body)
        for key in ("guidance", "functionReferences"):
            value = step.get(key, [])
            if not (isinstance(value, list) and all(isinstance(g, str) for g in value)):
                step.pop(key)
        for key in ("validationCriteria", "functionDefinitions"):
            if key in step and not isinstance(step[key], list | Mapping):
                step.pop(key)
        if "checks" in step:
            if isinstance(step["checks"], list):
                step["checks"] = [_readable_check(item) for item in step["checks"]]
            else:
                step.pop("checks")
        out.append(step)
    return out


# A check the compiler reads without a word: it stands in for one it cannot read, so
# that the checks after it keep their indexes (hence their pointers).
_SILENT_CHECK = {"type": "git", "changes": True, "message": ""}


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_FIELD_READABLE = {
    "run": lambda v: _strings(v) or (isinstance(v, Mapping) and isinstance(v.get("command"), str)),
    "exitCode": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "timeoutSeconds": _number,
    "path": lambda v: isinstance(v, str),
    "contains": lambda v: isinstance(v, str),
    "changes": lambda v: isinstance(v, bool),
    "clean": lambda v: isinstance(v, bool),
    "paths": _strings,
}


def _readable_check(raw: Any) -> Any:
    """The check as the compiler can read it: an unknown type, or a field of the wrong
    type (the schema has said so), makes it the silent check; an unknown field is left
    out (the schema has named it)."""
    if not isinstance(raw, Mapping) or raw.get("type") not in CHECK_FIELDS:
        return _SILENT_CHECK
    known = {field for fields in CHECK_FIELDS.values() for field in fields} | set(COMMON_FIELDS)
    check = {key: value for key, value in raw.items() if key in known}
    if not all(_FIELD_READABLE[key](value) for key, value in check.items() if key in _FIELD_READABLE):
        return _SILENT_CHECK
    check["message"] = _text(check.get("message"))
    return check
