"""``PersistenceBase``: the bookkeeping every backend keeps the same way, so a backend writes
only its storage."""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import itertools
from typing import Generic, NoReturn, TypeVar

from dsh_persistence._barrier import flush_handles
from dsh_persistence._errors import (
    PersistenceClosedError,
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
)
from dsh_persistence._handle_base import SessionHandleBase
from dsh_persistence._protocols import Access
from dsh_persistence._snapshot import SessionSnapshot
from dsh_persistence._validation import materialize_create_header
from dsh_session import SessionHeader

__all__ = ["PersistenceBase"]

H = TypeVar("H", bound=SessionHandleBase)


class PersistenceBase(Generic[H]):
    """A `SessionPersistence` without its storage: subclass it and write the storage alone.

    The base keeps this instance's books and the rules the contract suite certifies for them:

    - **single writer in this process**: a write claim per session id, taken before any await
      (a second ``create`` raises `SessionAlreadyExistsError`, a second ``open(id, "write")``
      `SessionAlreadyOwnedError`) and released when the attempt fails or the handle closes;
    - **pending creates**: a created session that nothing was written to yet is visible to this
      instance only (``stat`` and ``list`` show it with revision ``"pending:<token>"``, a token
      new per create) and, closed unwritten, never existed;
    - the **create precheck** (`materialize_create_header`), the argument checks of ``open``,
      and `PersistenceClosedError` naming the instance (its ``repr``) on every call after
      ``aclose``;
    - ``flush`` as the barrier over every active write handle (`flush_handles`), and
      ``aclose`` closing every handle (failures raised together as an ``ExceptionGroup``)
      before ``_close_storage``.

    A subclass calls ``super().__init__()`` and implements the storage, all ``async``:

    - ``_claim_new(header, inherited_event_count)``: refuse an id that is stored or being
      created elsewhere (`SessionAlreadyExistsError`), take the cross-process claim, and return
      the write handle of the new, not yet materialized session;
    - ``_open_writer(session_id)``: take the cross-process claim (`SessionAlreadyOwnedError`),
      check the stored log and return a write handle (releasing the claim when this fails);
    - ``_open_reader(session_id)``: a read handle; ``self._pending_handle(session_id)`` is
      this instance's pending create of that id, if any (the log it reads is empty so far);
    - ``_stat_stored(session_id)`` and ``_list_stored()``: snapshots of what is stored;
    - ``_close_storage()`` (optional): release what the instance holds, after its handles.

    Its handles subclass `SessionHandleBase` and report ``materialized`` (false until the first
    append or flush of a created session). The base binds every handle it hands out to these
    books: a closed handle drops out of them by itself, and ``handle._session_pending()`` tells
    whether its session is such a pending create.
    """

    def __init__(self) -> None:
        self._pending: dict[str, H] = {}
        self._pending_tokens: dict[str, int] = {}
        self._writers: dict[str, H | None] = {}
        self._handles: set[H] = set()
        self._tokens = itertools.count(1)
        self._closed = False

    # -- what a subclass writes -------------------------------------------------------------

    async def _claim_new(self, header: SessionHeader, inherited_event_count: int) -> H:
        """The write handle of a new session, once its id is claimed here and elsewhere."""
        raise NotImplementedError

    async def _open_writer(self, session_id: str) -> H:
        """A write handle over the stored session, holding its cross-process claim."""
        raise NotImplementedError

    async def _open_reader(self, session_id: str) -> H:
        """A read handle over the stored (or, here, pending) session."""
        raise NotImplementedError

    async def _stat_stored(self, session_id: str) -> SessionSnapshot | None:
        """The snapshot of a stored session, ``None`` when there is none."""
        raise NotImplementedError

    async def _list_stored(self) -> builtins.list[SessionSnapshot]:
        """The snapshots of every stored session."""
        raise NotImplementedError

    async def _close_storage(self) -> None:
        """Release the instance's own resources (its handles are closed already)."""

    # -- the books, for the subclass and its handles ----------------------------------------

    def _check_instance(self, operation: str, session_id: str = "") -> None:
        """Raise `PersistenceClosedError` naming this instance once it is closed."""
        if self._closed:
            raise PersistenceClosedError(session_id, backend=repr(self), operation=operation)

    def _pending_handle(self, session_id: str) -> H | None:
        """This instance's create of ``session_id`` while nothing is written to it."""
        handle = self._pending.get(session_id)
        return handle if handle is not None and not handle.materialized else None

    def _is_pending(self, session_id: str) -> bool:
        """Whether ``session_id`` is a create of this instance with nothing written yet."""
        return self._pending_handle(session_id) is not None

    def _forget(self, handle: H) -> None:
        """Drop a closed handle from the books (a create closed unwritten never existed)."""
        self._handles.discard(handle)
        session_id = handle.id
        if self._writers.get(session_id) is handle:
            del self._writers[session_id]
        if self._pending.get(session_id) is handle:
            del self._pending[session_id]
            self._pending_tokens.pop(session_id, None)

    def _pending_snapshot(self, handle: H) -> SessionSnapshot:
        token = self._pending_tokens.get(handle.id, 0)
        return SessionSnapshot(header=handle.header, revision=f"pending:{token}", event_count=0)

    # -- the service ------------------------------------------------------------------------

    async def create(self, header: SessionHeader, *, inherited_event_count: int = 0) -> H:
        """Start a session (materialized by its first append or flush); its write handle.

        Raises `SessionAlreadyExistsError` if the id is stored, pending here, or being
        created by another instance or process.
        """
        self._check_instance("create", header.id)
        materialize_create_header(header, inherited_event_count)
        session_id = header.id
        if session_id in self._pending or session_id in self._writers:
            raise SessionAlreadyExistsError(session_id)
        self._writers[session_id] = None  # the claim; released on any failure below
        self._pending_tokens[session_id] = next(self._tokens)
        try:
            handle = await self._claim_new(header, inherited_event_count)
        except BaseException:
            self._release_claim(session_id)
            self._pending_tokens.pop(session_id, None)
            raise
        if self._closed:  # aclose() ran while storage claimed it: hand nothing out
            self._release_claim(session_id)
            self._pending_tokens.pop(session_id, None)
            await self._refuse_late(handle, "create", session_id)
        self._pending[session_id] = handle
        self._writers[session_id] = handle
        self._adopt(handle)
        return handle

    async def open(self, session_id: str, access: Access) -> H:
        """Open a stored (or, in this instance, pending) session for ``"read"`` or ``"write"``.

        A write open raises `SessionAlreadyOwnedError` while any other write handle of the
        session exists; one that fails for any reason releases its claim.
        """
        self._check_instance("open", session_id)
        if access not in ("read", "write"):
            raise ValueError(f"access must be 'read' or 'write', got {access!r}")
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str, got {type(session_id).__name__}")
        if access == "read":
            handle = await self._open_reader(session_id)
            if self._closed:  # aclose() ran while storage opened it
                await self._refuse_late(handle, "open", session_id)
            self._adopt(handle)
            return handle
        if session_id in self._writers:
            raise SessionAlreadyOwnedError(session_id)
        self._writers[session_id] = None  # the claim; released on any failure below
        try:
            handle = await self._open_writer(session_id)
        except BaseException:
            self._release_claim(session_id)
            raise
        if self._closed:  # aclose() ran while storage opened it: release, hand nothing out
            self._release_claim(session_id)
            await self._refuse_late(handle, "open", session_id)
        self._writers[session_id] = handle
        self._adopt(handle)
        return handle

    def _adopt(self, handle: H) -> None:
        """Enter a handle storage gave out into the books, bound to leave them once closed."""
        handle._bind(self._forget, self._is_pending)
        self._handles.add(handle)

    async def _refuse_late(self, handle: H, operation: str, session_id: str) -> NoReturn:
        """Close a handle storage gave out after ``aclose()`` began (so no lock or claim
        outlives the instance) and raise the closed error for the call."""
        with contextlib.suppress(Exception):  # the call fails as closed whatever close says
            await handle.close()
        self._check_instance(operation, session_id)
        raise AssertionError("unreachable: the instance is closed")

    def _release_claim(self, session_id: str) -> None:
        if session_id in self._writers and self._writers[session_id] is None:
            del self._writers[session_id]

    async def stat(self, session_id: str) -> SessionSnapshot | None:
        """The snapshot of one session, without reading its body; ``None`` if absent."""
        self._check_instance("stat", session_id)
        pending = self._pending_handle(session_id)
        if pending is not None:
            return self._pending_snapshot(pending)
        return await self._stat_stored(session_id)

    async def list(self) -> builtins.list[SessionSnapshot]:
        """Every visible session (stored, plus this instance's pending creates)."""
        self._check_instance("list")
        pending = [h for h in self._pending.values() if not h.materialized]
        snapshots = await self._list_stored()
        if pending:
            seen = {snapshot.header.id for snapshot in snapshots}
            snapshots.extend(self._pending_snapshot(h) for h in pending if h.id not in seen)
        return snapshots

    async def flush(self) -> None:
        """Durability barrier over every write handle active now; failures are aggregated."""
        self._check_instance("flush")
        await flush_handles([h for h in self._writers.values() if h is not None])

    async def aclose(self) -> None:
        """Close every handle of this instance (releasing every claim), then its storage.

        Idempotent; every later call on the instance raises `PersistenceClosedError`.
        """
        if self._closed:
            return
        self._closed = True
        handles = builtins.list(self._handles)
        results = await asyncio.gather(*(h.close() for h in handles), return_exceptions=True)
        await self._close_storage()
        errors = [r for r in results if isinstance(r, Exception)]
        if errors:
            raise ExceptionGroup(f"closing {len(errors)} handle(s) failed", errors)
