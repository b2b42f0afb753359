"""A bounded pool of worker threads for protocol work, off the event loop.

`handrail serve` answers each request on one of `workers` threads, so one slow
request leaves the event loop free: /healthz and other clients keep answering. At
most `workers + max_queued` requests are in hand at once; one more is refused at
once (`Busy`) instead of waiting in a queue without bound.

The threads are daemons: a request still running when the server stops (after its
graceful shutdown timeout) does not keep the process alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger("handrail.transport.workers")


def default_workers() -> int:
    """Enough threads that a few slow requests leave room for quick ones; more would only
    share the interpreter lock with them."""
    return max(4, min(32, (os.cpu_count() or 1) * 4))


class Busy(Exception):
    """Every worker is busy and the queue is full."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the server has {limit} requests in hand already")
        self.limit = limit


class WorkerPool:
    def __init__(self, workers: int, max_queued: int) -> None:
        if workers < 1 or max_queued < 0:
            raise ValueError("a pool needs at least one worker and a queue of zero or more")
        self.workers = workers
        self.capacity = workers + max_queued
        self._slots = threading.BoundedSemaphore(self.capacity)
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._start_lock = threading.Lock()

    def _start(self) -> None:
        with self._start_lock:
            while len(self._threads) < self.workers:
                thread = threading.Thread(
                    target=self._work, name=f"handrail-worker-{len(self._threads)}", daemon=True
                )
                thread.start()
                self._threads.append(thread)

    def _work(self) -> None:
        while True:
            self._jobs.get()()

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """`function(*args)` on a worker; raises Busy when the pool is full."""
        if not self._slots.acquire(blocking=False):
            raise Busy(self.capacity)
        if len(self._threads) < self.workers:
            self._start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def settle(outcome: Callable[[], None]) -> None:
            if not future.done():  # the request may have been cancelled (client gone, shutdown)
                outcome()

        def job() -> None:
            outcome: Callable[[], None]
            try:
                result = function(*args)
                outcome = lambda: future.set_result(result)  # noqa: E731
            except BaseException as exc:
                failure = exc
                outcome = lambda: future.set_exception(failure)  # noqa: E731
            finally:
                # freed before the answer can reach the client: its next request finds room
                self._slots.release()
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
                loop.call_soon_threadsafe(settle, outcome)

        self._jobs.put(job)
        return await future
