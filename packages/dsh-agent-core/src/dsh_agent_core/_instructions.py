"""Project instructions: ``AGENTS.md`` files, offered to the model in the session prefix."""

from __future__ import annotations

import asyncio
import codecs
import logging
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dsh_agent import Agent, PrefixNext
from dsh_agent_core._files import UnreadableFileError, read_regular_head
from dsh_llm import Message, PluginSource, UserMessage

__all__ = [
    "INSTRUCTIONS_PLUGIN",
    "INSTRUCTION_FILE_NAMES",
    "MAX_INSTRUCTIONS_BYTES",
    "InstructionFile",
    "LoadedInstructions",
    "ProjectInstructions",
    "find_git_root",
    "instruction_files",
    "load_instructions",
]

_log = logging.getLogger("dsh_agent_core")

INSTRUCTIONS_PLUGIN = "dsh-instructions"
"""The plugin name on the instructions message's source."""

INSTRUCTION_FILE_NAMES = ("AGENTS.md", "CLAUDE.md")
"""The file read at each directory level: the first one that is a file (``CLAUDE.md`` only
where there is no ``AGENTS.md``)."""

MAX_INSTRUCTIONS_BYTES = 64 * 1024
"""The bytes of instructions read in total (and so at most from any one file)."""


@dataclass(frozen=True, slots=True)
class InstructionFile:
    """One file's instructions: its path, its text, and its size in bytes when it was cut
    there (``None``: read whole)."""

    path: Path
    text: str
    cut_at: int | None = None


@dataclass(frozen=True, slots=True)
class LoadedInstructions:
    """What was read, in order, and the files the total cap left unread."""

    files: tuple[InstructionFile, ...]
    omitted: tuple[Path, ...] = ()
    max_bytes: int = MAX_INSTRUCTIONS_BYTES


def find_git_root(cwd: str | os.PathLike[str]) -> Path | None:
    """The nearest enclosing git root: ``cwd`` or its nearest ancestor holding ``.git`` (a
    directory, or a file as in a worktree or submodule); ``None`` when there is none."""
    start = Path(os.path.abspath(cwd))
    for folder in (start, *start.parents):
        if os.path.exists(folder / ".git"):
            return folder
    return None


def _level_file(folder: Path) -> Path | None:
    """The instructions file of one directory: ``AGENTS.md``, else ``CLAUDE.md``; anything but
    a regular file of that name (a symlink to one is one) is not one, and is named in a
    warning (a FIFO, a device or a directory is never opened)."""
    for name in INSTRUCTION_FILE_NAMES:
        candidate = folder / name
        try:
            mode = os.stat(candidate).st_mode  # follows symlinks; opens nothing
        except OSError:
            continue
        if stat.S_ISREG(mode):
            return candidate
        _log.warning("instructions %s are not read: it is not a regular file", candidate)
    return None


def instruction_files(home: Path, cwd: str | os.PathLike[str] | None) -> list[Path]:
    """The files an agent working in ``cwd`` is given, in order: the DSH home's, then one per
    directory from the project root (the nearest git root, :func:`find_git_root`) down to
    ``cwd``; without a git root only ``cwd``'s. A file reached twice (the home inside the
    project) is given once, at its first place."""
    folders = [home]
    if cwd is not None:
        here = Path(os.path.abspath(cwd))
        root = find_git_root(here)
        if root is None:
            folders.append(here)
        else:
            folders.append(root)
            for part in here.relative_to(root).parts:
                folders.append(folders[-1] / part)
    found: list[Path] = []
    seen: set[str] = set()
    for folder in folders:
        path = _level_file(folder)
        if path is None:
            continue
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            found.append(path)
    return found


def _read(path: Path, budget: int, cap: int) -> InstructionFile | None:
    """At most ``budget`` bytes of ``path`` as text (never a byte more is read); ``None``
    (logged, naming the file and why) when it is not a regular file, cannot be read or is not
    UTF-8. A FIFO or a device is never waited on (``read_regular_head``)."""
    try:
        raw, more = read_regular_head(path, budget)
    except UnreadableFileError as error:
        _log.warning("instructions %s: %s; skipped", path, error.problem)
        return None
    except OSError as error:
        _log.warning("instructions %s cannot be read: %s", path, error)
        return None
    try:  # a cut may split a character: an incomplete tail is dropped, invalid bytes are not
        text = codecs.getincrementaldecoder("utf-8")().decode(raw, final=not more)
    except UnicodeDecodeError as error:
        _log.warning("instructions %s are not UTF-8 (%s): skipped", path, error.reason)
        return None
    if not more:
        return InstructionFile(path, text)
    cut = len(text.encode("utf-8"))
    _log.warning(
        "instructions %s: cut at byte %d (the instructions are at most %d bytes in total)",
        path,
        cut,
        cap,
    )
    return InstructionFile(path, text, cut_at=cut)


