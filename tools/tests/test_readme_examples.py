"""The README example runner runs python blocks, reports failures, and only compiles no-run ones."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "run_readme_examples", ROOT / "tools" / "run_readme_examples.py"
)
assert _spec is not None
assert _spec.loader is not None
runner = importlib.util.module_from_spec(_spec)
sys.modules["run_readme_examples"] = runner
_spec.loader.exec_module(runner)


def _readme(tmp_path: Path, *blocks: tuple[str, str]) -> Path:
    parts = ["# pkg\n"]
    for info, code in blocks:
        parts.append(f"```{info}\n{code}```\n")
    path = tmp_path / "README.md"
    path.write_text("\n".join(parts))
    return path


def test_passing_example_runs(tmp_path: Path) -> None:
    assert runner.main(_readme(tmp_path, ("python", "assert 1 + 1 == 2\n"))) == 0


def test_failing_example_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = _readme(tmp_path, ("python", "raise SystemExit(3)\n"))
    assert runner.main(readme) == 1
    assert f"{readme}:3: example failed (exit 3)" in capsys.readouterr().out


def test_no_run_block_is_compiled_not_run(tmp_path: Path) -> None:
    assert (
        runner.main(_readme(tmp_path, ('python no-run reason="x"', "raise SystemExit(1)\n"))) == 0
    )
    with pytest.raises(SyntaxError):
        runner.main(_readme(tmp_path, ('python no-run reason="x"', "def (:\n")))


def test_readme_without_python_example_fails(tmp_path: Path) -> None:
    assert runner.main(_readme(tmp_path, ("bash", "echo hi\n"))) == 1


def test_no_run_block_without_a_reason_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert runner.main(_readme(tmp_path, ("python no-run", "print('hi')\n"))) == 1
    assert 'needs reason="..."' in capsys.readouterr().out


def test_runs_in_docs_block_is_compiled_here_not_run(tmp_path: Path) -> None:
    assert runner.main(_readme(tmp_path, ("python runs=docs", "raise SystemExit(1)\n"))) == 0
    with pytest.raises(SyntaxError):
        runner.main(_readme(tmp_path, ("python runs=docs", "def (:\n")))
