"""What every JSON hook contract shares: reading one JSON object from stdin, with the
error that names what is wrong with it, and writing an answer as compact JSON; and
what the contracts that follow Claude Code's (Codex, Gemini CLI) share beyond that."""

import json
from collections.abc import Collection, Mapping
from typing import Any

from handrail.gate import Answer, HookInputError
from handrail.runs.gate import Action, Decision, EventKind, GateEvent

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
    except RecursionError:  # deeper than the reader goes: nothing in it can be judged
        raise HookInputError("hook input nests too deep to read") from None
    except json.JSONDecodeError as exc:
        what = exc.msg.removesuffix(" at")  # "Unterminated string starting at"
        raise HookInputError(
            f"hook input is not JSON ({what} at line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(body, dict):
        what = "a JSON array" if isinstance(body, list) else "not a JSON object"
        raise HookInputError(f"hook input is {what}, expected an object")
    return body


class Opened:
    """A hook's input, read and checked against the event the hook was installed for.
    Slotted, not a NamedTuple: every hook process makes this class, at a tenth of the cost."""

    __slots__ = (
        "body",
        "cwd",
        "kind",
        "name",
        "session",
    )

    def __init__(
        self, body: dict[str, Any], name: str, kind: EventKind, cwd: str, session: str | None
    ) -> None:
        self.body = body
        self.name = name  # the harness's hook_event_name
        self.kind = kind
        self.cwd = cwd
        self.session = session


def opened(body: dict[str, Any], event: tuple[str, EventKind]) -> Opened:
    """`body`: what `parse` read; `event`: the harness's name of the event the hook was
    installed for and the gate's kind of it."""
    name, kind = event
    check_event(body, name)
    session = body.get("session_id")
    return Opened(body, name, kind, absolute_cwd(body, name), session if isinstance(session, str) else None)


def session_start(read: Opened) -> GateEvent:
    source = read.body.get("source")
    return GateEvent("session", read.cwd, read.session, source if isinstance(source, str) else None)


def events_without_tool(read: Opened) -> list[GateEvent] | None:
    """The events of a session start, a prompt or a stop as Codex and Gemini CLI send
    them; None for a tool's event. The gate's own refusal of a stop comes back as a
    prompt and is no event."""
    if read.kind == "session":
        return [session_start(read)]
    if read.kind == "compact":
        trigger = read.body.get("trigger")
        return [GateEvent("compact", read.cwd, read.session, trigger if isinstance(trigger, str) else None)]
    if read.kind == "prompt" and from_the_gate(read.body.get("prompt")):
        return []
    if read.kind in ("prompt", "stop"):
        return [GateEvent(read.kind, read.cwd, read.session)]
    return None


class ToolCall:
    """A tool call's input as read. Slotted, not a NamedTuple: every hook process makes
    this class, at a tenth of the cost."""

    __slots__ = (
        "read",
        "tool",
        "tool_input",
    )

    def __init__(self, read: Opened, tool: str, tool_input: Mapping[str, Any]) -> None:
        self.read = read
        self.tool = tool
        self.tool_input = tool_input


def tool_call(data: bytes, event: "tuple[str, EventKind]") -> ToolCall | list[GateEvent]:
    """A tool's call, or the events of any other hook as Codex and Gemini CLI send them
    (see `events_without_tool`)."""
    read = opened(parse(data), event)
    events = events_without_tool(read)
    if events is not None:
        return events
    return ToolCall(read, tool_name(read.body, read.name), mapping(read.body.get("tool_input")))


class Tools:
    """A harness's tools that act on the workspace, each with the input fields that
    name what it acts on: the first of them present counts.
    Slotted, not a NamedTuple: every hook process makes this class, at a tenth of the cost."""

    __slots__ = (
        "edit",
        "read",
        "shell",
        "web",
    )

    def __init__(
        self,
        edit: Mapping[str, tuple[str, ...]],
        read: Mapping[str, tuple[str, ...]],
        shell: Collection[str],
        web: Mapping[str, str],
    ) -> None:
        self.edit = edit
        self.read = read
        self.shell = shell  # each names its command line in `command`
        self.web = web


def workspace_action(tool: str, tool_input: Mapping[str, Any], cwd: str, tools: Tools) -> Action | None:
    """The action of one of `tools`; None for any other tool. A read that names no path
    reads the working folder."""
    if tool in tools.edit:
        return Action("edit", first_text(tool_input, *tools.edit[tool]), tool)
    if tool in tools.read:
        return Action("read", first_text(tool_input, *tools.read[tool]) or cwd, tool)
    if tool in tools.shell:
        return Action("shell", text(tool_input.get("command")), tool)
    if tool in tools.web:
        return Action("web", text(tool_input.get(tools.web[tool])), tool)
    return None


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


# after a tool call: a block tells the agent what the gate undid (the call itself ran)
AFTER_TOOL = ("PostToolUse", "PostToolUseFailure")


def claude_style_answer(name: str, decision: Decision, stops: tuple[str, ...]) -> Answer:
    """The answer in the contract Claude Code and Codex share: allow is silence, a deny
    is PreToolUse's permissionDecision, a refused stop is `decision: "block"`, context
    is additionalContext. `name`: the harness's hook_event_name; `stops`: its stop events."""
    if decision.verdict == "deny" and name == "PreToolUse":
        body: dict[str, Any] = {
            "hookSpecificOutput": {
                "hookEventName": name,
                "permissionDecision": "deny",
                "permissionDecisionReason": decision.text,
            }
        }
    elif decision.verdict == "block" and (name in stops or name in AFTER_TOOL):
        body = {"decision": "block", "reason": decision.text}
    elif decision.verdict == "context" and name in ("SessionStart", "UserPromptSubmit"):
        body = {"hookSpecificOutput": {"hookEventName": name, "additionalContext": decision.text}}
    else:
        return Answer("", "", 0)
    return Answer(dump(body), "", 0)


def system_message(text: str) -> Answer:
    """The store could not be read and the gate lets the action through: a line the
    person sees (systemMessage), and the same on stderr."""
    return Answer(dump({"systemMessage": text}), text + "\n", 0)


def malformed(message: str) -> Answer:
    """Input the gate cannot read: exit 1, each harness's non-blocking error, with an
    empty stdout, which none of them obeys."""
    return Answer("", f"handrail gate: {message}\n", 1)


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


def claimed(response: Any) -> str | None:
    """The branch a `workflow_claim` answer gave the session (its runId, when it says
    `claimed`), read from the tool's response as the harness passes it on: the result's
    structured content, or its JSON text; None when it claimed nothing."""
    found = response
    if isinstance(found, Mapping) and "structuredContent" in found:
        found = found["structuredContent"]
    elif isinstance(found, Mapping) and "content" in found:
        found = found["content"]
    if isinstance(found, list):  # content blocks: the first text block holds the JSON
        found = next(
            (b.get("text") for b in found if isinstance(b, Mapping) and b.get("type") == "text"), None
        )
    if isinstance(found, str) and len(found) <= MAX_INPUT:
        try:
            found = json.loads(found)
        except ValueError:
            return None
    if isinstance(found, Mapping) and found.get("claimed") is True and isinstance(found.get("runId"), str):
        return str(found["runId"])[:100]
    return None
