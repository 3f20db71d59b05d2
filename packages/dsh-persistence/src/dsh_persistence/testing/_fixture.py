"""``PersistenceFixture``: the one thing a backend author hands to the contract suite."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from dsh_persistence._protocols import SessionPersistence

REOPEN = "reopen"
"""Capability: a second instance over the same storage sees what the first made durable."""
CROSS_PROCESS = "cross_process"
"""Capability: instances in child processes share the storage; ownership spans processes."""
CORRUPT_TAIL = "corrupt_tail"
"""Capability: the fixture can append a torn record to a closed session's log."""
PLAIN_PATH = "plain_path"
"""Capability: snapshots of materialized sessions carry a readable JSONL ``plain_path``."""
DAMAGE_EVENT = "damage_event"
"""Capability: the fixture can spoil one flushed event's stored record in place."""
REPLACE_RECORD = "replace_record"
"""Capability: the fixture can store given bytes as one flushed event's record in place."""

CAPABILITIES: dict[str, str] = {
    REOPEN: "a second instance() over the same storage sees what the first made durable, like "
    "another process reopening it (write ownership is exclusive across instances too)",
    CROSS_PROCESS: "child_factory rebuilds an instance over the same storage in a child process; "
    "write ownership is exclusive across processes and released when the holder exits or is "
    "killed (needs reopen)",
    CORRUPT_TAIL: "the corrupt_tail(session_id) hook appends a torn record after the committed "
    "log of a closed session (needs reopen)",
    DAMAGE_EVENT: "the damage_event(session_id, seq) hook spoils the stored record of one "
    "flushed event of a closed session in place (it no longer decodes) and leaves every other "
    "record intact, as a bad disk would (needs reopen)",
    REPLACE_RECORD: "the replace_record(session_id, seq, record) hook stores record (UTF-8 bytes: "
    "JSON that parses but is not a valid event: a list, a type that is not a string, a seq or "
    "time of the wrong type...) as the stored record of one flushed, unpacked event of a closed "
    "session, in place and in the form the backend stores records (compressed or framed as it "
    "would), leaving every other record intact (needs reopen)",
    PLAIN_PATH: "snapshots of materialized sessions carry plain_path, a UTF-8 JSONL file whose "
    "line 1 is the header export_session writes and whose rows decode (packed chunk rows "
    "expanded) to exactly the logical events; with unpacked rows its bytes equal the export",
}
"""Every capability a backend may declare, with what declaring it promises."""

_Maybe = Awaitable[Any] | Any


async def _resolve(value: _Maybe) -> Any:
    return await value if inspect.isawaitable(value) else value


@dataclass(frozen=True, kw_only=True)
class PersistenceFixture:
    """How the contract suite gets backend instances over one test's storage.

    - ``factory()``: a *new* backend instance over this fixture's storage (sync or async); the
      storage starts empty for every test, and the second call is "another process reopening";
    - ``capabilities``: the names of ``CAPABILITIES`` the backend declares; a clause needing an
      undeclared one is skipped with that reason, and nothing else skips;
    - ``corrupt_tail(session_id)``: with ``corrupt_tail``, append a torn record (half a line,
      half a frame) after the committed log of a closed session, out of band;
    - ``damage_event(session_id, seq)``: with ``damage_event``, spoil the stored record holding
      event ``seq`` of a closed session in place, out of band (a flipped byte, a line that is no
      longer JSON, a row that no longer decodes), leaving the records before and after intact;
    - ``replace_record(session_id, seq, record)``: with ``replace_record``, store ``record``
      (bytes of JSON text that is not a valid event) as the record of event ``seq`` (never part
      of a packed row) of a closed session, in place, out of band, as the backend stores a record
      (a line of the file, the payload column of its row, compressed or framed as the backend
      would), leaving the records before and after intact;
    - ``child_factory`` and ``child_args``: with ``cross_process``, ``"module:function"`` (or
      ``"/path/to/file.py:function"``) called in a child process as ``function(child_args)``
      (sync or async; ``child_args`` must be JSON-serializable) to rebuild an instance over the
      same storage;
    - ``cleanup()``: optional, run after each clause (sync or async);
    - ``clause_timeout``: seconds before a clause fails as a probable deadlock; it runs in its
      own thread, so a backend call that never yields is interrupted and fails too.
    """

    factory: Callable[[], _Maybe]
    capabilities: frozenset[str] = frozenset()
    corrupt_tail: Callable[[str], _Maybe] | None = None
    damage_event: Callable[[str, int], _Maybe] | None = None
    replace_record: Callable[[str, int, bytes], _Maybe] | None = None
    child_factory: str | None = None
    child_args: Any = None
    cleanup: Callable[[], _Maybe] | None = None
    clause_timeout: float = field(default=300.0)

    def __post_init__(self) -> None:
        capabilities = frozenset(self.capabilities)
        object.__setattr__(self, "capabilities", capabilities)
        unknown = sorted(capabilities - CAPABILITIES.keys())
        if unknown:
            raise ValueError(
                f"unknown capabilities {unknown}; the known ones are {sorted(CAPABILITIES)}"
            )
        if CORRUPT_TAIL in capabilities and self.corrupt_tail is None:
            raise ValueError("capability 'corrupt_tail' needs the corrupt_tail hook")
        if DAMAGE_EVENT in capabilities and self.damage_event is None:
            raise ValueError("capability 'damage_event' needs the damage_event hook")
        if REPLACE_RECORD in capabilities and self.replace_record is None:
            raise ValueError("capability 'replace_record' needs the replace_record hook")
        if CROSS_PROCESS in capabilities and not self.child_factory:
            raise ValueError("capability 'cross_process' needs child_factory ('module:function')")
        for needs_reopen in (CROSS_PROCESS, CORRUPT_TAIL, DAMAGE_EVENT, REPLACE_RECORD):
            if needs_reopen in capabilities and REOPEN not in capabilities:
                raise ValueError(f"capability {needs_reopen!r} needs 'reopen' too")
        if self.child_factory is not None and ":" not in self.child_factory:
            raise ValueError(
                f"child_factory must look like 'module:function', got {self.child_factory!r}"
            )

    async def instance(self) -> SessionPersistence:
        """A new backend instance over this fixture's storage."""
        persistence: SessionPersistence = await _resolve(self.factory())
        return persistence

    async def run_corrupt_tail(self, session_id: str) -> None:
        """Run the ``corrupt_tail`` hook."""
        if self.corrupt_tail is None:
            raise RuntimeError("this fixture has no corrupt_tail hook")
        await _resolve(self.corrupt_tail(session_id))

    async def run_damage_event(self, session_id: str, seq: int) -> None:
        """Run the ``damage_event`` hook."""
        if self.damage_event is None:
            raise RuntimeError("this fixture has no damage_event hook")
        await _resolve(self.damage_event(session_id, seq))

    async def run_replace_record(self, session_id: str, seq: int, record: bytes) -> None:
        """Run the ``replace_record`` hook."""
        if self.replace_record is None:
            raise RuntimeError("this fixture has no replace_record hook")
        await _resolve(self.replace_record(session_id, seq, record))

    async def run_cleanup(self) -> None:
        """Run the ``cleanup`` hook, if any."""
        if self.cleanup is not None:
            await _resolve(self.cleanup())
