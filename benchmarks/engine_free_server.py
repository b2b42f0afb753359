"""handrail less its engine: the real server (stdio loop, protocol, argument checks,
budget, tools/call wrapping), except that workflow_next and workflow_validate answer,
from the second call with the same arguments on, the result their first call gave.

Measured beside handrail and the replay floor (stdio_bench.py), it splits the gap
between the two: what is left between this server and the floor is the server's
framework; what is left between handrail and this server is the engine's own work
for each call (the walk, the rules, and encoding their answer).

    python benchmarks/engine_free_server.py WORKFLOWS_FOLDER
"""

from __future__ import annotations

import sys
from typing import Any

ENGINE_TOOLS = ("workflow_next", "workflow_validate")


def engine_free() -> None:
    """Make every Service made from now on answer the engine's tools from a memo."""
    import orjson

    from handrail.model.codec import Encoded, encode
    from handrail.service.core import Service

    made = Service.__init__

    def init(self: Service, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        for name in ENGINE_TOOLS:
            self._handlers[name] = _remembered(self._handlers[name], orjson.dumps, Encoded, encode)

    Service.__init__ = init  # type: ignore[method-assign]


def _remembered(handler: Any, dumps: Any, encoded: Any, encode: Any) -> Any:
    answers: dict[bytes, Any] = {}  # a benchmark's few distinct calls: no bound needed

    def answer(snapshot: Any, arguments: dict[str, Any]) -> Any:
        key = dumps(arguments)
        found = answers.get(key)
        if found is None:
            found = answers[key] = encoded(encode(handler(snapshot, arguments)))
        return found

    return answer


def main() -> int:
    engine_free()
    from handrail.cli import main as handrail

    return handrail(["start", "--workflows", sys.argv[1]])


if __name__ == "__main__":
    sys.exit(main())
