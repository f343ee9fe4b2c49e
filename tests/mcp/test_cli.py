"""``troupe mcp`` as the CLI offers it: listed in ``troupe --help``, its own ``--help``, neither of them
importing the MCP SDK (``troupe --help`` stays fast), and a workspace that is not a folder refused."""

from __future__ import annotations

import subprocess
import sys

from tests.daemon.conftest import REPO

PROBE = """import sys
from daemon.cli.main import main
try:
    main({argv!r})
except SystemExit as exit:
    assert exit.code == 0, exit.code
print('LOADED', sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types', 'pydantic'))))
"""


def run_probe(argv: list[str]) -> str:
    return subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], cwd=REPO, capture_output=True, text=True,
                          check=True, timeout=60).stdout


def test_troupe_help_lists_mcp_without_importing_the_sdk() -> None:
    out = run_probe(["--help"])
    assert "    mcp " in out and "MCP server over stdio" in out
    assert "LOADED []" in out


def test_troupe_mcp_help_names_its_tools_and_options() -> None:
    out = run_probe(["mcp", "--help"])
    assert out.startswith("usage: troupe mcp [-h] [-w DIR]")
    words = " ".join(out.split())  # argparse wraps the description
    assert "ask, review, change, apply_change, discard_change, findings, test, job_status, cancel, answer" in words
    assert "LOADED []" in out


def test_a_workspace_that_is_not_a_folder_is_refused_before_serving() -> None:
    proc = subprocess.run([sys.executable, "-m", "daemon.cli.main", "mcp", "--workspace", "/no/such/folder"],
                          cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "troupe mcp: the workspace /no/such/folder is not a folder"
    assert proc.stdout == ""  # stdout is the protocol's: never anything else
