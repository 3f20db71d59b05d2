"""SKILL.md front matter is YAML (issue 36 §6): block scalars, quotes and comments mean what they
mean in YAML; a front matter that is not YAML, not a mapping or too large is refused naming the
file, and the skill is skipped with a warning while the others are still offered."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dsh_agent_core import SkillFileError, discover_skills
from dsh_agent_core._skills import MAX_FRONT_MATTER_BYTES, front_matter, read_skill


def skill(root: Path, folder: str, text: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_folded_description_is_its_text_not_the_indicator(tmp_path: Path) -> None:
    path = skill(
        tmp_path,
        "pdf",
        "---\nname: pdf-tools\ndescription: >\n  Fill PDF forms\n  and merge files.\n---\nBody\n",
    )
    found = read_skill(path)
    assert found is not None
    assert (found.name, found.description) == ("pdf-tools", "Fill PDF forms and merge files.")


def test_a_literal_description_keeps_its_words_on_one_line(tmp_path: Path) -> None:
    path = skill(tmp_path, "lit", "---\ndescription: |\n  First line.\n  Second line.\n---\n")
    found = read_skill(path)
    assert found is not None
    assert found.description == "First line. Second line."
    assert found.name == "lit"  # no name: the folder's


def test_quotes_colons_and_comments_are_yaml(tmp_path: Path) -> None:
    text = (
        "---\n# a comment line\nname: 'quoted: name'\n"
        'description: "Use when: the user asks # not a comment"  # a comment\n'
        "allowed-tools: [read, grep]\n---\n"
    )
    found = read_skill(skill(tmp_path, "q", text))
    assert found is not None
    assert found.name == "quoted: name"
    assert found.description == "Use when: the user asks # not a comment"


def test_front_matter_that_is_not_yaml_is_refused_naming_file_and_line(tmp_path: Path) -> None:
    path = skill(tmp_path, "bad", "---\nname: bad\ndescription: [unclosed\n---\n")
    with pytest.raises(SkillFileError) as caught:
        front_matter(path, path.read_text())
    assert caught.value.path == path
    assert str(caught.value).startswith(f"skill {path}: the front matter is not valid YAML at line")


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("- a list\n- not a mapping\n", "the front matter is a YAML list, not a mapping of keys"),
        ("name: x\ndescription: {nested: map}\n", "description is a YAML dict, not text"),
        ("name: [a]\ndescription: d\n", "name is a YAML list, not text"),
        ("name: !!python/object/apply:os.system [x]\ndescription: d\n", "not valid YAML"),
    ],
    ids=["list", "mapping-description", "list-name", "python-tag"],
)
def test_front_matter_that_is_not_a_skill_is_refused_naming_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, body: str, problem: str
) -> None:
    path = skill(tmp_path, "x", f"---\n{body}---\n")
    with caplog.at_level(logging.WARNING, logger="dsh_agent_core"):
        assert read_skill(path) is None
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.startswith(f"skill {path}: ")
    assert problem in warning


def test_front_matter_over_the_bound_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    filler = "# " + "x" * 98 + "\n"
    body = filler * (MAX_FRONT_MATTER_BYTES // len(filler) + 1)
    path = skill(tmp_path, "big", f"---\ndescription: d\n{body}---\n")
    with pytest.raises(SkillFileError, match="the front matter is over 64 KiB"):
        front_matter(path, path.read_text())


def test_a_bad_skill_is_skipped_with_a_warning_naming_it_and_the_others_stay(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    skill(tmp_path, "broken", "---\ndescription: 'unclosed\n---\n")
    skill(tmp_path, "good", "---\ndescription: >-\n  Works.\n---\n")
    with caplog.at_level(logging.WARNING, logger="dsh_agent_core"):
        found = discover_skills(tmp_path)
    assert [s.name for s in found] == ["good"]
    warnings = [r.getMessage() for r in caplog.records]
    assert any(
        "broken/SKILL.md: the front matter is not valid YAML" in w and w.endswith("; skipped")
        for w in warnings
    )
