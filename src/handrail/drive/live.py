"""What `handrail drive` shows while it runs. At a terminal: one live line per step
(the step, its attempt, the agent, the time it has taken, its cost) with a bar of its
attempts, drawn by `rich`, the driver's other lines printed above them. Elsewhere (a
log file, CI): the driver's plain lines only, one per event."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Protocol, TextIO


class Watcher(Protocol):
    def say(self, line: str) -> None: ...

    def began(self, key: Any, step: str, attempt: int, agent: str) -> None: ...

    def ended(self, key: Any, accepted: bool, cost_usd: float) -> None: ...

    def close(self) -> None: ...


class Plain:
    """One plain line per event on `out`."""

    def __init__(self, out: TextIO = sys.stderr) -> None:
        self.out = out

    def say(self, line: str) -> None:
        print(f"handrail drive: {line}", file=self.out, flush=True)

    def began(self, key: Any, step: str, attempt: int, agent: str) -> None:
        return None  # the driver's own line says it

    def ended(self, key: Any, accepted: bool, cost_usd: float) -> None:
        return None

    def close(self) -> None:
        return None


class Live:
    """The live lines at a terminal (`rich.progress`), one task per step."""

    def __init__(self, attempts: int, out: TextIO = sys.stderr) -> None:
        from rich.console import Console  # lazy: only a terminal's drive loads rich
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn  # lazy: as Console

        self.attempts = attempts
        self.progress = Progress(
            TextColumn("[bold]{task.fields[step]}"),
            BarColumn(bar_width=20),
            TextColumn("attempt {task.fields[attempt]}/{task.total:.0f}"),
            TextColumn("{task.fields[agent]}"),
            TimeElapsedColumn(),
            TextColumn("${task.fields[cost]:.4f}"),
            TextColumn("{task.fields[state]}"),
            console=Console(file=out),
            auto_refresh=True,
        )
        self.tasks: dict[Any, Any] = {}
        self.progress.start()

    def say(self, line: str) -> None:
        self.progress.console.print(f"handrail drive: {line}", markup=False, highlight=False)

    def began(self, key: Any, step: str, attempt: int, agent: str) -> None:
        task = self.tasks.get(key)
        fields: dict[str, Any] = {"step": step, "attempt": attempt, "agent": agent}
        if task is None:
            self.tasks[key] = self.progress.add_task(
                step, total=self.attempts, completed=attempt - 1, cost=0.0, state="running", **fields
            )
        else:
            self.progress.update(task, completed=attempt - 1, state="running", **fields)

    def ended(self, key: Any, accepted: bool, cost_usd: float) -> None:
        task = self.tasks.get(key)
        if task is None:
            return
        done = self.progress.tasks[task].fields["attempt"]
        state = "accepted" if accepted else "not accepted"
        self.progress.update(task, completed=self.attempts if accepted else done, cost=cost_usd, state=state)
        if accepted:
            self.progress.stop_task(task)

    def close(self) -> None:
        self.progress.stop()


def watcher(at_terminal: Callable[[], bool], attempts: int) -> Watcher:
    return Live(attempts) if at_terminal() else Plain()
