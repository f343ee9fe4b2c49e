"""The ``troupe`` command starts fast: ``--help`` never imports litellm."""

from __future__ import annotations

import subprocess
import sys


def test_help_does_not_import_litellm_or_the_engine() -> None:
    code = (
        "import sys\n"
        "from daemon.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('litellm', 'daemon.agents', 'pygls', 'slack_bolt') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_doctor_reports_a_missing_model_clearly(tmp_path) -> None:
    env = {"TROUPE_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "PATH": "/usr/bin:/bin",
           "TROUPE_LOCAL_MODEL": "0"}
    out = subprocess.run([sys.executable, "-m", "daemon.cli.main", "doctor", "--no-model"],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 1
    assert "no model configured: set TROUPE_MODEL" in out.stdout
    sandbox = next(line for line in out.stdout.splitlines() if " sandbox " in line)
    assert "isolated" in sandbox and "project code runs on " in sandbox
