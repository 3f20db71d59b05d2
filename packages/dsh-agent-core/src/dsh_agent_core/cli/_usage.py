"""Token usage and cost as ``dsh`` shows them: one line after each turn of ``dsh run``, the
totals at the end of ``dsh sessions show``, a ``totals`` object in ``dsh sessions list --json``.

Every number comes from the log: each ``assistant/message`` carries the ``usage`` its model call
reported (``inputTokens`` without the cache reads and writes, ``cacheReadTokens``,
``cacheWriteTokens``, ``outputTokens``, ``reasoningTokens``: a part of the output) and the
``provenance`` (``provider``, ``model``) that says which prices apply. A call whose server
reported no usage counts in ``calls`` but adds no tokens (``unreported`` counts those)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from dsh_agent_core._catalog import ModelPrices
from dsh_session import SessionEvent, message_parts

__all__ = ["PricesOf", "UsageTotals", "session_totals", "totals_text", "turn_line", "turn_totals"]

PricesOf = Callable[[str, str], ModelPrices | None]
"""The prices of ``(provider, model)``, or ``None`` when unknown."""


def _count(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if type(value) is int and value >= 0 else 0


@dataclass
class UsageTotals:
    """Tokens and cost of some model calls. ``cost_usd`` is ``None`` when a call's model has
    no known prices or a call reported no usage (a partial sum would read as the whole);
    ``context`` is the size of the latest call (request and answer: what the next request
    starts from) and ``route`` its ``(provider, model)``."""

    calls: int = 0
    unreported: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float | None = 0.0
    context: int | None = None
    route: tuple[str, str] | None = None
    _priced: bool = field(default=True, repr=False)

    def add(self, data: dict[str, Any], prices_of: PricesOf) -> None:
        """Count one ``assistant/message`` (its ``data``)."""
        self.calls += 1
        parts = message_parts("assistant/message", data)  # either message shape
        provenance = None if parts is None else parts.source
        route = None
        if isinstance(provenance, dict):
            provider, model = provenance.get("provider"), provenance.get("model")
            if isinstance(provider, str) and isinstance(model, str):
                route = (provider, model)
                self.route = route
        usage = data.get("usage")
        if not isinstance(usage, dict):
            self.unreported += 1
            self.cost_usd = None  # what it cost is unknown, so is the sum
            return
        fresh, read = _count(usage, "inputTokens"), _count(usage, "cacheReadTokens")
        write, output = _count(usage, "cacheWriteTokens"), _count(usage, "outputTokens")
        self.input_tokens += fresh
        self.cache_read_tokens += read
        self.cache_write_tokens += write
        self.output_tokens += output
        self.reasoning_tokens += _count(usage, "reasoningTokens")
        self.context = fresh + read + write + output
        prices = prices_of(*route) if route is not None else None
        if prices is None or self.cost_usd is None:
            self.cost_usd = None
            return
        cached = prices.cached_input if prices.cached_input is not None else prices.input
        self.cost_usd += (
            (fresh + write) * prices.input + read * cached + output * prices.output
        ) / 1_000_000

    def to_json(self) -> dict[str, Any]:
        """``{calls, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens,
        reasoning_tokens, cost_usd}`` (``cost_usd`` ``null`` when unknown; ``unreported``: the
        calls whose server reported no usage)."""
        return {
            "calls": self.calls,
            "unreported": self.unreported,
            "input_tokens": self.input_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
        }


def _messages(events: Iterable[SessionEvent], turn: int | None) -> Iterable[dict[str, Any]]:
    for event in events:
        data: Any = event.data
        if event.type != "assistant/message" or not isinstance(data, dict):
            continue
        if turn is None or data.get("turn") == turn:
            yield data


def session_totals(events: Iterable[SessionEvent], prices_of: PricesOf) -> UsageTotals:
    """The totals of every model call ``events`` log."""
    totals = UsageTotals()
    for data in _messages(events, None):
        totals.add(data, prices_of)
    return totals


def turn_totals(events: Iterable[SessionEvent], turn: int, prices_of: PricesOf) -> UsageTotals:
    """The totals of the model calls of ``turn``."""
    totals = UsageTotals()
    for data in _messages(events, turn):
        totals.add(data, prices_of)
    return totals


def _cost(cost: float) -> str:
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def _calls(count: int) -> str:
    return f"{count} model call" if count == 1 else f"{count} model calls"


def _tokens_text(totals: UsageTotals) -> str:
    if totals.unreported == totals.calls:
        return f"tokens: not reported by the server ({_calls(totals.calls)})"
    read = totals.cache_read_tokens
    text = f"tokens in {totals.input_tokens + read + totals.cache_write_tokens:,}"
    text += f" (cached {read:,}), out {totals.output_tokens:,}"
    text += f" (reasoning {totals.reasoning_tokens:,})"
    if totals.unreported:
        text += f" · {_calls(totals.unreported)} without usage"
    return text


def _cost_text(totals: UsageTotals) -> str:
    if totals.cost_usd is None:
        return ""
    return f" · cost {_cost(totals.cost_usd)}"


def totals_text(totals: UsageTotals) -> str:
    """``tokens in N (cached N), out N (reasoning N)`` (in counts the cached tokens too) and,
    when every call's prices are known, ``· cost $X``."""
    return _tokens_text(totals) + _cost_text(totals)


def turn_line(totals: UsageTotals, window: int | None) -> str:
    """The line ``dsh run`` prints after a turn: its tokens, the context the latest call used
    (as a share of ``window`` when known), and the cost when the model's prices are known."""
    text = _tokens_text(totals)
    if totals.context is not None:
        share = f" of {window:,} ({100 * totals.context / window:.0f}%)" if window else ""
        text += f" · context {totals.context:,}{share}"
    return text + _cost_text(totals)