def load_instructions(
    paths: Sequence[Path], *, max_bytes: int = MAX_INSTRUCTIONS_BYTES
) -> LoadedInstructions:
    """Read ``paths`` in order until ``max_bytes`` are read in all: the file that reaches the cap
    is cut there (never read past it) and later ones are omitted. An unreadable or non-UTF-8
    file is skipped with a warning naming it, and costs nothing; an empty file gives nothing."""
    files: list[InstructionFile] = []
    budget = max_bytes
    for index, path in enumerate(paths):
        if budget <= 0:
            omitted = tuple(paths[index:])
            _log.warning(
                "instructions over %d bytes: not read: %s",
                max_bytes,
                ", ".join(str(p) for p in omitted),
            )
            return LoadedInstructions(tuple(files), omitted, max_bytes)
        read = _read(path, budget, max_bytes)
        if read is None:
            continue
        budget -= read.cut_at if read.cut_at is not None else len(read.text.encode("utf-8"))
        if read.cut_at is not None:
            budget = 0  # the cap is reached (a split character's bytes count as read)
        if read.text.strip():
            files.append(read)
    return LoadedInstructions(tuple(files), (), max_bytes)


class ProjectInstructions:
    """A ``session_prefix`` listener that offers the agent's instruction files as one plugin
    message (plugin ``dsh-instructions``, form ``snapshot``).

    The files (:func:`instruction_files`: ``<home>/AGENTS.md``, then the project root's down to
    the agent's cwd, ``CLAUDE.md`` where a level has no ``AGENTS.md``) are read when the loop
    composes the prefix, once per loop instance: a resume reads them again. No text, no message.
    """

    def __init__(self, home: Path, *, max_bytes: int = MAX_INSTRUCTIONS_BYTES) -> None:
        self.home = home
        self.max_bytes = max_bytes

    def files(self, cwd: str | None) -> list[Path]:
        """The files given to an agent working in ``cwd``, in order."""
        return instruction_files(self.home, cwd)

    def load(self, cwd: str | None) -> LoadedInstructions:
        """Read the files of ``cwd`` within the cap."""
        return load_instructions(self.files(cwd), max_bytes=self.max_bytes)

    def message(self, loaded: LoadedInstructions) -> UserMessage | None:
        """The instructions message for ``loaded`` (``None`` when nothing was read)."""
        if not loaded.files:
            return None
        parts = [
            "<project-instructions>\nInstructions for this workspace from AGENTS.md (or "
            "CLAUDE.md) files: the DSH home's first, then the project's from its root down to "
            "the working directory. Follow them; where two disagree, the later (more specific) "
            "one wins."
        ]
        for file in loaded.files:
            body = file.text.rstrip("\n")
            if file.cut_at is not None:
                body += (
                    f"\n[cut here, at byte {file.cut_at} of {file.path}: the instructions are "
                    f"capped at {loaded.max_bytes} bytes in total]"
                )
            parts.append(f'<instructions path="{file.path}">\n{body}\n</instructions>')
        if loaded.omitted:
            names = ", ".join(str(path) for path in loaded.omitted)
            parts.append(f"[not read, over the {loaded.max_bytes}-byte cap: {names}]")
        text = "\n\n".join(parts) + "\n</project-instructions>"
        return UserMessage.from_text(
            text, source=PluginSource(plugin=INSTRUCTIONS_PLUGIN, form="snapshot")
        )

    async def __call__(self, agent: Agent, next_: PrefixNext) -> Sequence[Message]:
        """Prepend the instructions (when there are any) to what later listeners compose."""
        loaded = await asyncio.to_thread(self.load, agent.cwd)
        later = await next_()
        message = self.message(loaded)
        return [message, *later] if message is not None else list(later)
