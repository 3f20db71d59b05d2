"""Local skills: ``SKILL.md`` folders, offered to the model as a catalog in the session prefix."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dsh_agent import Agent, PrefixNext
from dsh_agent_core._errors import DshError
from dsh_agent_core._files import UnreadableFileError, read_regular_head
from dsh_llm import Message, PluginSource, UserMessage

__all__ = [
    "MAX_FRONT_MATTER_BYTES",
    "SKILLS_PLUGIN",
    "Skill",
    "SkillCatalog",
    "SkillFileError",
    "discover_skills",
    "front_matter",
    "read_skill",
]

_log = logging.getLogger("dsh_agent_core")

SKILLS_PLUGIN = "dsh-skills"
"""The plugin name on the catalog message's source."""

MAX_FRONT_MATTER_BYTES = 64 * 1024
"""The largest front matter parsed (64 KiB): a skill file is untrusted input, and its front
matter holds a name and a one-paragraph description."""

_MAX_SKILL_BYTES = 256 * 1024
_MAX_FIELD = 1024
_MAX_SKILLS = 200


class SkillFileError(DshError):
    """A ``SKILL.md`` whose front matter cannot be read: ``path`` names the file, ``problem``
    says what is wrong with it (not YAML, not a mapping, too large, a field that is not text)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"skill {path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill: its front-matter ``name`` and ``description``, and where its ``SKILL.md`` is."""

    name: str
    description: str
    path: Path


def front_matter(path: Path, text: str) -> dict[str, object] | None:
    """The front matter of the ``SKILL.md`` at ``path`` whose text is ``text``: the YAML
    mapping between a first line ``---`` and the next line ``---`` (so ``description: >`` and
    ``description: |`` block scalars, quotes and comments mean what they mean in YAML), or
    ``None`` when the file has no front matter. Raises `SkillFileError` naming the file when
    the front matter is not closed, is over `MAX_FRONT_MATTER_BYTES`, is not valid YAML, or is
    not a mapping. Parsed with PyYAML's safe loader: tags that build objects are refused."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None
    end = next((i for i, line in enumerate(lines) if i and line.strip() == "---"), None)
    if end is None:
        raise SkillFileError(path, "the front matter is not closed by a line '---'")
    source = "".join(lines[1:end])
    if len(source.encode("utf-8", errors="replace")) > MAX_FRONT_MATTER_BYTES:
        raise SkillFileError(path, f"the front matter is over {MAX_FRONT_MATTER_BYTES // 1024} KiB")
    import yaml  # with the first skill only: dsh --help has no use for it

    try:
        data = yaml.safe_load(source)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = "" if mark is None else f" at line {mark.line + 2}, column {mark.column + 1}"
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise SkillFileError(
            path, f"the front matter is not valid YAML{where}: {problem}"
        ) from None
    except RecursionError:
        raise SkillFileError(path, "the front matter nests too deep") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SkillFileError(
            path, f"the front matter is a YAML {type(data).__name__}, not a mapping of keys"
        )
    return {str(key): value for key, value in data.items()}


def _text_field(path: Path, fields: dict[str, object], key: str) -> str:
    value = fields.get(key)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise SkillFileError(path, f"{key} is a YAML {type(value).__name__}, not text")
    return str(value)[:_MAX_FIELD]


def read_skill(path: Path) -> Skill | None:
    """The skill a ``SKILL.md`` declares in its YAML front matter (``name``, default the
    folder's name, and ``description``), or ``None`` (logged, naming the file) when it declares
    none, cannot be read, or its front matter is refused (see `front_matter`). Only the first
    256 KiB are read; fields are capped at 1,024 characters and the description's whitespace is
    folded to single spaces. Anything but a regular file (a FIFO, a device, a directory) is
    never opened for reading: ``None``, logged naming it."""
    try:
        raw, _ = read_regular_head(path, _MAX_SKILL_BYTES)
    except UnreadableFileError as error:
        _log.warning("skill %s: %s; skipped", path, error.problem)
        return None
    except OSError as error:
        _log.warning("skill %s cannot be read: %s", path, error)
        return None
    try:
        fields = front_matter(path, raw.decode("utf-8", errors="replace"))
        if fields is None:
            _log.warning("skill %s has no front matter (a first line '---')", path)
            return None
        name = _text_field(path, fields, "name").strip() or path.parent.name
        description = " ".join(_text_field(path, fields, "description").split())
    except SkillFileError as error:
        _log.warning("%s; skipped", error)
        return None
    if not description:
        _log.warning("skill %s has no description", path)
        return None
    return Skill(name=name, description=description, path=path)


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
