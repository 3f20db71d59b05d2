"""Files through the editor: a session's ``read``, ``write`` and ``edit`` go to the editor's
``fs/read_text_file`` and ``fs/write_text_file`` when its ``initialize`` offered them
(``clientCapabilities.fs``), so the model reads the buffers the user sees, unsaved changes
included, and its edits land in the editor (which saves them as the user decides; dsh does not
write the disk on that path).

`EditorFiles` is the dsh-tool-fs ``FileAccess`` of one ACP session; the agent routes the
session's file tools through it (``harness.files.route_access``) while the session is attached.
The file tools keep every rule of the disk path: the path is resolved and checked by the
session's sandbox first (a refused call asks the editor nothing), the editor's answer is
bounded in size, each request in time, cancelling the turn cancels the request, and an error
or a lost connection fails that call naming the path. ``glob`` and ``grep`` search the disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from acp import RequestError
from acp.schema import (
    ClientCapabilities,
    ReadTextFileResponse,
    WriteTextFileResponse,
)

__all__ = ["EDITOR", "EditorFileError", "EditorFiles", "FsClient", "editor_files"]

EDITOR = "the editor"
"""How the tools' errors name who answers for the files."""

_DETAIL_CHARS = 200


class FsClient(Protocol):
    """The editor's end: ``fs/read_text_file`` and ``fs/write_text_file``."""

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        """The text of ``path`` as the editor holds it."""
        ...

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None:
        """Make the editor's ``path`` hold ``content``."""
        ...


class EditorFileError(Exception):
    """The editor answered an ``fs/*`` request of session ``session_id`` for ``path`` with a
    JSON-RPC error (``code``, and its message as ``detail``)."""

    def __init__(self, session_id: str, path: str, code: int, detail: str) -> None:
        super().__init__(f"the editor answered error {code}: {detail}")
        self.session_id = session_id
        self.path = path
        self.code = code
        self.detail = detail


def _detail(error: RequestError) -> str:
    """The editor's error message, with the ``details`` or ``message`` of its data when it has
    them (the SDK puts an editor's exception there), on one line and bounded."""
    text = str(error)
    data = error.data
    if isinstance(data, dict):
        extra = data.get("details", data.get("message"))
        if isinstance(extra, str) and extra and extra != text:
            text = f"{text} ({extra})"
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 1] + "…"


class EditorFiles:
    """One ACP session's files through the editor (a dsh-tool-fs ``FileAccess``): ``reads`` /
    ``writes`` are what the editor offered; a half it did not offer stays on the disk."""

    name = EDITOR

    def __init__(self, client: FsClient, session_id: str, *, reads: bool, writes: bool) -> None:
        self._client = client
        self.session_id = session_id
        self.reads = reads
        self.writes = writes

    async def read_text(self, path: Path) -> str:
        """The whole text the editor holds for ``path`` (its buffer when open, else the file)."""
        try:
            response = await self._client.read_text_file(session_id=self.session_id, path=str(path))
        except RequestError as error:
            raise EditorFileError(self.session_id, str(path), error.code, _detail(error)) from None
        return response.content

    async def write_text(self, path: Path, content: str) -> None:
        """Make the editor's ``path`` hold ``content``."""
        try:
            await self._client.write_text_file(
                session_id=self.session_id, path=str(path), content=content
            )
        except RequestError as error:
            raise EditorFileError(self.session_id, str(path), error.code, _detail(error)) from None


def editor_files(
    client: FsClient, session_id: str, capabilities: ClientCapabilities
) -> EditorFiles | None:
    """The files of ``session_id`` through the editor when its capabilities offer both
    ``fs.readTextFile`` and ``fs.writeTextFile`` (``None``: the disk, as without an editor; an
    editor that offers one half only is not used, since a version must be read where it is
    written)."""
    fs = capabilities.fs
    reads = bool(fs is not None and fs.read_text_file)
    writes = bool(fs is not None and fs.write_text_file)
    if not (reads and writes):
        return None
    return EditorFiles(client, session_id, reads=reads, writes=writes)
