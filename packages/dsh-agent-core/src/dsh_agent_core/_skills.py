"""Local skills: ``SKILL.md`` folders, offered to the model as a catalog in the session prefix."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dsh_agent import Agent, PrefixNext
from dsh_agent_core._files import UnreadableFileError, read_regular_head
from dsh_llm import Message, PluginSource, UserMessage

__all__ = ["SKILLS_PLUGIN", "Skill", "SkillCatalog", "discover_skills", "read_skill"]

_log = logging.getLogger("dsh_agent_core")

SKILLS_PLUGIN = "dsh-skills"
"""The plugin name on the catalog message's source."""

_MAX_SKILL_BYTES = 256 * 1024
_MAX_FIELD = 1024
_MAX_SKILLS = 200


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill: its front-matter ``name`` and ``description``, and where its ``SKILL.md`` is."""

    name: str
    description: str
    path: Path


def read_skill(path: Path) -> Skill | None:
    """The skill a ``SKILL.md`` declares in its front matter (``---`` lines around ``name:``
    and ``description:``), or ``None`` (logged) when it declares none or cannot be read.
    Only the first 256 KiB are read; fields are capped at 1,024 characters. Anything but a
    regular file (a FIFO, a device, a directory) is never opened for reading: ``None``, logged
    naming it."""
    try:
        raw, _ = read_regular_head(path, _MAX_SKILL_BYTES)
    except UnreadableFileError as error:
        _log.warning("skill %s: %s; skipped", path, error.problem)
        return None
    except OSError as error:
        _log.warning("skill %s cannot be read: %s", path, error)
        return None
    lines = raw.decode("utf-8", errors="replace").splitlines()
    if not lines or lines[0].strip() != "---":
        _log.warning("skill %s has no front matter (a first line '---')", path)
        return None
    fields: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            break
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("name", "description"):
            fields[key.strip()] = value.strip().strip("\"'")[:_MAX_FIELD]
    else:
        _log.warning("skill %s: front matter is not closed by '---'", path)
        return None
    name = fields.get("name") or path.parent.name
    description = fields.get("description", "")
    if not description:
        _log.warning("skill %s has no description", path)
        return None
    return Skill(name=name, description=" ".join(description.split()), path=path)


def discover_skills(*roots: Path) -> list[Skill]:
    """Skills under each root's ``<name>/SKILL.md``, in root order then name order; a name
    found twice keeps its first (the DSH home before the project)."""
    found: dict[str, Skill] = {}
    for root in roots:
        try:
            entries = sorted(os.scandir(root), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            if len(found) >= _MAX_SKILLS:
                _log.warning("more than %d skills: the rest are not offered", _MAX_SKILLS)
                return list(found.values())
            candidate = Path(entry.path) / "SKILL.md"
            if not entry.is_dir() or not os.path.lexists(candidate):
                continue
            skill = read_skill(candidate)
            if skill is not None and skill.name not in found:
                found[skill.name] = skill
    return list(found.values())


class SkillCatalog:
    """A ``session_prefix`` listener that offers the local skills as one plugin message.

    Skills come from ``<home>/skills/`` and the agent's project ``<cwd>/.dsh/skills/``, read
    when the loop composes the prefix (once per loop instance). No skill, no message.
    """

    def __init__(self, home: Path) -> None:
        self.home = home

    def roots(self, cwd: str | None) -> list[Path]:
        """Where skills are looked for, for an agent working in ``cwd``."""
        roots = [self.home / "skills"]
        if cwd is not None:
            roots.append(Path(cwd) / ".dsh" / "skills")
        return roots

    def message(self, skills: Sequence[Skill]) -> UserMessage:
        """The catalog message for ``skills``."""
        lines = [f"- {skill.name}: {skill.description} ({skill.path})" for skill in skills]
        text = (
            "<skills>\nSkills available in this workspace. Before a task one fits, read its "
            "SKILL.md with the tools you have, then follow it.\n" + "\n".join(lines) + "\n</skills>"
        )
        return UserMessage.from_text(
            text, source=PluginSource(plugin=SKILLS_PLUGIN, form="snapshot")
        )

    async def __call__(self, agent: Agent, next_: PrefixNext) -> Sequence[Message]:
        """Prepend the catalog (when there are skills) to what later listeners compose."""
        skills = await asyncio.to_thread(discover_skills, *self.roots(agent.cwd))
        later = await next_()
        return [self.message(skills), *later] if skills else list(later)
