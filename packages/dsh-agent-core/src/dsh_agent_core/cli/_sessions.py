"""``dsh sessions``: list, status, show, export, migrate, verify and compact session logs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import click
from rich.cells import cell_len, set_cell_size
from rich.table import Table
from rich.text import Text

from dsh_agent_core.cli._common import State, async_command, err, fail, out
from dsh_agent_core.cli._terminal import terminal_json, terminal_json_lines

if TYPE_CHECKING:
    from dsh_agent_core._catalog import ModelPrices
    from dsh_agent_core._config import Config
    from dsh_agent_core.cli._usage import PricesOf, UsageTotals
    from dsh_persistence import SessionPersistence

# Each command imports the harness, the backends and the renderers it uses in its body: `dsh
# sessions --help` and `dsh --help` load none of them.

__all__ = ["sessions"]


@click.group()
def sessions() -> None:
    """Inspect and move session logs (read-only unless the command says otherwise)."""


def _print_status(row: dict[str, Any]) -> None:
    """One session's status as ``name  value`` lines, the absent ones left out: fits any width
    (a long value is wrapped by the terminal, never cut or broken by an inserted newline)."""
    fields = (
        ("session", row.get("session_id")),
        ("title", row.get("title")),
        ("status", row.get("status")),
        ("updated", row.get("updated_at")),
        ("log", row.get("session_path")),
    )
    for name, value in fields:
        if value:
            text = " ".join(str(value).split()) if name == "title" else str(value)
            out.print(Text(f"{name:<8} {text}"), soft_wrap=True)


def _cut(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` terminal cells with an ellipsis when longer."""
    text = " ".join(text.split())  # a newline in a title would break the row
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, max(width - 1, 0)) + "…"


def _list_table(rows: list[dict[str, str | None]], ids: dict[str, str], width: int) -> Table:
    """The rows of ``sessions list`` in ``width`` columns (80 at least is assumed): each id as
    its short form in ``ids``, the title cut to the room left, the update time to the minute
    (UTC). Rich's own shrinking would cut the id and the time first: the widths are set here."""
    cells = [
        (
            ids.get(row.get("session_id") or "", row.get("session_id") or ""),
            row.get("title") or "",
            row.get("status") or "",
            (row.get("updated_at") or "")[:16].replace("T", " "),
        )
        for row in rows
    ]
    headers = ("session", "title", "status", "updated (UTC)")
    fixed = [max([len(headers[i]), *(cell_len(c[i]) for c in cells)]) for i in (0, 2, 3)]
    room = max(width - 13 - sum(fixed), 10)  # 5 rules and 2 spaces of padding per column
    table = Table(show_header=True, header_style="bold")
    table.add_column(headers[0], no_wrap=True, min_width=fixed[0])
    table.add_column(headers[1], no_wrap=True)
    table.add_column(headers[2], no_wrap=True, min_width=fixed[1])
    table.add_column(headers[3], no_wrap=True, min_width=fixed[2])
    for session, title, status, updated in cells:
        table.add_row(session, _cut(title, room), status, updated)
    return table


@sessions.command("list")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="How many of the most recent (at least 1).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON array of status rows.")
@click.pass_obj
@async_command
async def list_command(state: State, limit: int, as_json: bool) -> None:
    """The most recently updated sessions: id (its shortest unique prefix, 8 characters at
    least, which every command accepts for the id), title, status and when it was updated.
    --json gives the whole rows: full ids, log paths and usage totals."""
    from dsh_agent_core._harness import compose
    from dsh_agent_core.cli._session_ids import short_ids

    config = state.config()
    async with compose(config) as harness:
        rows = [row.to_json() for row in await harness.status(limit)]
        if as_json:
            for row in rows:
                totals = await _totals(harness.persistence, config, row["session_id"])
                if totals is not None:
                    row["totals"] = totals.to_json()
        else:
            stored = [snapshot.id for snapshot in await harness.sessions()]
            ids = short_ids([*stored, *(row["session_id"] for row in rows)])
    if as_json:
        out.print(terminal_json(rows))
    elif not rows:
        err.print("no sessions yet (try: dsh demo)")
    else:
        out.print(_list_table(rows, ids, out.width))


@sessions.command("status")
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="The status row as JSON.")
@click.pass_obj
@async_command
async def status_command(state: State, session_id: str, as_json: bool) -> None:
    """One session's status row (exit status 1 when it is missing). SESSION_ID may be any
    unique prefix of the id."""
    from dsh_agent_core._harness import compose
    from dsh_agent_core.cli._session_ids import resolve_session_id

    async with compose(state.config()) as harness:
        session_id = await resolve_session_id(harness.persistence, session_id, missing_ok=True)
        row = await harness.status_of(session_id)
    if as_json:
        out.print(terminal_json(row.to_json()))
    else:
        _print_status(row.to_json())
    if row.status == "missing":
        sys.exit(1)


