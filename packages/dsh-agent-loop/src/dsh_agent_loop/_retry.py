"""The default retry policy: a ``request_error`` listener that retries transient failures in the
same step, logging ``llm/retry`` before the wait and ``llm/retry-started`` after it."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from dsh_agent import RequestError, RequestErrorDecision, Retry
from dsh_llm import RETRYABLE_FAILURE_CODES
from dsh_session import Session

__all__ = ["DEFAULT_RETRY_CODES", "RetryPolicy"]

DEFAULT_RETRY_CODES: tuple[str, ...] = tuple(sorted(str(code) for code in RETRYABLE_FAILURE_CODES))
"""The failure codes retried by default: ``dsh_llm.RETRYABLE_FAILURE_CODES``, sorted."""


class RetryPolicy:
    """Retry a failed model call up to ``max_retries`` times when its code is retryable.

    Delay before retry *n* (from 1): ``min(initial_delay_ms * 2**(n-1), max_delay_ms)`` scaled
    by a random factor in ``[1 - jitter, 1 + jitter]`` and capped at ``max_delay_ms``; a
    provider's ``retry_after_ms`` within the cap is used exactly, above it the failure is not
    retried. Retries of one step, route and policy form a chain with one ``retryId``, numbered
    from the log (so a resumed session keeps counting). Cancellation during the wait wins: the
    turn ends ``aborted`` and no ``llm/retry-started`` is logged. ``sleep`` and ``random`` are
    there for tests.
    """

    def __init__(
        self,
        *,
        max_retries: int = 5,
        codes: Iterable[str] = DEFAULT_RETRY_CODES,
        initial_delay_ms: int = 500,
        max_delay_ms: int = 10_000,
        jitter: float = 0.1,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        random: Callable[[], float] = random.random,
    ) -> None:
        if type(max_retries) is not int or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative integer, not {max_retries!r}")
        chosen = tuple(dict.fromkeys(codes))
        if not chosen or not all(isinstance(code, str) and code for code in chosen):
            raise ValueError("codes must be a non-empty list of non-empty strings")
        if not 0 <= initial_delay_ms <= max_delay_ms:
            raise ValueError("need 0 <= initial_delay_ms <= max_delay_ms")
        if not 0 <= jitter <= 1:
            raise ValueError(f"jitter must be within [0, 1], not {jitter!r}")
        self.max_retries = max_retries
        self.codes = frozenset(chosen)
        self.initial_delay_ms = initial_delay_ms
        self.max_delay_ms = max_delay_ms
        self.jitter = jitter
        self._sleep = sleep
        self._random = random
        self.key: list[Any] = [
            "normal",
            max_retries,
            sorted(self.codes),
            initial_delay_ms,
            max_delay_ms,
            jitter,
        ]
        """The policy key logged with each retry (retries under another policy count apart)."""

    def delay_ms(self, retry: int, retry_after_ms: int | None) -> int | None:
        """The wait before retry number ``retry``; ``None``: the provider asks for longer than
        the cap allows, so do not retry."""
        if retry_after_ms is not None and retry_after_ms > 0:
            return retry_after_ms if retry_after_ms <= self.max_delay_ms else None
        base = min(self.initial_delay_ms * 2 ** (retry - 1), self.max_delay_ms)
        factor = 1 - self.jitter + 2 * self.jitter * self._random()
        return int(min(base * factor, self.max_delay_ms))

    def _previous(self, session: Session, error: RequestError) -> tuple[int, str | None]:
        """The last retry number and id of this chain in the open step (0, None: none yet)."""
        events = session.events
        for index in range(len(events) - 1, -1, -1):
            event = events[index]
            if event.type == "step/start":
                break
            if event.type != "llm/retry":
                continue
            data: Any = event.data
            if (
                isinstance(data, dict)
                and data.get("turn") == error.turn
                and data.get("step") == error.step
                and data.get("provider") == error.config.provider
                and data.get("policyKey") == self.key
            ):
                return int(data.get("retry", 0)), data.get("retryId")
        return 0, None

    async def __call__(self, error: RequestError) -> RequestErrorDecision | None:
        """Decide on one failed call: ``Retry()`` after the wait, or ``None`` (not ours)."""
        failure = error.failure
        if not error.retryable or failure.code not in self.codes:
            return None
        session = error.agent.session
        previous, retry_id = self._previous(session, error)
        if previous >= self.max_retries:
            return None
        retry = previous + 1
        delay = self.delay_ms(retry, failure.retry_after_ms)
        if delay is None:
            return None
        retry_id = retry_id or str(uuid.uuid4())
        session.append(
            "llm/retry",
            {
                "retryId": retry_id,
                "turn": error.turn,
                "step": error.step,
                "provider": error.config.provider,
                "mode": "normal",
                "policyKey": self.key,
                "retry": retry,
                "maxRetries": self.max_retries,
                "delayMs": delay,
                "failure": failure.to_wire(),
            },
        )
        await self._sleep(delay / 1000)
        session.append(
            "llm/retry-started",
            {"retryId": retry_id, "turn": error.turn, "step": error.step, "retry": retry},
        )
        return Retry()
