"""What every JSON hook contract shares: reading one JSON object from stdin, with the
error that names what is wrong with it, and writing an answer as compact JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from handrail.gate import HookInputError

MAX_INPUT = 1 << 20


def parse(data: bytes) -> dict[str, Any]:
    """The hook's input object; HookInputError says why there is none."""
    if len(data) > MAX_INPUT:
        raise HookInputError(f"hook input is larger than {MAX_INPUT} bytes")
    if not data.strip():
        raise HookInputError("hook input is empty")
    try:
        body = json.loads(data)
    except UnicodeDecodeError:
        raise HookInputError("hook input is not UTF-8") from None
    except json.JSONDecodeError as exc:
        what = exc.msg.removesuffix(" at")  # "Unterminated string starting at"
        raise HookInputError(
            f"hook input is not JSON ({what} at line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(body, dict):
        what = "a JSON array" if isinstance(body, list) else "not a JSON object"
        raise HookInputError(f"hook input is {what}, expected an object")
    return body


def check_event(body: Mapping[str, Any], name: str) -> None:
    said = body.get("hook_event_name")
    if said != name:
        raise HookInputError(f"hook_event_name is {shown(said)} but the hook was installed for '{name}'")


def absolute_cwd(body: Mapping[str, Any], name: str) -> str:
    cwd = body.get("cwd")
    if not isinstance(cwd, str) or not cwd.startswith("/"):
        raise HookInputError(f"{name} input has no absolute cwd")
    return cwd


def tool_name(body: Mapping[str, Any], name: str) -> str:
    tool = body.get("tool_name")
    if not isinstance(tool, str) or not tool:
        raise HookInputError(f"{name} input has no tool_name")
    return tool


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def dump(body: Mapping[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def first_text(values: Mapping[str, Any], *keys: str) -> str:
    """The first of `keys` that holds a string: harness releases rename their fields."""
    for key in keys:
        if isinstance(values.get(key), str) and values[key]:
            return str(values[key])
    return ""


def from_the_gate(prompt: Any) -> bool:
    """Whether a prompt is the gate's own refusal of a stop, which Gemini CLI and Codex
    send back to the agent as a prompt: not a person's prompt, so it restarts no count."""
    return isinstance(prompt, str) and prompt.startswith("handrail: ")


def shown(value: Any) -> str:
    return f"'{value[:60]}'" if isinstance(value, str) else "missing"
