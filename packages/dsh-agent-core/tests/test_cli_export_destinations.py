"""``dsh sessions export`` never writes into the session store, and writes whole or not at all
(issue 32, 2.1).

Every case runs the installed ``dsh`` console script in a real process over a fresh
``DSH_HOME`` whose sessions the keyless ``dsh demo`` wrote. A refused destination is one
``dsh: error:`` line naming it and the store part, exit status 1, and nothing written: the
store's files are byte-identical afterwards and the destination is not created.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

DSH = Path(sys.executable).parent / "dsh"
TIMEOUT = 120.0
"""Seconds one dsh command may take: a safety net against a hang, not a speed bar."""

SQLITE = '[profiles.sqlite.persistence]\nbackend = "sqlite"\n'


@dataclass
class Dsh:
    home: Path
    cwd: Path

    def __call__(
        self, *args: str, stdout: Any = subprocess.PIPE
    ) -> subprocess.CompletedProcess[bytes]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.cwd.parent),
            "DSH_HOME": str(self.home),
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            "COLUMNS": "200",
        }
        return subprocess.run(
            [str(DSH), *args],
            cwd=self.cwd,
            env=env,
            stdout=stdout,
            stderr=subprocess.PIPE,
            timeout=TIMEOUT,
            check=False,
        )

    def ok(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        done = self(*args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    def demo(self, *options: str) -> dict[str, Any]:
        """A new session (``dsh [options] demo --json``): its status row."""
        row: dict[str, Any] = json.loads(self.ok(*options, "demo", "--json").stdout)
        return row

    def store(self) -> dict[Path, bytes]:
        """Every file under the home but the config, with its bytes."""
        return {
            p: p.read_bytes()
            for p in self.home.rglob("*")
            if p.is_file() and not p.is_symlink() and p.name != "config.toml"
        }


@pytest.fixture
def dsh(tmp_path: Path) -> Dsh:
    assert DSH.exists(), f"the dsh console script is not installed next to {sys.executable}"
    cwd = tmp_path / "project"
    cwd.mkdir()
    home = tmp_path / "dsh-home"
    home.mkdir()
    (home / "config.toml").write_text(SQLITE)
    return Dsh(home=home, cwd=cwd)


def refused(done: subprocess.CompletedProcess[bytes], destination: Path | str, store: str) -> str:
    """The one error line of a refused export, naming ``destination`` and ``store``."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    stderr = done.stderr.decode()
    assert "Traceback" not in stderr
    (line,) = [x for x in stderr.splitlines() if x.startswith("dsh: error: ")]
    assert f"refusing to write {destination}: " in line
    assert store in line
    assert "part of the session store" in line
    return line


def test_export_onto_the_sessions_own_log_is_refused_and_the_log_kept(dsh: Dsh) -> None:
    row = dsh.demo()
    log = Path(row["session_path"])
    before = dsh.store()
    done = dsh("sessions", "export", row["session_id"], "-o", str(log))
    refused(done, log, f"the plain JSONL root {dsh.home / 'sessions-plain'}")
    assert dsh.store() == before
    assert log.stat().st_size > 0


def test_export_onto_another_sessions_log_is_refused(dsh: Dsh) -> None:
    first, second = dsh.demo(), dsh.demo()
    before = dsh.store()
    done = dsh("sessions", "export", first["session_id"], "-o", second["session_path"])
    refused(done, second["session_path"], "the plain JSONL root")
    assert dsh.store() == before


def test_export_onto_a_hard_link_to_a_log_is_refused(dsh: Dsh, tmp_path: Path) -> None:
    row = dsh.demo()
    link = tmp_path / "looks-harmless.jsonl"
    os.link(row["session_path"], link)
    before = dsh.store()
    done = dsh("sessions", "export", row["session_id"], "-o", str(link))
    line = refused(done, link, "the plain JSONL root")
    assert f"a hard link to {row['session_path']}" in line
    assert dsh.store() == before


def test_export_into_the_root_where_nothing_exists_yet_is_refused_and_nothing_created(
    dsh: Dsh,
) -> None:
    row = dsh.demo()
    for inside in ("new.jsonl", "new-folder/new.jsonl"):
        target = dsh.home / "sessions-plain" / inside
        done = dsh("sessions", "export", row["session_id"], "-o", str(target))
        refused(done, target, "the plain JSONL root")
        assert not os.path.lexists(target)
        assert not (dsh.home / "sessions-plain" / "new-folder").exists()


def test_export_into_the_zstd_root_of_the_home_is_refused_too(dsh: Dsh) -> None:
    row = dsh.demo()
    target = dsh.home / "sessions" / "copy.jsonl"
    done = dsh("sessions", "export", row["session_id"], "-o", str(target))
    refused(done, target, f"the zstd JSONL root {dsh.home / 'sessions'}")
    assert not os.path.lexists(target)


def test_a_zip_of_several_sessions_into_the_root_is_refused(dsh: Dsh) -> None:
    first, second = dsh.demo(), dsh.demo()
    target = Path(first["session_path"]).parent / "both.zip"
    done = dsh("sessions", "export", first["session_id"], second["session_id"], "-o", str(target))
    refused(done, target, "the plain JSONL root")
    assert not os.path.lexists(target)


