"""Execute every fenced code block of the documentation, so a renamed function breaks the build.

Files: ``docs/**/*.md``, the root ``README.md``, ``examples/*/README.md`` and
``packages/*/README.md`` — whose Python blocks run with each package's own tests
(``tools/run_readme_examples.py``), except those marked ``python runs=docs``: they need packages
the package does not install, so they run here, where every package is. Run from the
repository root with every wheel installed: ``python tools/run_doc_examples.py [FILE ...]``
(``nox -s docs`` does).

Each file gets one scratch directory: its blocks run in order with the cwd ``<scratch>/project``
and ``DSH_HOME=<scratch>/dsh-home``, so a later block sees the files an earlier one wrote. The
opening fence's info string says what happens to a block:

- ``python``: run as a script in a fresh interpreter; it must exit 0.
- ``bash``: run by ``bash -eo pipefail``; it must exit 0. Shell variables a block sets carry to
  the file's later bash and console blocks (each runs under ``set -a`` and its exported
  environment is kept), as in one terminal.
- ``console``: ``$ `` lines are commands (a trailing ``\\`` continues one), each run by bash and
  required to exit 0 (``exit=N``: the last must exit N); the other lines are expected output,
  each matching an actual line in order (lines left out are allowed). In expected lines ``…``
  matches anything and a UUID matches any UUID; actual output shows DSH_HOME as ``~/.dsh`` and
  the cwd as ``~/project``.
- ``toml``: parsed; ``toml dsh-config``: also loaded as the ``dsh`` configuration, and kept as
  ``$DSH_HOME/config.toml`` for the file's later blocks.
- ``json``: parsed; ``jsonl``: each non-empty line parsed. ``text``: not executed.
- ``text output``: the output of the python or bash block right before it, checked as a
  console block's output is (each line matching an actual line, in order, ``…`` and UUIDs as
  wildcards).
- ``needs=server``: the block runs while a local OpenAI-compatible test server streams the
  answer "Hello from the local test server."; ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` say
  where it is.
- ``no-run reason="..."``: compiled or parsed only; the reason is required and printed.

A fence without a label, an unknown label or option, and a ``no-run`` without a reason fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 300
"""Seconds one block (one console command) may run."""

SERVER_ANSWER = ["Hello", " from the local test server."]

_FENCE = re.compile(
    r"^(?P<indent> {0,3})```(?P<info>[^`\n]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_LANGS = {"python", "bash", "console", "toml", "json", "jsonl", "text"}
_ALIASES = {"py": "python", "sh": "bash", "shell": "bash"}


class DocBlockError(Exception):
    """A block that is malformed or failed, named by file and line."""


@dataclass
class Block:
    """One fenced block: where it opens, its label and options, its text."""

    path: Path
    line: int
    lang: str
    body: str
    no_run: bool = False
    reason: str | None = None
    needs_server: bool = False
    exit_code: int = 0
    dsh_config: bool = False
    runs_in_docs: bool = False
    is_output: bool = False
    options: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        try:
            return f"{self.path.relative_to(ROOT)}:{self.line}"
        except ValueError:
            return f"{self.path}:{self.line}"


def parse_blocks(path: Path, text: str) -> list[Block]:
    """Every fenced block of ``text``; a malformed info string raises `DocBlockError`."""
    blocks = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        where = Block(path, line, "text", "").where
        indent = len(match.group("indent"))
        body = "".join(
            row[indent:] if row[:indent].strip() == "" else row
            for row in match.group("body").splitlines(keepends=True)
        )
        try:
            tokens = shlex.split(match.group("info").strip())
        except ValueError as error:
            raise DocBlockError(f"{where}: unreadable info string: {error}") from None
        if not tokens:
            raise DocBlockError(f"{where}: a fence without a label (output is `text`)")
        lang = _ALIASES.get(tokens[0], tokens[0])
        if lang not in _LANGS:
            raise DocBlockError(f"{where}: unknown label {tokens[0]!r} (one of {sorted(_LANGS)})")
        block = Block(path, line, lang, body, options=tokens[1:])
        for token in tokens[1:]:
            name, _, value = token.partition("=")
            if token == "no-run":
                block.no_run = True
            elif name == "reason" and value.strip():
                block.reason = value.strip()
            elif token == "needs=server":
                block.needs_server = True
            elif name == "exit" and value.isdigit() and lang == "console":
                block.exit_code = int(value)
            elif token == "runs=docs" and lang == "python":
                block.runs_in_docs = True
            elif token == "output" and lang == "text":
                block.is_output = True
            elif token == "dsh-config" and lang == "toml":
                block.dsh_config = True
            else:
                raise DocBlockError(f"{where}: unknown option {token!r} for a {lang} block")
        if block.no_run and block.reason is None:
            raise DocBlockError(f'{where}: no-run needs a reason="..." saying why it cannot run')
        if block.reason is not None and not block.no_run:
            raise DocBlockError(f"{where}: a reason without no-run")
        blocks.append(block)
    return blocks


# -- the console convention -------------------------------------------------------------------


def console_steps(body: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) for each ``$ `` command of a console block."""
    steps: list[tuple[str, list[str]]] = []
    rows = body.splitlines()
    index = 0
    while index < len(rows):
        row = rows[index]
        if row.startswith("$ "):
            command = row[2:]
            while command.endswith("\\") and index + 1 < len(rows):
                index += 1
                command += "\n" + rows[index]
            steps.append((command, []))
        elif steps:
            steps[-1][1].append(row)
        elif row.strip():
            raise ValueError(f"output before the first `$ ` command: {row!r}")
        index += 1
    return steps


