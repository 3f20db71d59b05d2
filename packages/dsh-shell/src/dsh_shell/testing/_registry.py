"""Clauses: an id, what they check, the capabilities they need, and their coroutine."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from dsh_shell.testing._context import ClauseContext

ClauseBody = Callable[[ClauseContext], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Clause:
    """One checkable promise of the executor contract."""

    id: str
    description: str
    requires: frozenset[str]
    body: ClauseBody


class ClauseGroup:
    """An ordered group of clauses, filled by the `clause` decorator at import."""

    def __init__(self) -> None:
        self.clauses: list[Clause] = []

    def clause(self, *requires: str) -> Callable[[ClauseBody], ClauseBody]:
        """Register the decorated coroutine; its name is the id, its docstring the text."""

        def register(body: ClauseBody) -> ClauseBody:
            name = getattr(body, "__name__", "")
            doc = (getattr(body, "__doc__", None) or "").strip()
            self.clauses.append(Clause(name, doc, frozenset(requires), body))
            return body

        return register
