"""Without MCP servers nothing pays for MCP: the SDK is imported with the first server."""

from __future__ import annotations

import subprocess
import sys


def _mcp_loaded(code: str) -> bool:
    probe = f"import sys\n{code}\nprint('mcp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return done.stdout.strip() == "True"


def test_the_package_and_an_empty_configuration_do_not_import_the_sdk() -> None:
    assert not _mcp_loaded("import dsh_tool_mcp\ndsh_tool_mcp.McpServers({'servers': {}})")


def test_a_configured_server_imports_it() -> None:
    server = "{'servers': {'s': {'command': 'true'}}}"
    assert _mcp_loaded(f"import dsh_tool_mcp\ndsh_tool_mcp.McpServers({server})")
