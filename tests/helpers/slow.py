"""A test-only hook: `handrail` whose `workflow_get` of `slow-<seconds>` keeps the CPU
busy that long, as a costly request would (holding the interpreter, not sleeping).
Run it as `[*PROGRAM, "start" | "serve", ...]`."""

from __future__ import annotations

import sys

SLOW = """
import time
from handrail.service.core import Service

_original = Service.workflow_get


def workflow_get(self, snapshot, args):
    if args["id"].startswith("slow-"):
        end = time.monotonic() + float(args["id"][5:])
        while time.monotonic() < end:  # busy, as a costly request is
            pass
        return {"slow": True}
    return _original(self, snapshot, args)


Service.workflow_get = workflow_get
import sys
from handrail.cli import main
raise SystemExit(main(sys.argv[1:]))
"""
PROGRAM = (sys.executable, "-c", SLOW)
