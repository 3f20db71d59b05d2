"""The instance's database thread: runs submitted calls one at a time, in submission order.

Lighter than ``run_in_executor`` (one queue put, one ``call_soon_threadsafe`` back), which
matters because every append crosses it once. A call whose caller was cancelled before it started
is skipped; one already running completes (its effects are those of a completed call), so the
handles' state never diverges from the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...]]


def _resolve(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class DatabaseThread:
    """One daemon thread executing ``submit``-ted calls in order."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopped = False

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue ``fn(*args)``; the future resolves on the calling event loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._stopped:
                raise RuntimeError(f"{self._name} is stopped")
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._queue.put((loop, future, fn, args))
        return future

    def stop(self) -> None:
        """Finish the queued calls, then end the thread (idempotent; does not wait)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            if self._thread is not None:
                self._queue.put(None)

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            loop, future, fn, args = job
            if future.cancelled():  # its caller gave up before it started: nothing happens
                del job, future
                continue
            result: Any = None
            error: BaseException | None = None
            try:
                result = fn(*args)
            except BaseException as exc:  # handed to the awaiting task
                error = exc
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
                loop.call_soon_threadsafe(_resolve, future, result, error)
            del job, future, result, error