@sessions.command("show")
@click.argument("session_id")
@click.option("--raw", is_flag=True, help="Print the log itself (plain JSONL, from any backend).")
@click.pass_obj
@async_command
async def show_command(state: State, session_id: str, raw: bool) -> None:
    """A readable transcript of a session (or, with --raw, its log). SESSION_ID may be any
    unique prefix of the id."""
    from dsh_agent_core._harness import build_persistence
    from dsh_agent_core.cli._session_ids import resolve_session_id
    from dsh_agent_core.cli._transcript import render_transcript
    from dsh_agent_core.cli._usage import session_totals, totals_text
    from dsh_persistence import export_session

    config = state.config()
    if raw:
        _check_stdout(config)
    persistence = build_persistence(config)
    try:
        session_id = await resolve_session_id(persistence, session_id, missing_ok=True)
        if raw:
            stdout = _stdout_stream()
            await export_session(persistence, session_id, stdout)
            stdout.flush()
            return
        async with await persistence.open(session_id, "read") as handle:
            events = await handle.read(0)
            render_transcript(out, handle.header, events)
            totals = session_totals(events, _prices(config))
            out.print(f"totals: {totals_text(totals)}", markup=False)
    finally:
        await persistence.aclose()


@sessions.command("export")
@click.argument("session_ids", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The file to write (default: standard output). Several sessions need a .zip.",
)
@click.pass_obj
@async_command
async def export_command(state: State, session_ids: tuple[str, ...], output: Path | None) -> None:
    """Export sessions as plain JSONL (the same bytes from every backend); several sessions go
    into a zip of <session>.jsonl files. The file is written whole or not at all (a failed
    export leaves an existing one as it was), and never into the session store. Each id may
    be any unique prefix of it."""
    from dsh_agent_core._harness import build_persistence
    from dsh_agent_core.cli._destinations import check_destination, store_parts, write_atomically
    from dsh_agent_core.cli._session_ids import resolve_session_id
    from dsh_persistence import export_session

    several = len(session_ids) > 1  # as named: `export X X -o a.zip` is still a zip
    session_ids = tuple(dict.fromkeys(session_ids))  # an id named twice is exported once
    if several and (output is None or output.suffix != ".zip"):
        fail("exporting several sessions needs -o FILE.zip")
    config = state.config()
    if output is None:
        _check_stdout(config)
        target = None
    else:  # refused before the store is opened: nothing is written, nothing is created
        target = check_destination(output, store_parts(config))
    persistence = build_persistence(config)
    try:
        resolved = [await resolve_session_id(persistence, i, missing_ok=True) for i in session_ids]
        session_ids = tuple(dict.fromkeys(resolved))
        if target is None:
            stdout = _stdout_stream()
            await export_session(persistence, session_ids[0], stdout)
            stdout.flush()
        elif not several:

            async def one(stream: BinaryIO) -> int:
                return await export_session(persistence, session_ids[0], stream)

            count = await write_atomically(target, one, name=str(output))
            err.print(f"{session_ids[0]}: {count} events → {output}", markup=False)
        else:

            async def archive(stream: BinaryIO) -> None:
                await _zip(persistence, session_ids, stream)

            await write_atomically(target, archive, name=str(output))
            err.print(f"{len(session_ids)} sessions → {output}", markup=False)
    finally:
        await persistence.aclose()


async def _zip(
    persistence: SessionPersistence, session_ids: tuple[str, ...], stream: BinaryIO
) -> None:
    import zipfile

    from rich.progress import Progress

    from dsh_persistence import export_session

    with (
        zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_DEFLATED) as archive,
        Progress(console=err, transient=True) as progress,
    ):
        task = progress.add_task("exporting", total=len(session_ids))
        for session_id in session_ids:
            with archive.open(f"{session_id}.jsonl", "w") as member:
                await export_session(persistence, session_id, member)  # type: ignore[arg-type]
            progress.advance(task)


