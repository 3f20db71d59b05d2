"""The cross-process clauses rebuild a backend in a child from "module:function" or a file."""

from __future__ import annotations

import json
from pathlib import Path

from dsh_persistence.testing._child import load_factory


def test_child_factory_resolves_module_and_function() -> None:
    assert load_factory("json:dumps") is json.dumps


def test_child_factory_resolves_a_python_file_and_function(tmp_path: Path) -> None:
    source = tmp_path / "factory_module.py"
    source.write_text("def make(args):\n    return ('made', args)\n", encoding="utf-8")
    assert load_factory(f"{source}:make")({"root": "/r"}) == ("made", {"root": "/r"})