def expected_pattern(line: str) -> re.Pattern[str]:
    """The regex an expected output line stands for (``…`` anything, a UUID any UUID)."""
    parts = []
    for piece in re.split(f"({_UUID}|…)", line.rstrip()):
        if piece == "…":
            parts.append(".*")
        elif re.fullmatch(_UUID, piece):
            parts.append(_UUID)
        else:
            parts.append(re.escape(piece))
    return re.compile("".join(parts))


def unmatched_line(expected: list[str], actual: str) -> str | None:
    """The first expected line with no actual line matching it in order, else ``None``."""
    lines = [row.rstrip() for row in actual.splitlines()]
    position = 0
    for wanted in expected:
        if not wanted.strip():
            continue
        pattern = expected_pattern(wanted)
        while position < len(lines) and not pattern.fullmatch(lines[position]):
            position += 1
        if position == len(lines):
            return wanted
        position += 1
    return None


# -- running ----------------------------------------------------------------------------------


@dataclass
class Scratch:
    """The scratch directory of one file: its cwd, its DSH home and its environment."""

    root: Path
    env: dict[str, str]
    last_output: str | None = None
    """What the last python or bash block printed (for a ``text output`` block after it)."""

    @property
    def carried(self) -> Path:
        """The variables bash blocks left set, read by the next one."""
        return self.root / "carried.env"

    def shell(self, script: str) -> str:
        """``script`` with the carried variables read before and kept after it (not the test
        server's: each needs=server block gets its own server)."""
        carried = shlex.quote(str(self.carried))
        return (
            f"[ -f {carried} ] && . {carried}\nset -a\n{script}\n"
            f"__doc_status=$?\nexport -p | grep -v -e ' OPENAI_BASE_URL=' -e ' OPENAI_API_KEY='"
            f" > {carried}\nexit $__doc_status\n"
        )

    @property
    def cwd(self) -> Path:
        return self.root / "project"

    @property
    def home(self) -> Path:
        return self.root / "dsh-home"

    def shown(self, output: str) -> str:
        """``output`` with the scratch paths as a reader's (``~/.dsh``, ``~/project``)."""
        for real, shown in ((self.home, "~/.dsh"), (self.cwd, "~/project")):
            output = output.replace(str(real.resolve()), shown).replace(str(real), shown)
        return output


@contextmanager
def scratch() -> Iterator[Scratch]:
    with tempfile.TemporaryDirectory(prefix="dsh-doc-") as directory:
        root = Path(directory)
        (root / "project").mkdir()
        (root / "dsh-home").mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "OPENAI_"))}
        env.update(DSH_HOME=str(root / "dsh-home"), NO_COLOR="1", TERM="dumb", COLUMNS="100")
        yield Scratch(root, env)


