"""The architecture checker catches each kind of violation, and the real tree is clean."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


arch = _load("check_architecture")
bump = _load("bump_version")


def _package(root: Path, name: str, deps: list[str], source: str, test: str = "") -> None:
    base = root / "packages" / name
    src = base / "src" / name.replace("-", "_")
    src.mkdir(parents=True)
    (src / "__init__.py").write_text(source)
    (base / "tests").mkdir()
    (base / "tests" / "test_x.py").write_text(test)
    dep_list = ", ".join(f'"{d}"' for d in deps)
    (base / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "0.1.0"\ndependencies = [{dep_list}]\n'
        '[dependency-groups]\ntest = ["pytest>=8"]\n'
    )


def test_the_repository_follows_the_rule() -> None:
    assert arch.check(ROOT) == []


def test_clean_fake_tree_passes(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-llm", ["pydantic>=2"], "import pydantic\n")
    _package(tmp_path, "dsh-session", ["dsh-llm>=0.1,<0.2"], "import dsh_llm\nimport json\n")
    assert arch.check(tmp_path) == []


def test_implementation_importing_another_implementation_fails(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-bash-local", [], "")
    _package(tmp_path, "dsh-tool-bash", ["dsh-bash-local>=0.1,<0.2"], "import dsh_bash_local\n")
    errors = arch.check(tmp_path)
    assert any("may not depend on implementation dsh-bash-local" in e for e in errors)


def test_undeclared_import_fails_with_file_and_line(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-shell", [], "import os\nimport dsh_paths\n")
    _package(tmp_path, "dsh-paths", [], "")
    errors = arch.check(tmp_path)
    assert any("__init__.py:2: imports 'dsh_paths'" in e for e in errors)


def test_seam_depending_on_an_implementation_fails(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-paths", [], "")
    _package(tmp_path, "dsh-shell", ["dsh-paths>=0.1,<0.2"], "import dsh_paths\n")
    assert any("a seam may depend only on seams" in e for e in arch.check(tmp_path))


def test_cycle_is_reported(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-llm", ["dsh-session>=0.1,<0.2"], "")
    _package(tmp_path, "dsh-session", ["dsh-llm>=0.1,<0.2"], "")
    assert any(e.startswith("dependency cycle") for e in arch.check(tmp_path))


def test_test_importing_an_undeclared_sibling_fails(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-shell", [], "", test="import dsh_bash_local\n")
    _package(tmp_path, "dsh-bash-local", ["dsh-shell>=0.1,<0.2"], "import dsh_shell\n")
    errors = arch.check(tmp_path)
    assert any("belong in tests-integration" in e for e in errors)


def test_unknown_distribution_is_reported(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-mystery", [], "")
    assert any("not a known distribution" in e for e in arch.check(tmp_path))


def test_wrong_sibling_range_is_reported(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-llm", [], "")
    _package(tmp_path, "dsh-session", ["dsh-llm>=0.1"], "import dsh_llm\n")
    assert any("must be 'dsh-llm>=0.1,<0.2'" in e for e in arch.check(tmp_path))


def test_bump_moves_every_version_and_sibling_range(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-llm", [], "")
    _package(tmp_path, "dsh-session", ["dsh-llm>=0.1,<0.2"], "import dsh_llm\n")
    bump.bump(tmp_path, "0.2.0")
    text = (tmp_path / "packages" / "dsh-session" / "pyproject.toml").read_text()
    assert 'version = "0.2.0"' in text
    assert '"dsh-llm>=0.2,<0.3"' in text
    assert arch.check(tmp_path) == []


def test_bump_refuses_a_malformed_version(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"not a MAJOR\.MINOR\.PATCH"):
        bump.bump(tmp_path, "two")
