"""The tools' meaning: argument checking, calling the engine, shaping results.

Both ways in (MCP tools/call and the seed's direct methods) come through
`Service.call`, so they cannot drift apart. Errors are raised as HandrailError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from handrail.catalog import Catalog, Snapshot
from handrail.errors import InvalidParams, WorkflowNotFound
from handrail.limits import Limits
from handrail.suggest import close_matches
from handrail.tooldefs import tool_names, tools, workflow_schema

if TYPE_CHECKING:
    from handrail.model import Workflow

Validator = Callable[[Any], Any]


class Encoded:
    """A result that is already JSON (a workflow's source, a cached listing): the protocol
    splices the bytes into its reply instead of parsing and encoding them again."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def value(self) -> Any:
        import orjson

        return orjson.loads(self.data)


class Service:
    def __init__(self, catalog: Catalog, limits: Limits | None = None) -> None:
        self.catalog = catalog
        self.limits = limits or Limits()
        from handrail import patterns

        patterns.set_timeout(self.limits.regex_timeout_ms)  # one engine per process
        self._validators: dict[str, Validator] = {}
        self._listing: tuple[Snapshot, Encoded] | None = None
        self._handlers: dict[str, Callable[[Snapshot, dict[str, Any]], Any]] = {
            "workflow_list": self.workflow_list,
            "workflow_get": self.workflow_get,
            "workflow_next": self.workflow_next,
            "workflow_validate": self.workflow_validate,
            "workflow_validate_json": self.workflow_validate_json,
            "workflow_get_schema": self.workflow_get_schema,
        }

    @staticmethod
    def knows(name: str) -> bool:
        return name in tool_names()

    def call(self, name: str, arguments: Any) -> Any:
        """The tool's JSON result: a dict, or an `Encoded` one (see `Encoded.value`)."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise InvalidParams(data={"details": "params must be an object"})
        self._limit(name, arguments)
        self._check(name, arguments)
        return self._handlers[name](self.catalog.snapshot(), arguments)

    def _limit(self, name: str, arguments: dict[str, Any]) -> None:
        """Refuse what is over a limit before anything else looks at it (see limits.py)."""
        limits = self.limits
        if _deeper_than(arguments, limits.max_depth):
            raise _over(
                "maxDepth", limits.max_depth, f"the arguments nest deeper than {limits.max_depth} levels"
            )
        if name == "workflow_validate":
            output = arguments.get("output")
            if isinstance(output, str) and len(output) > limits.max_output_length:
                raise _over(
                    "maxOutputLength",
                    limits.max_output_length,
                    f"output is {len(output)} characters long, over the limit of {limits.max_output_length}",
                )
        elif name == "workflow_next":
            steps = arguments.get("completedSteps")
            if isinstance(steps, list) and len(steps) > limits.max_completed_steps:
                raise _over(
                    "maxCompletedSteps",
                    limits.max_completed_steps,
                    f"completedSteps has {len(steps)} entries, "
                    f"over the limit of {limits.max_completed_steps}",
                )
        elif name == "workflow_validate_json":
            text = arguments.get("workflow")
            if isinstance(text, str) and _utf8_longer_than(text, limits.max_workflow_bytes):
                raise _over(
                    "maxWorkflowBytes",
                    limits.max_workflow_bytes,
                    f"workflow is longer than {limits.max_workflow_bytes} bytes",
                )
        context = arguments.get("context")
        if isinstance(context, dict) and context:
            size = _json_size(context)
            if size > limits.max_context_bytes:
                raise _over(
                    "maxContextBytes",
                    limits.max_context_bytes,
                    f"context is {size} bytes as JSON, over the limit of {limits.max_context_bytes}",
                )

    def _check(self, name: str, arguments: dict[str, Any]) -> None:
        validate = self._validators.get(name)
        if validate is None:
            import fastjsonschema

            schema = next(t["inputSchema"] for t in tools() if t["name"] == name)
            validate = self._validators[name] = fastjsonschema.compile(schema, use_default=False)
        import fastjsonschema

        try:
            validate(arguments)
        except fastjsonschema.JsonSchemaValueException as exc:
            raise InvalidParams(data={"details": _details(exc, arguments)}) from None

    def workflow(self, snapshot: Snapshot, workflow_id: str) -> Workflow:
        found = snapshot.get(workflow_id)
        if found is None:
            close = close_matches(workflow_id, snapshot.entries)
            data: dict[str, Any] = {"workflowId": workflow_id}
            if close:
                data["didYouMean"] = close
            raise WorkflowNotFound(data=data)
        return found

    def workflow_list(self, snapshot: Snapshot, args: dict[str, Any]) -> Encoded:
        cached = self._listing
        if cached is not None and cached[0] is snapshot:
            return cached[1]  # one listing per snapshot: snapshots never change
        import orjson

        listing = Encoded(orjson.dumps(self._listing_of(snapshot)))
        self._listing = (snapshot, listing)
        return listing

    @staticmethod
    def _listing_of(snapshot: Snapshot) -> dict[str, Any]:
        return {
            "workflows": [
                {
                    "id": w.id,
                    "name": w.name,
                    "description": w.description,
                    "category": w.category,
                    "version": w.version,
                }
                for w in snapshot.workflows
            ],
            "diagnostics": [d.as_dict() for d in snapshot.problems],
        }

    def workflow_get(self, snapshot: Snapshot, args: dict[str, Any]) -> Encoded:
        return Encoded(self.workflow(snapshot, args["id"]).document)

    def workflow_next(self, snapshot: Snapshot, args: dict[str, Any]) -> dict[str, Any]:
        from handrail.engine import next_step  # loaded after `initialize` (see handrail/__init__)

        workflow = self.workflow(snapshot, args["workflowId"])
        return next_step(
            workflow,
            args["completedSteps"],
            args.get("context"),
            current_step=args.get("currentStep"),
            state=args.get("state"),
        )

    def workflow_validate(self, snapshot: Snapshot, args: dict[str, Any]) -> dict[str, Any]:
        from handrail.engine import validate_output

        workflow = self.workflow(snapshot, args["workflowId"])
        return validate_output(workflow, args["stepId"], args["output"], args.get("context"))

    def workflow_validate_json(self, snapshot: Snapshot, args: dict[str, Any]) -> dict[str, Any]:
        from handrail.compiler import compile_text

        compiled = compile_text(args["workflow"], "<workflow>")
        return {
            "valid": compiled.workflow is not None,
            "diagnostics": [d.as_dict() for d in compiled.diagnostics],
        }

    def workflow_get_schema(self, snapshot: Snapshot, args: dict[str, Any]) -> dict[str, Any]:
        return dict(workflow_schema())


def _over(limit: str, value: int, details: str) -> InvalidParams:
    return InvalidParams(data={"details": details, "limit": limit, "value": value})


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` nests more than `limit` levels of objects and arrays (itself one).
    Iterative, so no nesting can exhaust the stack."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def _json_size(value: Any) -> int:
    """Bytes of `value` as compact JSON (numbers past 64 bits and lone surrogates included)."""
    import orjson

    try:
        return len(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        import json

        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return len(text.encode("utf-8", "surrogatepass"))


def _utf8_longer_than(text: str, limit: int) -> bool:
    if len(text) > limit:
        return True
    if len(text) * 4 <= limit:
        return False
    return len(text.encode("utf-8", "surrogatepass")) > limit


def _details(exc: Any, arguments: dict[str, Any]) -> str:
    """fastjsonschema's message, rephrased to name the parameter."""
    rule = getattr(exc, "rule", None)
    definition = getattr(exc, "rule_definition", None)
    path = [str(p) for p in (exc.path or [])[1:]]
    field = ".".join(path)
    target = exc.value if isinstance(getattr(exc, "value", None), dict) else arguments
    if rule == "required" and isinstance(definition, list):
        missing = [name for name in definition if name not in target] or definition
        prefix = f"{field}." if field else ""
        return f"{prefix}{missing[0]} is required"
    if rule == "additionalProperties":
        extra = sorted(set(target) - set(getattr(exc, "definition", {}).get("properties", {})))
        where = f" in {field}" if field else ""
        return f"unknown parameter {', '.join(extra)}{where}" if extra else "unknown parameter"
    message = str(exc.message)
    if message.startswith("data."):
        return message[len("data.") :]
    if message.startswith("data"):
        return "params" + message[len("data") :]
    return message