def test_export_through_a_symlink_to_the_sqlite_database_is_refused(
    dsh: Dsh, tmp_path: Path
) -> None:
    row = dsh.demo("--profile", "sqlite")
    database = dsh.home / "sessions.sqlite3"
    link = tmp_path / "export.jsonl"
    link.symlink_to(database)
    before = dsh.store()
    done = dsh("--profile", "sqlite", "sessions", "export", row["session_id"], "-o", str(link))
    refused(done, link, f"the SQLite database {database}")
    assert dsh.store() == before
    listed = json.loads(dsh.ok("--profile", "sqlite", "sessions", "list", "--json").stdout)
    assert [r["session_id"] for r in listed] == [row["session_id"]]


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_export_onto_a_journal_file_of_the_database_is_refused(dsh: Dsh, suffix: str) -> None:
    row = dsh.demo("--profile", "sqlite")
    journal = dsh.home / f"sessions.sqlite3{suffix}"
    existed = journal.exists()
    before = dsh.store()
    done = dsh("--profile", "sqlite", "sessions", "export", row["session_id"], "-o", str(journal))
    refused(done, journal, "the SQLite database")
    assert dsh.store() == before
    assert journal.exists() == existed


def test_a_plain_profile_still_refuses_the_homes_database(dsh: Dsh) -> None:
    sqlite_row = dsh.demo("--profile", "sqlite")
    plain_row = dsh.demo()
    database = dsh.home / "sessions.sqlite3"
    before = dsh.store()
    done = dsh("sessions", "export", plain_row["session_id"], "-o", str(database))
    refused(done, database, "the SQLite database")
    assert dsh.store() == before
    assert (  # the table shows each id as a unique prefix (issue 34)
        sqlite_row["session_id"][:8]
        in dsh.ok("--profile", "sqlite", "sessions", "list").stdout.decode()
    )


def test_standard_output_appended_to_a_log_is_refused(dsh: Dsh) -> None:
    row = dsh.demo()
    log = Path(row["session_path"])
    before = dsh.store()
    for command in (["sessions", "export"], ["sessions", "show", "--raw"]):
        with log.open("ab") as appended:
            done = dsh(*command, row["session_id"], stdout=appended)
        refused(done, "standard output", "the plain JSONL root")
        assert dsh.store() == before


def test_a_failed_export_leaves_an_existing_destination_byte_identical(
    dsh: Dsh, tmp_path: Path
) -> None:
    row = dsh.demo()
    log = Path(row["session_path"])
    lines = log.read_bytes().split(b"\n")
    lines[len(lines) // 2] = b'{"broken'
    log.write_bytes(b"\n".join(lines))
    destination = tmp_path / "exports" / "kept.jsonl"
    destination.parent.mkdir()
    destination.write_bytes(b"an earlier export\n")
    destination.chmod(0o640)
    for ids in ([row["session_id"]], [row["session_id"], row["session_id"]]):
        target = destination if len(ids) == 1 else destination.with_suffix(".zip")
        if len(ids) > 1:
            target.write_bytes(b"an earlier zip\n")
        expected = target.read_bytes()
        done = dsh("sessions", "export", *ids, "-o", str(target))
        assert done.returncode == 1, done.stderr
        assert target.read_bytes() == expected
    assert sorted(p.name for p in destination.parent.iterdir()) == ["kept.jsonl", "kept.zip"]


def test_an_export_replaces_the_destination_whole_and_keeps_its_permissions(
    dsh: Dsh, tmp_path: Path
) -> None:
    row = dsh.demo()
    destination = tmp_path / "export.jsonl"
    destination.write_bytes(b"older and longer " * 10_000)
    destination.chmod(0o640)
    dsh.ok("sessions", "export", row["session_id"], "-o", str(destination))
    assert destination.read_bytes() == Path(row["session_path"]).read_bytes()
    assert destination.stat().st_mode & 0o777 == 0o640
    archive = tmp_path / "one.zip"
    dsh.ok("sessions", "export", row["session_id"], row["session_id"], "-o", str(archive))
    with zipfile.ZipFile(archive) as opened:
        assert opened.namelist() == [f"{row['session_id']}.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == [
        "export.jsonl",
        "one.zip",
    ]
    dsh.ok("sessions", "export", row["session_id"], "-o", os.devnull)  # not replaced: written


def test_an_export_into_a_missing_folder_names_the_destination(dsh: Dsh, tmp_path: Path) -> None:
    row = dsh.demo()
    target = tmp_path / "missing" / "x.jsonl"
    done = dsh("sessions", "export", row["session_id"], "-o", str(target))
    assert done.returncode == 1
    (line,) = [x for x in done.stderr.decode().splitlines() if x.startswith("dsh: error: ")]
    assert line == f"dsh: error: cannot write {target}: No such file or directory"


def test_migrate_never_writes_into_its_source_root_even_through_a_symlink(
    dsh: Dsh, tmp_path: Path
) -> None:
    (dsh.home / "config.toml").write_text('[persistence]\ncompression = "zstd"\n')
    dsh.demo()
    source = dsh.home / "sessions"
    before = dsh.store()
    alias = tmp_path / "alias"
    alias.symlink_to(source)
    for dest in (alias, alias / "inner"):
        done = dsh("sessions", "migrate", "--to", str(dest))
        assert done.returncode == 1
        assert "inside the source root" in done.stderr.decode()
    assert dsh.store() == before