class _TerminalLines:
    """A binary stream that writes the JSON lines written to it to ``stream`` through
    :func:`terminal_json_lines`, line by line (a partial line waits for its end)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.pending = b""

    def write(self, data: bytes) -> int:
        """Write the complete lines of what was written so far; keep the rest."""
        whole, newline, rest = (self.pending + bytes(data)).rpartition(b"\n")
        if newline:
            self.stream.write(terminal_json_lines(whole + newline))
        self.pending = rest
        return len(data)

    def flush(self) -> None:
        """Write what is pending (a last line without its end) too."""
        if self.pending:
            self.stream.write(terminal_json_lines(self.pending))
            self.pending = b""
        self.stream.flush()


def _prices(config: Config) -> PricesOf:
    def prices_of(provider: str, model: str) -> ModelPrices | None:
        return config.model_facts(provider, model).prices

    return prices_of


async def _totals(
    persistence: SessionPersistence,
    config: Config,
    session_id: str,
) -> UsageTotals | None:
    """The usage totals of a stored session (``None`` when it cannot be read)."""
    from dsh_agent_core.cli._usage import session_totals
    from dsh_persistence import SessionPersistenceError

    try:
        async with await persistence.open(session_id, "read") as handle:
            events = await handle.read(0)
    except SessionPersistenceError:
        return None
    return session_totals(events, _prices(config))


def _stdout_stream() -> BinaryIO:
    """Standard output for a log's JSON lines: the bytes as they are into a pipe or a file,
    through :func:`terminal_json_lines` into a terminal (which would interpret the C1 and
    bidirectional controls the log keeps as raw UTF-8)."""
    stream = sys.stdout.buffer
    try:
        terminal = os.isatty(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # not a file (captured output)
        terminal = False
    return cast(BinaryIO, _TerminalLines(stream)) if terminal else stream


def _check_stdout(config: Config) -> None:
    """Refuse an export to a standard output redirected into the store (``>> session.jsonl``
    would append the log to itself while reading it)."""
    from dsh_agent_core.cli._destinations import check_stream, store_parts

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (captured output)
        return
    check_stream(fd, "standard output", store_parts(config))


@sessions.command("migrate")
@click.option(
    "--from",
    "source",
    type=click.Path(path_type=Path),
    help="The zstd root (default: <home>/sessions).",
)
@click.option(
    "--to",
    "dest",
    type=click.Path(path_type=Path),
    help="The plain root (default: <home>/sessions-plain).",
)
@click.pass_obj
@async_command
async def migrate_command(state: State, source: Path | None, dest: Path | None) -> None:
    """Copy every zstd session into the plain root, validated and verified by reopening; the
    source is kept. Exit status 1 when a session failed."""
    from rich.progress import Progress

    from dsh_agent_core._persistence_config import default_jsonl_root
    from dsh_persistence_jsonl import MigrationStep, migrate_root

    home = state.config().home()
    source = source if source is not None else default_jsonl_root(home, "zstd")
    dest = dest if dest is not None else default_jsonl_root(home, "none")
    if not source.is_dir():
        fail(f"nothing to migrate: {source} is not a directory")
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task("migrating", total=None)

        def step(done: MigrationStep) -> None:
            progress.update(task, total=done.total, completed=done.done)
            if done.outcome == "failed":
                err.print(f"failed: {done.source}: {done.reason}", markup=False)

        report = await migrate_root(source, dest, progress=step)
    err.print(
        f"migrated {len(report.migrated)}, skipped {len(report.skipped)} (already there), "
        f"failed {len(report.failed)}: {source} → {dest} (source kept)",
        markup=False,
    )
    if not report.ok:
        sys.exit(1)


@sessions.command("verify")
@click.argument("session_ids", nargs=-1)
@click.pass_obj
@async_command
async def verify_command(state: State, session_ids: tuple[str, ...]) -> None:
    """Read every log (or the named ones) through the backend and report corruption by file
    and line (each named id may be any unique prefix of it). Exit status 1 when any log is
    damaged or missing."""
    from rich.progress import Progress

    from dsh_agent_core._harness import build_persistence
    from dsh_agent_core.cli._session_ids import resolve_session_id
    from dsh_persistence import (
        SessionPersistenceCorruptionError,
        SessionPersistenceError,
        SessionPersistenceNotFoundError,
    )

    persistence = build_persistence(state.config())
    bad = 0
    try:
        named = [await resolve_session_id(persistence, i, missing_ok=True) for i in session_ids]
        ids = list(dict.fromkeys(named)) or sorted(s.id for s in await persistence.list())
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task("verifying", total=len(ids))
            for session_id in ids:
                try:
                    async with await persistence.open(session_id, "read") as handle:
                        await handle.read(0)
                except SessionPersistenceCorruptionError as error:
                    bad += 1
                    where = error.artifact or "the stored log"
                    line = f":{error.line}" if error.line is not None else ""
                    row = f" row {error.row}" if error.row is not None else ""
                    out.print(
                        f"{where}{line}{row}: {error.reason} (session {session_id})", markup=False
                    )
                except SessionPersistenceNotFoundError:
                    bad += 1
                    out.print(f"session {session_id}: not found", markup=False)
                except SessionPersistenceError as error:
                    bad += 1
                    out.print(str(error), markup=False)
                progress.advance(task)
    finally:
        await persistence.aclose()
    noun = "session" if len(ids) == 1 else "sessions"
    err.print(f"verified {len(ids)} {noun}: {len(ids) - bad} ok, {bad} damaged", markup=False)
    if bad:
        sys.exit(1)


@sessions.command("compact")
@click.argument("session_id")
@click.pass_obj
@async_command
async def compact_command(state: State, session_id: str) -> None:
    """Compact an idle session now: its conversation but the newest exchange becomes one
    checkpoint written by the session's own model (the originals stay in the log). Exit status
    1 when it cannot (running, open in another process, the summary failed, not found).
    SESSION_ID may be any unique prefix of the id."""
    from dsh_agent_core._harness import compose
    from dsh_agent_core.cli._session_ids import resolve_session_id

    async with compose(state.config()) as harness:
        session_id = await resolve_session_id(harness.persistence, session_id, missing_ok=True)
        result = await harness.compact(session_id)
    if result is None:
        out.print(f"session {session_id}: nothing to compact yet", markup=False)
        return
    out.print(
        f"session {session_id}: compacted {len(result.shadowed_seqs)} conversation items, "
        f"~{result.shadowed_token_count} → ~{result.checkpoint_tokens} tokens "
        f"(compaction {result.compaction_id})",
        markup=False,
    )
