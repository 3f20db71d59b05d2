"""Build (once) and cache the real OpenAI-compatible servers `nox -s realmodel` runs against.

One build of llama.cpp serves both servers: the C++ ``llama-server`` and the shared libraries
that ``llama-cpp-python[server]`` loads (its wheel is built with ``LLAMA_BUILD=OFF``, so pip
compiles nothing, and ``LLAMA_CPP_LIB_PATH``/``MTMD_CPP_LIB`` point it at this build).

llama.cpp is built with ``GGML_NATIVE=OFF``: a native build on these virtual machines picks AMX
instructions that fault at run time. The build takes about 15 minutes on 2 cores, so its
results are kept in the cache folder (``$DSH_REALMODEL_CACHE``, else ``~/.cache/dsh-py/realmodel``)
and reused while the pinned version is unchanged.

Usage: ``python tools/realmodel/build_llama.py`` prints the cache folder's layout as JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

LLAMA_CPP_PYTHON = "0.3.36"
"""The pinned llama-cpp-python release; its sdist carries the llama.cpp source tree we build."""


def cache_root() -> Path:
    """The folder that keeps the build between runs."""
    configured = os.environ.get("DSH_REALMODEL_CACHE")
    base = Path(configured) if configured else Path.home() / ".cache" / "dsh-py" / "realmodel"
    return base / f"llama-cpp-python-{LLAMA_CPP_PYTHON}"


def _log(message: str) -> None:
    print(f"[realmodel build] {message}", file=sys.stderr, flush=True)


def _run(*argv: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    _log(" ".join(argv))
    subprocess.run(argv, cwd=cwd, env=env, check=True)


def _sdist(root: Path) -> Path:
    source = root / "src" / f"llama_cpp_python-{LLAMA_CPP_PYTHON}"
    if (source / "vendor" / "llama.cpp" / "CMakeLists.txt").is_file():
        return source
    downloads = root / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    archive = downloads / f"llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"
    if not archive.is_file():
        _run(
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
            "--no-binary", ":all:", f"llama-cpp-python=={LLAMA_CPP_PYTHON}",
            "-d", str(downloads),
        )  # fmt: skip
    if source.exists():
        shutil.rmtree(source)
    (root / "src").mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(root / "src", filter="data")
    return source


def _libraries(root: Path) -> Path:
    build = root / "build"
    server = build / "bin" / "llama-server"
    if server.is_file() and any((build / "bin").glob("libmtmd.so*")):
        return build / "bin"
    source = _sdist(root)
    jobs = str(os.cpu_count() or 2)
    _run(
        "cmake", "-S", str(source / "vendor" / "llama.cpp"), "-B", str(build),
        "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=ON", "-DGGML_NATIVE=OFF",
        "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=ON",
        "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
    )  # fmt: skip
    _run("cmake", "--build", str(build), "--target", "llama-server", "mtmd", "-j", jobs)
    return build / "bin"


def _wheel(root: Path) -> Path:
    wheels = root / "wheels"
    found = sorted(wheels.glob(f"llama_cpp_python-{LLAMA_CPP_PYTHON}-*.whl"))
    if found:
        return found[0]
    source = _sdist(root)
    env = {**os.environ, "CMAKE_ARGS": "-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF"}
    _run(
        sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
        "-w", str(wheels), str(source), env=env,
    )  # fmt: skip
    found = sorted(wheels.glob(f"llama_cpp_python-{LLAMA_CPP_PYTHON}-*.whl"))
    if not found:
        raise SystemExit(f"pip wheel left no llama_cpp_python wheel in {wheels}")
    return found[0]


def build() -> dict[str, str]:
    """Build what is missing and return the paths the realmodel tests need."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    lib_dir = _libraries(root)
    wheel = _wheel(root)
    mtmd = sorted(lib_dir.glob("libmtmd.so*"))[0]
    templates = _sdist(root) / "vendor" / "llama.cpp" / "models" / "templates"
    return {
        "llama_server": str(lib_dir / "llama-server"),
        "lib_dir": str(lib_dir),
        "mtmd_lib": str(mtmd),
        "wheel": str(wheel),
        "templates": str(templates),
    }


if __name__ == "__main__":
    print(json.dumps(build(), indent=2))
