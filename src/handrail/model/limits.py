"""Default limits, in one place (each is configurable where it applies).

`Limits` gathers those a server enforces on what clients send; `handrail start` and
`handrail serve` take an option for each. A request over a limit is refused with
-32602 (Invalid params) and `data` naming the limit and its value:
`{"details": ..., "limit": "maxOutputLength", "value": 1048576}`. A line over
`maxLineBytes` cannot be read, so its id is unknown: it is answered with -32600
(Invalid Request), id null, and the same `limit` and `value`.
"""

from typing import Any, NamedTuple, Self

MAX_FILE_BYTES = 1_000_000  # a workflow file larger than this is refused
MAX_LINE_BYTES = 4 * 1024 * 1024  # one JSON-RPC message on stdio or over HTTP
MAX_OUTPUT_LENGTH = 1024 * 1024  # characters of a workflow_validate output
MAX_CONTEXT_BYTES = 1024 * 1024  # a context, as JSON
MAX_DEPTH = 64  # how deeply the arguments of a tool call may nest
MAX_COMPLETED_STEPS = 10_000  # entries of completedSteps
REGEX_TIMEOUT_MS = 100  # one search on the backtracking regex engine (see handrail.patterns)
# A request's time budget (handrail.model.budget). Answers take well under a millisecond and
# compiling the largest workflow workflow_validate_json takes (1 MB) about a second;
# 5 s leaves room for a loaded machine and still ends a hostile request soon.
MAX_REQUEST_SECONDS = 5
MAX_REPLY_BYTES = MAX_LINE_BYTES  # a tool's result as JSON, templates' output included
MAX_WORKFLOW_STEPS = 5_000  # steps and loops of a workflow given to workflow_validate_json
MAX_WORKFLOW_DEPTH = 100  # how deeply that workflow's JSON nests
MAX_FOLDER_DEPTH = 32  # folders below a workflow source deeper than this are not entered
# Compiled workflows a server keeps (least recently used first out); the others are
# listed from a quick read and compiled again when asked for (handrail.catalog).
MAX_COMPILED_WORKFLOWS = 256
RELOAD_INTERVAL_S = 0.5  # a server gathers changed workflow files this long before a reload


class _Limits(NamedTuple):
    max_line_bytes: int = MAX_LINE_BYTES
    max_output_length: int = MAX_OUTPUT_LENGTH
    max_context_bytes: int = MAX_CONTEXT_BYTES
    max_depth: int = MAX_DEPTH
    max_completed_steps: int = MAX_COMPLETED_STEPS
    max_workflow_bytes: int = MAX_FILE_BYTES  # the text workflow_validate_json checks
    regex_timeout_ms: int = REGEX_TIMEOUT_MS
    max_request_seconds: int = MAX_REQUEST_SECONDS
    max_reply_bytes: int = MAX_REPLY_BYTES
    max_workflow_steps: int = MAX_WORKFLOW_STEPS
    max_workflow_depth: int = MAX_WORKFLOW_DEPTH


class Limits(_Limits):
    """Checked as they are made. A NamedTuple, not a dataclass: the ledger reads one
    constant of this module, and a gate hook that writes loads it (docs/performance.md)."""

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        made = super().__new__(cls, *args, **kwargs)
        for name, value in zip(made._fields, made, strict=True):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{wire_name(name)} must be a positive integer, not {value!r}")
        return made

    def describe(self) -> dict[str, Any]:
        """The limits by the names errors use for them."""
        return {wire_name(name): value for name, value in zip(self._fields, self, strict=True)}


def wire_name(field: str) -> str:
    """`max_output_length` -> `maxOutputLength`, as errors name a limit."""
    head, *rest = field.split("_")
    return head + "".join(part.capitalize() for part in rest)


# What the transports bound (`handrail serve`, `handrail start`); see SECURITY.md.
MAX_QUEUED_REQUESTS = 64  # requests waiting for a worker beyond those being worked on
HEADER_TIMEOUT_S = 10.0  # to send a request's headers, from connecting or from the previous answer
BODY_TIMEOUT_S = 30.0  # to send a request's body, once its headers are in
KEEP_ALIVE_S = 5  # an idle kept-alive connection is closed after this
MAX_CONNECTIONS = 1000  # open connections (and requests in hand) before new requests get 503
SHUTDOWN_TIMEOUT_S = 5.0  # on SIGTERM, how long requests in hand may still take


class TransportLimits(NamedTuple):
    workers: int = 0  # threads answering requests; 0: a default for this machine (transport/workers.py)
    max_queued: int = MAX_QUEUED_REQUESTS
    header_timeout: float = HEADER_TIMEOUT_S
    body_timeout: float = BODY_TIMEOUT_S
    keep_alive: int = KEEP_ALIVE_S
    max_connections: int = MAX_CONNECTIONS
    shutdown_timeout: float = SHUTDOWN_TIMEOUT_S
