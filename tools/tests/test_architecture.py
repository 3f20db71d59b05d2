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
page = _load("architecture_page")


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


def test_the_architecture_page_is_written_from_the_pyprojects() -> None:
    text = (ROOT / page.PAGE).read_text(encoding="utf-8")
    assert page.render(ROOT, text) == text, "run python tools/architecture_page.py"


def test_the_package_map_follows_a_changed_pyproject(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-llm", ["pydantic>=2"], "")
    _package(tmp_path, "dsh-tool-mcp", ["dsh-llm>=0.1,<0.2", "mcp>=2"], "")
    _package(tmp_path, "dsh-agent-core", ["dsh-llm>=0.1,<0.2", "click>=8"], "")
    _with_extra(tmp_path, "dsh-agent-core", "mcp", "dsh-tool-mcp>=0.1,<0.2")
    text = (
        "intro\n<!-- begin generated: layers -->\nold\n<!-- end generated: layers -->\n"
        "<!-- begin generated: package-map -->\n<!-- end generated: package-map -->\noutro\n"
    )
    written = page.render(tmp_path, text)
    assert written.startswith("intro\n")
    assert written.endswith("outro\n")
    rows = [line for line in written.splitlines() if line.startswith("| [`")]
    assert [row.split("`")[1] for row in rows] == ["dsh-llm", "dsh-tool-mcp", "dsh-agent-core"]
    assert rows[1].endswith("| implementation |  | dsh-llm, mcp |")
    assert rows[2].endswith("| dsh-llm, click; extra `[mcp]`: dsh-tool-mcp |")
    assert "│  dsh-tool-mcp" in written
    assert "dsh-llm  ──► nothing" in written


def test_a_page_without_a_generated_region_is_refused(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-llm", [], "")
    with pytest.raises(SystemExit, match="no generated region for layers, package-map"):
        page.render(tmp_path, "no regions here\n")


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


def test_an_implementation_spelling_a_failure_code_of_its_own_fails(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-llm", [], "")
    own = "import dsh_llm\nfailure = dsh_llm.LlmFailure(message='x', code='MY_OWN')\n"
    _package(tmp_path, "dsh-model-openai", ["dsh-llm>=0.1,<0.2"], own)
    shared = (
        "import dsh_llm\nfailure = dsh_llm.LlmFailure(message='x', code=dsh_llm.FailureCode.AUTH)\n"
    )
    _package(tmp_path, "dsh-agent-loop", ["dsh-llm>=0.1,<0.2"], shared)
    errors = arch.check(tmp_path)
    assert len(errors) == 1, errors
    assert "dsh-model-openai" in errors[0]
    assert "LlmFailure code 'MY_OWN'" in errors[0]


def test_an_implementation_with_a_closed_error_of_its_own_fails(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-agent", [], "class AgentClosedError(Exception):\n    pass\n")
    own = (
        "import dsh_agent\n"
        "class GoodClosedError(dsh_agent.AgentClosedError):\n    pass\n"
        "class MyClosedError(Exception):\n    pass\n"
        "def f():\n    raise RuntimeError('the thing is closed')\n"
    )
    _package(tmp_path, "dsh-agent-loop", ["dsh-agent>=0.1,<0.2"], own)
    errors = arch.check(tmp_path)
    assert len(errors) == 2, errors
    assert "MyClosedError is a closed error of its own" in errors[0]
    assert "a bare RuntimeError says something is closed" in errors[1]


def test_cycle_is_reported(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-llm", ["dsh-session>=0.1,<0.2"], "")
    _package(tmp_path, "dsh-session", ["dsh-llm>=0.1,<0.2"], "")
    assert any(e.startswith("dependency cycle") for e in arch.check(tmp_path))


def _modules(root: Path, name: str, modules: dict[str, str]) -> None:
    """Add source files (paths relative to the package's import directory) to a fake package."""
    src = root / "packages" / name / "src" / name.replace("-", "_")
    for relative, text in modules.items():
        path = src / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _module_cycles(root: Path) -> list[str]:
    return [e for e in arch.check(root) if "import cycle" in e]


def test_a_module_cycle_through_a_type_checking_import_is_reported(tmp_path: Path) -> None:
    _package(
        tmp_path, "dsh-persistence-jsonl", [], "from dsh_persistence_jsonl._backend import B\n"
    )
    _modules(
        tmp_path,
        "dsh-persistence-jsonl",
        {
            "_backend.py": "from dsh_persistence_jsonl._handle import H\nclass B: ...\n",
            "_handle.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from dsh_persistence_jsonl._backend import B\n"
                "class H: ...\n"
            ),
        },
    )
    (cycle,) = _module_cycles(tmp_path)
    assert cycle.startswith("dsh-persistence-jsonl: import cycle _backend -> _handle -> _backend:")
    assert "dsh_persistence_jsonl/_backend.py:1 imports dsh_persistence_jsonl._handle;" in cycle
    assert (
        "dsh_persistence_jsonl/_handle.py:3 imports dsh_persistence_jsonl._backend under "
        "TYPE_CHECKING" in cycle
    )


def test_a_runtime_cycle_of_relative_imports_names_the_whole_circle(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-shell", [], "")
    _modules(
        tmp_path,
        "dsh-shell",
        {
            "_a.py": "from ._b import x\n",
            "_b.py": "try:\n    from . import _c\nexcept ImportError:\n    pass\nx = 1\n",
            "_c.py": "class C:\n    from dsh_shell._a import x\n",
        },
    )
    (cycle,) = _module_cycles(tmp_path)
    assert "import cycle _a -> _b -> _c -> _a:" in cycle
    assert "_b.py:2 imports dsh_shell._c" in cycle
    assert "TYPE_CHECKING" not in cycle


def test_a_submodule_importing_its_package_init_that_imports_it_is_a_cycle(
    tmp_path: Path,
) -> None:
    _package(tmp_path, "dsh-tools", [], "from dsh_tools._registry import Registry\nX = 1\n")
    _modules(tmp_path, "dsh-tools", {"_registry.py": "from dsh_tools import X\nRegistry = X\n"})
    (cycle,) = _module_cycles(tmp_path)
    assert "import cycle dsh_tools -> _registry -> dsh_tools:" in cycle


def test_one_way_imports_and_imports_inside_functions_are_no_cycle(tmp_path: Path) -> None:
    _package(
        tmp_path,
        "dsh-session",
        [],
        "from dsh_session._session import Session\nfrom dsh_session import _codec\n",
    )
    _modules(
        tmp_path,
        "dsh-session",
        {
            "_codec.py": "import json\n",
            "_session.py": (
                "from dsh_session._codec import json\n"
                "from dsh_session.sub import helper\n"
                "class Session: ...\n"
            ),
            "sub/__init__.py": "from .helper import go\n",
            "sub/helper.py": (
                "from .. import _codec\n"
                "def go() -> None:\n"
                "    from dsh_session._session import Session  # deferred: not module-level\n"
            ),
        },
    )
    assert arch.check(tmp_path) == []


def _with_extra(root: Path, name: str, extra: str, requirement: str) -> None:
    """Give a fake package ``[project.optional-dependencies] extra = [requirement]``."""
    pyproject = root / "packages" / name / "pyproject.toml"
    text = pyproject.read_text().replace(
        "[dependency-groups]",
        f'[project.optional-dependencies]\n{extra} = ["{requirement}"]\n[dependency-groups]',
    )
    pyproject.write_text(text)


def test_an_extra_imported_when_the_module_is_imported_fails(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-tool-mcp", [], "")
    _package(tmp_path, "dsh-agent-core", [], "import os\nimport dsh_tool_mcp\n")
    _with_extra(tmp_path, "dsh-agent-core", "mcp", "dsh-tool-mcp>=0.1,<0.2")
    (error,) = arch.check(tmp_path)
    assert (
        "dsh_agent_core/__init__.py:2: imports 'dsh_tool_mcp' when the module is imported" in error
    )
    assert "dsh-tool-mcp comes only with dsh-agent-core[mcp]" in error


def test_an_extra_imported_where_it_is_used_passes(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-tool-mcp", [], "")
    _package(
        tmp_path,
        "dsh-agent-core",
        [],
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from dsh_tool_mcp import McpConfig\n"
        "def servers() -> None:\n"
        "    import dsh_tool_mcp\n",
        test="import dsh_tool_mcp\n",
    )
    _with_extra(tmp_path, "dsh-agent-core", "mcp", "dsh-tool-mcp>=0.1,<0.2")
    assert arch.check(tmp_path) == []


def test_an_extra_out_of_the_lockstep_range_is_reported(tmp_path: Path) -> None:
    _package(tmp_path, "dsh-tool-mcp", [], "")
    _package(tmp_path, "dsh-agent-core", [], "")
    _with_extra(tmp_path, "dsh-agent-core", "mcp", "dsh-tool-mcp>=0.1")
    assert any("must be 'dsh-tool-mcp>=0.1,<0.2'" in e for e in arch.check(tmp_path))


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
    for name in ("dsh-llm", "dsh-session"):  # the bump refuses a package without a changelog
        (tmp_path / "packages" / name / "CHANGELOG.md").write_text("## [Unreleased]\n")
    bump.bump(tmp_path, "0.2.0")
    text = (tmp_path / "packages" / "dsh-session" / "pyproject.toml").read_text()
    assert 'version = "0.2.0"' in text
    assert '"dsh-llm>=0.2,<0.3"' in text
    assert arch.check(tmp_path) == []


def test_bump_refuses_a_malformed_version(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"not a MAJOR\.MINOR\.PATCH"):
        bump.bump(tmp_path, "two")


def test_every_package_is_first_party_to_ruffs_import_sorting() -> None:
    import tomllib

    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    known = set(settings["tool"]["ruff"]["lint"]["isort"]["known-first-party"])
    packages = {p.name.replace("-", "_") for p in (ROOT / "packages").iterdir() if p.is_dir()}
    assert packages - known == set()
