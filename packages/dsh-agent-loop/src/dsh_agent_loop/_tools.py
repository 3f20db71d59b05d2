"""Running the tool calls of one answer: a bounded pool for concurrency-safe calls, barriers for
the rest, results committed in model order, and a result for every call whatever happens."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from dsh_agent_loop._errors import CheckpointError
from dsh_llm import ToolCallBlock
from dsh_session import Session, tool_result_data
from dsh_tools import (
    Approver,
    ToolAbortedError,
    ToolCaller,
    ToolOutputListener,
    ToolRegistry,
    ToolResult,
)

__all__ = ["ToolBatch", "skipped_result"]


def skipped_result(code: str, message: str) -> ToolResult:
    """The error result of a call that never ran (``Error: <message>``)."""
    if code == "ABORTED_BEFORE_DISPATCH":
        return ToolResult.from_exception(ToolAbortedError(before_dispatch=True))
    return ToolResult.failure(message, code=code, name="ToolNotRunError")


class ToolBatch:
    """The calls of one assistant message, run and logged.

    Each started call logs ``tool/call`` first, then passes the ``before-tool`` checkpoint, then
    runs through the registry. Its ``tool/result`` (citing the call's seq) is committed as soon
    as every earlier call's result is, so results are in model order. Calls the registry calls
    concurrency-safe run in a pool of at most ``max_parallel``; any other call runs alone.

    When the turn is cancelled, started calls are drained (the registry gives them
    ``ABORTED``); a failed checkpoint stops new calls. Calls that never started get a synthetic
    ``tool/call`` + error ``tool/result`` pair (``ABORTED_BEFORE_DISPATCH`` or
    ``CHECKPOINT_FAILED``), so the log stays valid for any provider. ``on_output`` watches
    every call's body (see ``ToolRegistry.execute``).
    """

    def __init__(
        self,
        *,
        session: Session,
        registry: ToolRegistry,
        caller: ToolCaller,
        calls: Sequence[ToolCallBlock],
        turn: int,
        step: int,
        checkpoint: Callable[[], Awaitable[None]],
        aborted: Callable[[], bool],
        max_parallel: int,
        approver: Approver | None = None,
        on_output: ToolOutputListener | None = None,
    ) -> None:
        self._session = session
        self._on_output = on_output
        self._registry = registry
        self._caller = caller
        self._calls = list(calls)
        self._turn = turn
        self._step = step
        self._checkpoint = checkpoint
        self._aborted = aborted
        self._max_parallel = max_parallel
        self._approver = approver
        self._results: list[ToolResult | None] = [None] * len(self._calls)
        self._call_seqs: list[int | None] = [None] * len(self._calls)
        self._committed = 0
        self._started = 0
        self._failure: CheckpointError | None = None

    def _log_call(self, index: int) -> None:
        call = self._calls[index]
        event = self._session.append(
            "tool/call",
            {
                "turn": self._turn,
                "step": self._step,
                "callId": call.id,
                "name": call.name,
                "arguments": call.arguments,
            },
        )
        self._call_seqs[index] = event.seq

    def _log_result(self, index: int, result: ToolResult) -> None:
        durable = result.to_durable()
        data = tool_result_data(
            self._turn,
            self._step,
            self._calls[index].id,
            durable["content"],
            is_error=durable["isError"],
            error=durable.get("error"),
            meta=durable.get("meta"),
        )
        call_seq = self._call_seqs[index]
        assert call_seq is not None, "a result is only logged after its call"
        self._session.append("tool/result", data, source_event_seqs=[call_seq])

    def _commit_ready(self) -> None:
        while self._committed < self._started:
            result = self._results[self._committed]
            if result is None:
                return
            self._log_result(self._committed, result)
            self._committed += 1

    def _stopping(self) -> bool:
        return self._failure is not None or self._aborted()

    async def _run_one(self, index: int) -> None:
        self._log_call(index)
        try:
            await self._checkpoint()
        except Exception as error:  # any failing policy fails closed: the body does not run
            failure = (
                error
                if isinstance(error, CheckpointError)
                else CheckpointError(self._session.id, error)
            )
            self._failure = failure
            self._results[index] = skipped_result(
                "CHECKPOINT_FAILED", f"tool call not run: {failure}"
            )
            return
        except asyncio.CancelledError:
            self._results[index] = skipped_result("ABORTED_BEFORE_DISPATCH", "")
            return
        self._results[index] = await self._registry.execute(
            self._calls[index], self._caller, approver=self._approver, on_output=self._on_output
        )

    def _concurrency_safe(self, index: int) -> bool:
        return self._registry.is_concurrency_safe(self._calls[index])

    async def _run_all(self, running: set[asyncio.Task[None]]) -> None:
        count = len(self._calls)
        while self._started < count and not self._stopping():
            if not self._concurrency_safe(self._started):
                self._started += 1
                await self._run_one(self._started - 1)
                self._commit_ready()
                continue
            while (
                self._started < count
                and not self._stopping()
                and self._concurrency_safe(self._started)
            ):
                while len(running) >= self._max_parallel:
                    done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                    running.difference_update(done)
                    self._commit_ready()
                if self._stopping():
                    break
                self._started += 1
                running.add(asyncio.ensure_future(self._run_one(self._started - 1)))
            while running:
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                running.difference_update(done)
                self._commit_ready()

    def _skip_from(self, start: int, result: ToolResult) -> None:
        for index in range(start, len(self._calls)):
            self._log_call(index)
            self._log_result(index, result)
        self._started = self._committed = len(self._calls)

    def skip(self, result: ToolResult) -> None:
        """Run none of the calls: log each as a ``tool/call`` + ``tool/result`` pair with
        ``result`` (for an answer whose calls must not run, such as one cut at max tokens)."""
        self._skip_from(0, result)

    async def run(self) -> None:
        """Run every call (see the class docstring). Raises ``CancelledError`` after logging
        when the turn was cancelled, and :class:`CheckpointError` when a checkpoint failed."""
        running: set[asyncio.Task[None]] = set()
        cancelled = False
        internal: Exception | None = None
        try:
            await self._run_all(running)
        except asyncio.CancelledError:
            cancelled = True
        except Exception as error:  # a scheduler bug: stop, drain, still give every call a result
            internal = error
        if running:
            for task in running:
                task.cancel()
            await asyncio.wait(running)
        for index in range(self._committed, self._started):  # started, but cancelled early
            if self._call_seqs[index] is None:
                self._log_call(index)
            if self._results[index] is None:
                self._results[index] = skipped_result("ABORTED_BEFORE_DISPATCH", "")
        self._commit_ready()
        cancelled = cancelled or self._aborted()
        if self._started < len(self._calls):
            if cancelled or self._failure is None:
                result = skipped_result("ABORTED_BEFORE_DISPATCH", "")
            else:
                result = skipped_result("CHECKPOINT_FAILED", f"tool call not run: {self._failure}")
            self._skip_from(self._started, result)
        if cancelled:
            raise asyncio.CancelledError
        if internal is not None:
            raise internal
        if self._failure is not None:
            raise self._failure
