"""Certify the subprocess executor without pytest: ``python validate.py [options]``.

``validate(make_fixture)`` runs every contract clause (``make_fixture`` is called once per
clause) and returns a report. This script prints one line per clause, or the JSON report with
``--json``, and exits 1 if any clause failed.

- ``--only ID [ID ...]`` runs only those clauses;
- ``--variant NAME`` certifies one of the deliberately broken executors of
  ``tests/broken_variants.py`` instead, to see what a failure looks like;
- ``--safety-net SECONDS`` is how long a clause waits for an expected state (default 60).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any

from example_dsh_shell_subprocess import SubprocessExecutor

from dsh_shell.testing import CAPABILITIES, ExecutorFixture, validate

BROKEN_VARIANTS = Path(__file__).parent / "tests" / "broken_variants.py"


def make_executor(args: dict[str, Any]) -> SubprocessExecutor:
    """The executor (``args["variant"]``: a broken one) in this or a child process."""
    if args.get("variant") is None:
        return SubprocessExecutor()
    spec = importlib.util.spec_from_file_location("broken_variants", BROKEN_VARIANTS)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    executor: SubprocessExecutor = module.make_executor(args)
    return executor


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the JSON report")
    parser.add_argument("--only", nargs="+", metavar="ID", help="run only these clauses")
    parser.add_argument("--variant", help="certify this broken variant instead")
    parser.add_argument("--safety-net", type=float, default=60.0, metavar="SECONDS")
    options = parser.parse_args(argv)
    args = {"variant": options.variant}

    def make_fixture() -> ExecutorFixture:
        return ExecutorFixture(
            capabilities=CAPABILITIES,
            make=lambda: make_executor(args),
            child_factory=f"{Path(__file__).resolve()}:make_executor",
            child_args=args,
        )

    report = validate(make_fixture, only=options.only, safety_net=options.safety_net)
    if options.json:
        print(report.to_json())
    else:
        for clause in report.clauses:
            suffix = f"  ({clause.message})" if clause.message else ""
            print(f"{clause.status:4}  {clause.id}{suffix}")
        counts = report.to_dict()["counts"]
        print(", ".join(f"{count} {status}" for status, count in counts.items()))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
