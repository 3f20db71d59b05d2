"""PersistenceBase and SessionHandleBase: the README's minimal backend built on them passes the
contract, and the books they keep (claims, pending creates, closing) hold when storage fails."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence import (
    PersistenceBase,
    PersistenceClosedError,
    SessionAlreadyOwnedError,
    SessionHandleClosedError,
    SessionReadOnlyError,
)
from dsh_session import SessionHeader, decode_event

README = Path(__file__).resolve().parents[1] / "README.md"
_FENCE = re.compile(r"^```python\n(?P<body>.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def _readme_backend() -> dict[str, Any]:
    """Run the README's backend example (it validates itself) and return what it defined."""
    blocks = [m["body"] for m in _FENCE.finditer(README.read_text(encoding="utf-8"))]
    (code,) = [b for b in blocks if "class DictPersistence(PersistenceBase" in b]
    namespace: dict[str, Any] = {"__name__": "readme_backend"}
    exec(compile(code, f"{README}:DictPersistence", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def readme() -> dict[str, Any]:
    return _readme_backend()


def header(session_id: str) -> SessionHeader:
    return SessionHeader(id=session_id, created_at=1000)


EVENT = b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}'


def test_the_readme_backend_passes_every_clause_it_is_held_to(readme: dict[str, Any]) -> None:
    report = readme["report"]
    assert report.passed, report.ids("fail")
    assert issubclass(readme["DictPersistence"], PersistenceBase)


async def test_a_pending_create_is_seen_here_with_a_new_revision_per_create(
    readme: dict[str, Any],
) -> None:
    backend = readme["DictPersistence"]()
    first = await backend.create(header("s"))
    before = await backend.stat("s")
    assert before is not None
    assert before.revision.startswith("pending:")
    assert [s.id for s in await backend.list()] == ["s"]
    await first.close()
    assert await backend.stat("s") is None  # closed unwritten: it never existed
    second = await backend.create(header("s"))
    again = await backend.stat("s")
    assert again is not None
    assert again.revision != before.revision
    await second.append([decode_event(EVENT)])
    stored = await backend.stat("s")
    assert stored is not None
    assert not stored.revision.startswith("pending:")
    await backend.aclose()


async def test_a_failed_claim_releases_the_id(readme: dict[str, Any]) -> None:
    class FailsOnce(readme["DictPersistence"]):  # type: ignore[misc]
        failures = 1

        async def _claim_new(self, header: SessionHeader, inherited_event_count: int) -> Any:
            if self.failures:
                self.failures -= 1
                raise OSError("disk full")
            return await super()._claim_new(header, inherited_event_count)

    backend = FailsOnce()
    with pytest.raises(OSError, match="disk full"):
        await backend.create(header("s"))
    assert await backend.stat("s") is None
    handle = await backend.create(header("s"))
    assert handle.access == "write"
    await backend.aclose()


async def test_a_failed_write_open_releases_its_claim(readme: dict[str, Any]) -> None:
    class FailsOnce(readme["DictPersistence"]):  # type: ignore[misc]
        failures = 1

        async def _open_writer(self, session_id: str) -> Any:
            if self.failures:
                self.failures -= 1
                raise OSError("no permission")
            return await super()._open_writer(session_id)

    backend = FailsOnce()
    async with await backend.create(header("s")) as writer:
        await writer.flush()
    with pytest.raises(OSError, match="no permission"):
        await backend.open("s", "write")
    writer = await backend.open("s", "write")
    with pytest.raises(SessionAlreadyOwnedError):
        await backend.open("s", "write")
    await writer.close()
    await backend.aclose()


async def test_a_closed_instance_names_itself_and_the_call(readme: dict[str, Any]) -> None:
    backend = readme["DictPersistence"]()
    await backend.aclose()
    await backend.aclose()  # idempotent
    with pytest.raises(PersistenceClosedError, match=r"cannot stat session 's': DictPersistence"):
        await backend.stat("s")
    with pytest.raises(PersistenceClosedError, match=r"cannot flush: DictPersistence\(\) is"):
        await backend.flush()


async def test_aclose_closes_storage_after_the_handles_and_raises_their_failures(
    readme: dict[str, Any],
) -> None:
    order: list[str] = []

    class Handle(readme["DictHandle"]):  # type: ignore[misc]
        async def _close(self) -> None:
            order.append(f"handle {self.access}")
            await super()._close()
            if self.access == "read":
                raise OSError("release failed")

    class Backend(readme["DictPersistence"]):  # type: ignore[misc]
        async def _claim_new(self, header: SessionHeader, inherited_event_count: int) -> Any:
            return Handle(self, header, inherited_event_count, "write", materialized=False)

        async def _open_reader(self, session_id: str) -> Any:
            opened = await super()._open_reader(session_id)
            return Handle(self, opened.header, opened.inherited_event_count, "read")

        async def _close_storage(self) -> None:
            order.append("storage")

    backend = Backend()
    writer = await backend.create(header("s"))
    await backend.open("s", "read")
    with pytest.raises(ExceptionGroup) as raised:
        await backend.aclose()
    assert [str(e) for e in raised.value.exceptions] == ["release failed"]
    assert sorted(order[:2]) == ["handle read", "handle write"]
    assert order[2:] == ["storage"]
    with pytest.raises(SessionHandleClosedError):
        await writer.append([decode_event(EVENT)])


async def test_a_handle_closes_once_and_refuses_writes_by_access(readme: dict[str, Any]) -> None:
    closes: list[str] = []

    class Handle(readme["DictHandle"]):  # type: ignore[misc]
        async def _close(self) -> None:
            closes.append(self.id)
            await super()._close()

    backend = readme["DictPersistence"]()
    async with await backend.create(header("s")) as writer:
        await writer.flush()
    reader = Handle(backend, header("s"), 0, "read")
    with pytest.raises(SessionReadOnlyError):
        await reader.append([decode_event(EVENT)])
    await reader.close()
    await reader.close()
    assert closes == ["s"]
    with pytest.raises(SessionHandleClosedError):
        await reader.read()
    await backend.aclose()


async def test_a_closed_handle_leaves_the_books_without_calling_back(
    readme: dict[str, Any],
) -> None:
    backend = readme["DictPersistence"]()
    writer = await backend.create(header("s"))
    reader = await backend.open("s", "read")
    assert writer._session_pending()
    assert reader._session_pending()
    await reader.close()
    assert backend._handles == {writer}
    with pytest.raises(SessionAlreadyOwnedError):
        await backend.open("s", "write")
    await writer.close()  # the handle's _close does nothing: the base forgets it
    assert not backend._handles
    assert await backend.stat("s") is None  # a create closed unwritten never existed
    async with await backend.create(header("s")) as again:
        await again.flush()
        assert not again._session_pending()
    async with await backend.open("s", "write") as owner:
        assert not owner._session_pending()
    await backend.aclose()


async def test_a_handle_never_handed_out_is_in_no_books(readme: dict[str, Any]) -> None:
    backend = readme["DictPersistence"]()
    async with await backend.create(header("s")) as writer:
        await writer.flush()
    stray = readme["DictHandle"](backend, header("s"), 0, "write")
    assert not stray._session_pending()
    await stray.close()  # nothing to forget, nothing released that another handle holds
    async with await backend.open("s", "write") as owner:
        await stray.close()
        with pytest.raises(SessionAlreadyOwnedError):
            await backend.open("s", "write")
        assert backend._handles == {owner}
    await backend.aclose()