@contextmanager
def local_model_server() -> Iterator[dict[str, str]]:
    """The local OpenAI-compatible server of tests-integration, and the variables naming it."""
    path = ROOT / "tests-integration" / "core_sse_server.py"
    spec = importlib.util.spec_from_file_location("core_sse_server", path)
    if spec is None or spec.loader is None:
        raise DocBlockError(f"{path}: cannot load the test server")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("core_sse_server", module)  # its dataclasses look themselves up
    spec.loader.exec_module(module)
    with module.SseServer(SERVER_ANSWER) as server:
        yield {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key"}


def _run(argv: list[str], place: Scratch, env: dict[str, str], where: str) -> tuple[int, str]:
    try:
        done = subprocess.run(
            argv,
            cwd=place.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise DocBlockError(f"{where}: still running after {TIMEOUT} s") from None
    return done.returncode, place.shown(done.stdout)


def _tail(output: str, lines: int = 40) -> str:
    return "\n".join("    " + row for row in output.splitlines()[-lines:])


def check_static(block: Block) -> None:
    """Compile or parse a block without running it (a no-run block, or a data block)."""
    try:
        if block.lang == "python":
            compile(block.body, block.where, "exec")
        elif block.lang == "toml":
            tomllib.loads(block.body)
        elif block.lang == "json":
            json.loads(block.body)
        elif block.lang == "jsonl":
            for number, row in enumerate(block.body.splitlines(), start=1):
                if row.strip():
                    try:
                        json.loads(row)
                    except ValueError as error:
                        raise ValueError(f"line {number} of the block: {error}") from None
        elif block.lang in ("bash", "console"):
            scripts = [c for c, _ in console_steps(block.body)] if block.lang == "console" else []
            for script in scripts or [block.body]:
                syntax = subprocess.run(
                    ["bash", "-n", "-c", script], capture_output=True, text=True, check=False
                )
                if syntax.returncode != 0:
                    raise ValueError(syntax.stderr.strip())
    except (SyntaxError, ValueError, tomllib.TOMLDecodeError) as error:
        raise DocBlockError(f"{block.where}: not valid {block.lang}: {error}") from None


def run_block(block: Block, place: Scratch) -> str:
    """Execute one block in ``place``; returns what was done, raises `DocBlockError`."""
    check_static(block)
    previous, place.last_output = place.last_output, None
    if block.is_output:
        if previous is None:
            raise DocBlockError(
                f"{block.where}: a text output block must follow a python or bash block that ran"
            )
        missing = unmatched_line(block.body.splitlines(), previous)
        if missing is not None:
            raise DocBlockError(
                f"{block.where}: the block before printed no line matching {missing!r} "
                f"(in order); it printed:\n{_tail(previous)}"
            )
        return "the output of the block before, checked"
    if block.no_run:
        return f"not run: {block.reason}"
    if block.lang in ("json", "jsonl", "text"):
        return "parsed" if block.lang != "text" else "text"
    if block.lang == "toml":
        if not block.dsh_config:
            return "parsed"
        config = place.home / "config.toml"
        config.write_text(block.body, encoding="utf-8")
        code, output = _run(
            [sys.executable, "-c", "from dsh_agent_core import load_config; load_config()"],
            place,
            place.env,
            block.where,
        )
        if code != 0:
            raise DocBlockError(f"{block.where}: not a valid dsh configuration\n{_tail(output)}")
        return "loaded as the dsh configuration"
    if block.needs_server:
        with local_model_server() as server_env:
            return _execute(block, place, {**place.env, **server_env})
    return _execute(block, place, place.env)


def _execute(block: Block, place: Scratch, env: dict[str, str]) -> str:
    if block.lang == "python":
        code, output = _run([sys.executable, "-c", block.body], place, env, block.where)
        if code != 0:
            raise DocBlockError(f"{block.where}: exited {code}\n{_tail(output)}")
        place.last_output = output
        return "ran"
    if block.lang == "bash":
        argv = ["bash", "-eo", "pipefail", "-c", place.shell(block.body)]
        code, output = _run(argv, place, env, block.where)
        if code != 0:
            raise DocBlockError(f"{block.where}: exited {code}\n{_tail(output)}")
        place.last_output = output
        return "ran"
    steps = console_steps(block.body)
    if not steps:
        raise DocBlockError(f"{block.where}: a console block without a `$ ` command")
    for number, (command, expected) in enumerate(steps, start=1):
        want = block.exit_code if number == len(steps) else 0
        argv = ["bash", "-o", "pipefail", "-c", place.shell(command)]
        code, output = _run(argv, place, env, block.where)
        shown = command.splitlines()[0]
        if code != want:
            raise DocBlockError(
                f"{block.where}: `{shown}` exited {code}, not {want}\n{_tail(output)}"
            )
        missing = unmatched_line(expected, output)
        if missing is not None:
            raise DocBlockError(
                f"{block.where}: `{shown}` printed no line matching {missing!r} (in order); "
                f"it printed:\n{_tail(output)}"
            )
    return f"ran {len(steps)} command(s), output checked"


def default_files() -> list[Path]:
    files = sorted((ROOT / "docs").rglob("*.md"))
    files += [ROOT / "README.md", *sorted((ROOT / "examples").glob("*/README.md"))]
    return files + sorted((ROOT / "packages").glob("*/README.md"))


def run_file(path: Path) -> tuple[int, int]:
    """Run the blocks of one file; returns (blocks handled, failures)."""
    try:
        blocks = parse_blocks(path, path.read_text(encoding="utf-8"))
    except DocBlockError as error:
        print(f"FAIL {error}")
        return 0, 1
    package_readme = path.parent.parent.name == "packages" and path.name == "README.md"
    failures = 0
    with scratch() as place:
        for block in blocks:
            try:
                if package_readme and block.lang == "python" and not block.runs_in_docs:
                    check_static(block)
                    done = "left to its package's tests (run_readme_examples.py)"
                else:
                    done = run_block(block, place)
                print(f"ok   {block.where}: {block.lang}: {done}")
            except DocBlockError as error:
                failures += 1
                print(f"FAIL {error}")
    return len(blocks), failures


def main(argv: list[str]) -> int:
    files = [Path(arg).resolve() for arg in argv] if argv else default_files()
    total = failures = 0
    for path in files:
        handled, failed = run_file(path)
        total, failures = total + handled, failures + failed
    print(f"{total} blocks in {len(files)} files, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
