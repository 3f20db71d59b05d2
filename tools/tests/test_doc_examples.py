"""The documentation runner executes each kind of block, checks console output, carries shell
variables between a file's blocks, and refuses unlabeled fences and reasonless no-run blocks."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "run_doc_examples", ROOT / "tools" / "run_doc_examples.py"
)
assert _spec is not None
assert _spec.loader is not None
runner = importlib.util.module_from_spec(_spec)
sys.modules["run_doc_examples"] = runner
_spec.loader.exec_module(runner)

FENCE = "```"


def _doc(tmp_path: Path, *blocks: tuple[str, str]) -> Path:
    parts = ["# A page\n"]
    for info, body in blocks:
        parts.append(f"{FENCE}{info}\n{body}{FENCE}\n")
    path = tmp_path / "page.md"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _run(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = runner.main([str(path)])
    return code, capsys.readouterr().out


def test_python_bash_and_data_blocks_that_work_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = _doc(
        tmp_path,
        ("python", "import os\nassert os.environ['DSH_HOME'].endswith('dsh-home')\n"),
        ("bash", 'test -d "$DSH_HOME" && echo ok > made.txt\n'),
        ("bash", 'test "$(cat made.txt)" = ok\n'),  # the same cwd for the file's blocks
        ("toml", 'a = 1\n[b]\nc = "d"\n'),
        ("json", '{"a": [1, 2]}\n'),
        ("jsonl", '{"a": 1}\n\n{"b": 2}\n'),
        ("text", "anything at all {\n"),
    )
    code, out = _run(page, capsys)
    assert code == 0, out
    assert "7 blocks in 1 files, 0 failed" in out


@pytest.mark.parametrize(
    ("info", "body", "said"),
    [
        ("python", "raise SystemExit(3)\n", "exited 3"),
        ("bash", "false\necho never\n", "exited 1"),
        ("bash", "false | true\n", "exited 1"),  # pipefail
        ("toml", "a = \n", "not valid toml"),
        ("json", "{'a': 1}\n", "not valid json"),
        ("jsonl", '{"a": 1}\n{oops}\n', "line 2 of the block"),
        ("python", "def (:\n", "not valid python"),
    ],
)
def test_a_failing_block_fails_the_run_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], info: str, body: str, said: str
) -> None:
    code, out = _run(_doc(tmp_path, ("text", "fine\n"), (info, body)), capsys)
    assert code == 1
    assert f"FAIL {tmp_path / 'page.md'}:7: " in out
    assert said in out


def test_shell_variables_carry_between_blocks_and_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = _doc(
        tmp_path,
        ("bash", "F=from-the-first-block\n"),
        ("console", '$ G="$F and on"\n$ echo "$G"\nfrom-the-first-block and on\n'),
    )
    code, out = _run(page, capsys)
    assert code == 0, out


def test_console_output_is_checked_in_order_with_wildcards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uuid = "2f1d6c1e-9d2a-4f7e-8c51-0a4b1c2d3e4f"
    script = f"printf 'one\\nsession {uuid} done\\n'; pwd; echo \"$DSH_HOME\""
    good = "one\nsession 11111111-2222-4333-8444-555555555555 …\n~/project\n~/.dsh\n"
    code, out = _run(_doc(tmp_path, ("console", f"$ {script}\n{good}")), capsys)
    assert code == 0, out
    wrong_order = "~/project\none\n"
    code, out = _run(_doc(tmp_path, ("console", f"$ {script}\n{wrong_order}")), capsys)
    assert code == 1
    assert "printed no line matching 'one'" in out
    invented = "one\nsession … failed\n"
    code, out = _run(_doc(tmp_path, ("console", f"$ {script}\n{invented}")), capsys)
    assert code == 1
    assert "printed no line matching 'session … failed'" in out


def test_console_exit_status_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(_doc(tmp_path, ("console", "$ false\n")), capsys)
    assert code == 1
    assert "`false` exited 1, not 0" in out
    both = "$ true\n$ echo oops >&2; exit 3\noops\n"
    code, out = _run(_doc(tmp_path, ("console exit=3", both)), capsys)
    assert code == 0, out
    code, out = _run(_doc(tmp_path, ("console exit=3", "$ exit 3\n$ true\n")), capsys)
    assert code == 1
    assert "exited 3, not 0" in out


def test_console_commands_continue_over_backslashes() -> None:
    steps = runner.console_steps("$ echo a \\\n    b\na b\n$ true\n")
    assert steps == [("echo a \\\n    b", ["a b"]), ("true", [])]
    with pytest.raises(ValueError, match="before the first"):
        runner.console_steps("output first\n$ true\n")


def test_no_run_needs_a_reason_and_is_still_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _run(_doc(tmp_path, ('bash no-run reason="needs a key"', "exit 1\n")), capsys)
    assert code == 0, out
    assert "not run: needs a key" in out
    code, out = _run(_doc(tmp_path, ("python no-run", "print(1)\n")), capsys)
    assert code == 1
    assert "no-run needs a reason" in out
    code, out = _run(_doc(tmp_path, ('bash no-run reason="x"', "if then fi\n")), capsys)
    assert code == 1
    assert "not valid bash" in out


@pytest.mark.parametrize(
    ("info", "said"),
    [
        ("", "a fence without a label"),
        ("rust", "unknown label 'rust'"),
        ("python no-rnu", "unknown option 'no-rnu'"),
        ('python reason="x"', "a reason without no-run"),
        ("bash exit=2", "unknown option 'exit=2' for a bash block"),
    ],
)
def test_malformed_info_strings_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], info: str, said: str
) -> None:
    code, out = _run(_doc(tmp_path, (info, "true\n")), capsys)
    assert code == 1
    assert said in out


def test_indented_fences_inside_lists_are_found(tmp_path: Path) -> None:
    text = "- a point:\n\n  ```bash\n  echo indented\n  ```\n"
    (block,) = runner.parse_blocks(tmp_path / "p.md", text)
    assert (block.lang, block.body, block.line) == ("bash", "echo indented\n", 3)


def test_package_readme_python_is_left_to_the_package_unless_it_runs_in_docs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = tmp_path / "packages" / "dsh-x" / "README.md"
    readme.parent.mkdir(parents=True)
    readme.write_text(
        f"{FENCE}python\nraise SystemExit(1)\n{FENCE}\n\n"
        f"{FENCE}python runs=docs\nraise SystemExit(2)\n{FENCE}\n"
    )
    code, out = _run(readme, capsys)
    assert code == 1
    assert "left to its package's tests" in out
    assert f"{readme}:5: exited 2" in out


def test_the_default_files_are_every_doc_and_readme() -> None:
    files = {path.relative_to(ROOT).as_posix() for path in runner.default_files()}
    assert "README.md" in files
    assert "docs/index.md" in files
    assert "examples/third-party-backend/README.md" in files
    assert "packages/dsh-session/README.md" in files


def test_needs_server_blocks_reach_the_local_test_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = (
        "import json, os, urllib.request\n"
        "request = urllib.request.Request(\n"
        "    os.environ['OPENAI_BASE_URL'] + '/chat/completions',\n"
        "    data=json.dumps({'model': 'm', 'messages': [], 'stream': True}).encode(),\n"
        "    headers={'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY']},\n"
        ")\n"
        "text = urllib.request.urlopen(request, timeout=30).read().decode()\n"
        "assert 'local test server' in text, text\n"
    )
    code, out = _run(_doc(tmp_path, ("python needs=server", body)), capsys)
    assert code == 0, out
    code, out = _run(
        _doc(tmp_path, ("python", "import os\nos.environ['OPENAI_BASE_URL']\n")), capsys
    )
    assert code == 1  # without needs=server there is no server, and no variable naming one


def test_the_site_sees_fences_without_the_runners_options() -> None:
    spec = importlib.util.spec_from_file_location(
        "mkdocs_fences", ROOT / "tools" / "mkdocs_fences.py"
    )
    assert spec is not None
    assert spec.loader is not None
    fences = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fences)
    text = (
        '```python no-run reason="a key"\nx = 1\n```\n'
        "  ```console exit=1\n  $ false\n  ```\n"
        "```toml\na = 1\n```\n"
    )
    assert fences.strip_fence_options(text) == (
        "```python\nx = 1\n```\n  ```console\n  $ false\n  ```\n```toml\na = 1\n```\n"
    )


def test_a_text_output_block_is_checked_against_the_block_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = "print('answer: 42')\nprint('log: /somewhere/x.jsonl')\n"
    good = _doc(tmp_path, ("python", script), ("text output", "answer: 42\nlog: …x.jsonl\n"))
    code, out = _run(good, capsys)
    assert code == 0, out
    stale = _doc(tmp_path, ("python", script), ("text output", "answer: 41\n"))
    code, out = _run(stale, capsys)
    assert code == 1
    assert "the block before printed no line matching 'answer: 41'" in out
    shell = _doc(tmp_path, ("bash", "echo from bash\n"), ("text output", "from bash\n"))
    assert _run(shell, capsys)[0] == 0


@pytest.mark.parametrize(
    "before", [None, ("text", "a diagram\n"), ('python no-run reason="x"', "print(1)\n")]
)
def test_a_text_output_block_needs_a_block_that_ran_right_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], before: tuple[str, str] | None
) -> None:
    blocks = [("python", "print(1)\n")] if before is not None else []
    if before is not None:
        blocks.append(before)
    code, out = _run(_doc(tmp_path, *blocks, ("text output", "1\n")), capsys)
    assert code == 1
    assert "must follow a python or bash block that ran" in out
