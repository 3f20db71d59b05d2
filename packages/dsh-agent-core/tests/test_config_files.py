"""Files the configuration makes dsh read (issue 32, 3.7): the config file, instruction files and
skills are read only when they are regular files (a symlink to one is followed), bounded, and
never waited on. A config file that is a FIFO, a device, a directory, a dangling link or over
1 MiB stops ``dsh`` at once with one line naming it; an instruction file or a SKILL.md that is
one of those is skipped with a warning naming it.

The ``dsh`` cases run the installed console script in a real process with a bounded wait (a
regression that blocks fails on the timeout instead of hanging the run)."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from dsh_agent_core import ConfigError, load_config, load_instructions
from dsh_agent_core._files import MAX_CONFIG_BYTES, UnreadableFileError
from dsh_agent_core._skills import discover_skills, read_skill

DSH = Path(sys.executable).parent / "dsh"
TIMEOUT = 60.0
"""Seconds one dsh command may take: a safety net against a hang, not a speed bar."""


def _dsh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    assert DSH.exists(), f"the dsh console script is not installed next to {sys.executable}"
    return subprocess.run(
        [str(DSH), *args],
        env={**os.environ, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _directory(path: Path) -> None:
    path.mkdir()


def _dangling(path: Path) -> None:
    path.symlink_to(path.parent / "nowhere.toml")


def _too_big(path: Path) -> None:
    path.write_text('model = "scripted:m"\n' + "#" * MAX_CONFIG_BYTES + "\n")


ODD_CONFIGS: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (_fifo, "is a FIFO, not a regular file"),
    "dev-zero": (_zero, "is a character device, not a regular file"),
    "directory": (_directory, "is a directory, not a regular file"),
    "dangling-link": (_dangling, "is a symbolic link to a missing file"),
    "over-1-MiB": (_too_big, f"bytes; at most {MAX_CONFIG_BYTES} are read"),
}


@pytest.mark.parametrize("how", ["home", "DSH_CONFIG", "--config"])
@pytest.mark.parametrize("kind", list(ODD_CONFIGS))
def test_dsh_stops_at_once_naming_a_config_file_it_will_not_read(
    tmp_path: Path, kind: str, how: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    make, problem = ODD_CONFIGS[kind]
    path = home / "config.toml" if how == "home" else tmp_path / "elsewhere.toml"
    make(path)
    env = {"DSH_HOME": str(home)}
    args = ["config", "--dump"]
    if how == "DSH_CONFIG":
        env["DSH_CONFIG"] = str(path)
    elif how == "--config":
        args = ["--config", str(path), *args]
    ran = _dsh(*args, env=env, cwd=tmp_path)
    assert ran.returncode != 0
    (line,) = [x for x in ran.stderr.splitlines() if x.startswith("dsh: error: ")]
    assert line.startswith(f"dsh: error: config {path}: ")
    assert problem in line
    assert "Traceback" not in ran.stderr
    assert "MemoryError" not in ran.stderr


def test_a_config_file_reached_by_a_symlink_is_read(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    real = tmp_path / "dotfiles" / "dsh.toml"
    real.parent.mkdir()
    real.write_text('model = "scripted:from-the-link"\n')
    (home / "config.toml").symlink_to(real)
    ran = _dsh("config", "--dump", env={"DSH_HOME": str(home)}, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert 'model = "scripted:from-the-link"' in ran.stdout


def test_load_config_raises_a_config_error_naming_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    with _Unblocker(fifo) as guard, pytest.raises(UnreadableFileError) as refused:
        load_config(path=fifo, env={"DSH_HOME": str(tmp_path)})
    assert not guard.fired.is_set()
    assert isinstance(refused.value, ConfigError)
    assert refused.value.path == str(fifo)
    assert "a FIFO" in refused.value.problem


# -- instruction files and skills: skipped, named, never waited on ----------------------------


class _Unblocker:
    """Opens the write end of ``fifo`` if the code under test is still stuck on it after
    ``seconds`` (so a regression fails the test instead of hanging the run)."""

    def __init__(self, fifo: Path, seconds: float = 10.0) -> None:
        self.fifo = fifo
        self.fired = threading.Event()
        self.timer = threading.Timer(seconds, self._unblock)

    def _unblock(self) -> None:
        self.fired.set()
        with contextlib.suppress(OSError):  # nobody was waiting on it
            os.close(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))

    def __enter__(self) -> _Unblocker:
        self.timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.timer.cancel()


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_instruction_files_that_are_not_regular_files_are_skipped_by_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fifo = tmp_path / "fifo.md"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.md"
    zero.symlink_to("/dev/zero")
    folder = tmp_path / "folder.md"
    folder.mkdir()
    good = tmp_path / "good.md"
    good.write_text("be brief\n")
    with (
        caplog.at_level(logging.WARNING, logger="dsh_agent_core"),
        _Unblocker(fifo) as guard,
    ):
        loaded = load_instructions([fifo, zero, folder, good])
    assert not guard.fired.is_set()
    assert [(f.path, f.text) for f in loaded.files] == [(good, "be brief\n")]
    warnings = _warnings(caplog)
    for path, what in ((fifo, "a FIFO"), (zero, "a character device"), (folder, "a directory")):
        assert any(str(path) in w and what in w for w in warnings), (path, warnings)


def test_dsh_names_an_agents_md_that_is_not_a_regular_file_and_uses_claude_md(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    os.mkfifo(project / "AGENTS.md")
    (project / "CLAUDE.md").write_text("use tabs\n")
    ran = _dsh("config", "--dump", env={"DSH_HOME": str(home)}, cwd=project)
    assert ran.returncode == 0, ran.stderr
    assert str(project / "CLAUDE.md") in ran.stdout
    assert f"{project / 'AGENTS.md'} are not read: it is not a regular file" in ran.stderr


def test_a_skill_file_that_is_a_fifo_is_skipped_by_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    skills = tmp_path / "skills"
    (skills / "stuck").mkdir(parents=True)
    fifo = skills / "stuck" / "SKILL.md"
    os.mkfifo(fifo)
    (skills / "zero").mkdir()
    (skills / "zero" / "SKILL.md").symlink_to("/dev/zero")
    (skills / "fine").mkdir()
    (skills / "fine" / "SKILL.md").write_text("---\nname: fine\ndescription: Works.\n---\n")
    with (
        caplog.at_level(logging.WARNING, logger="dsh_agent_core"),
        _Unblocker(fifo) as guard,
    ):
        found = discover_skills(skills)
        direct = read_skill(fifo)
    assert not guard.fired.is_set()
    assert [skill.name for skill in found] == ["fine"]
    assert direct is None
    warnings = _warnings(caplog)
    assert any(str(fifo) in w and "a FIFO" in w for w in warnings)
    assert any("zero/SKILL.md" in w and "a character device" in w for w in warnings)
