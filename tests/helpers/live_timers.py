"""A test-only hook: `handrail` whose `workflow_get` of `live-timers` answers how many
header timers and request objects the server process holds, counted through `gc`.
Run it as `[*PROGRAM, "serve", ...]`."""

from __future__ import annotations

import sys

LIVE_TIMERS = """
import asyncio
import gc
from handrail.service.core import Service
from uvicorn.protocols.http.h11_impl import RequestResponseCycle

_original = Service.workflow_get


def _armed(thing):
    callback = getattr(thing, "_callback", None)  # None once the timer is cancelled
    return isinstance(thing, asyncio.TimerHandle) and getattr(callback, "__name__", "") == "_header_timeout"


def workflow_get(self, snapshot, args):
    if args["id"] == "live-timers":
        gc.collect()
        objects = gc.get_objects()
        return {
            "timers": sum(1 for thing in objects if _armed(thing)),
            "requests": sum(1 for thing in objects if isinstance(thing, RequestResponseCycle)),
        }
    return _original(self, snapshot, args)


Service.workflow_get = workflow_get
import sys
from handrail.cli import main
raise SystemExit(main(sys.argv[1:]))
"""
PROGRAM = (sys.executable, "-c", LIVE_TIMERS)
