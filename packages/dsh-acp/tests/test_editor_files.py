"""Files through the editor: which halves the editor's capabilities offer, the requests one
session sends (its id, the absolute path), and an editor's error answer as a typed error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    ReadTextFileResponse,
    WriteTextFileResponse,
)

from dsh_acp import EditorFileError, EditorFiles, editor_files


class Client:
    """The editor's end of ``fs/*``: answers from ``buffers``, or raises ``error``."""

    def __init__(self) -> None:
        self.buffers: dict[str, str] = {}
        self.requests: list[dict[str, Any]] = []
        self.error: RequestError | None = None

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:  # fmt: skip
        self.requests.append({"session": session_id, "path": path, "line": line, "limit": limit})
        if self.error is not None:
            raise self.error
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.requests.append({"session": session_id, "path": path, "content": content})
        if self.error is not None:
            raise self.error
        self.buffers[path] = content
        return WriteTextFileResponse()


def _capabilities(read: bool, write: bool) -> ClientCapabilities:
    return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=read, write_text_file=write))


def test_an_editor_offering_both_halves_holds_the_files() -> None:
    files = editor_files(Client(), "s1", _capabilities(True, True))
    assert isinstance(files, EditorFiles)
    assert (files.reads, files.writes) == (True, True)
    assert files.name == "the editor"


@pytest.mark.parametrize(("read", "write"), [(True, False), (False, True)], ids=["read", "write"])
def test_an_editor_offering_one_half_leaves_the_files_on_the_disk(read: bool, write: bool) -> None:
    """A version must be read where it is written: one half alone would make each edit on a
    copy the next one never sees."""
    assert editor_files(Client(), "s1", _capabilities(read, write)) is None


def test_without_fs_capabilities_the_disk_is_used() -> None:
    assert editor_files(Client(), "s1", _capabilities(False, False)) is None
    assert editor_files(Client(), "s1", ClientCapabilities()) is None


async def test_requests_name_the_session_and_the_whole_file() -> None:
    client = Client()
    client.buffers["/work/a.txt"] = "unsaved\n"
    files = EditorFiles(client, "s1", reads=True, writes=True)
    assert await files.read_text(Path("/work/a.txt")) == "unsaved\n"
    await files.write_text(Path("/work/a.txt"), "new\n")
    assert client.requests == [
        {"session": "s1", "path": "/work/a.txt", "line": None, "limit": None},
        {"session": "s1", "path": "/work/a.txt", "content": "new\n"},
    ]
    assert client.buffers["/work/a.txt"] == "new\n"


async def test_an_error_answer_is_a_typed_error_naming_path_and_session() -> None:
    client = Client()
    client.error = RequestError(-32603, "Internal error", {"details": "locked\n" + "x" * 500})
    files = EditorFiles(client, "s1", reads=True, writes=True)
    for request in (files.read_text(Path("/w/a")), files.write_text(Path("/w/a"), "x")):
        with pytest.raises(EditorFileError) as failed:
            await request
        error = failed.value
        assert (error.session_id, error.path, error.code) == ("s1", "/w/a", -32603)
        assert str(error).startswith("the editor answered error -32603: Internal error (locked x")
        assert len(error.detail) <= 200
        assert "\n" not in str(error)
