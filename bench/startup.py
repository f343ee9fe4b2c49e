"""Start-up cost of the CLI and of litellm: why litellm is imported lazily.

    .venv/bin/python bench/startup.py [--runs 5]

Prints the median and max wall time of ``troupe --help``, of ``import litellm`` (offline cost
map), their ratio, and whether ``troupe --help`` imported litellm at all.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def timed(argv: list[str], runs: int, env: dict[str, str]) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true"}
    troupe = shutil.which("troupe", path=str(Path(sys.executable).parent)) or "troupe"
    help_times = timed([troupe, "--help"], args.runs, env)
    bare = timed([sys.executable, "-c", "pass"], args.runs, env)
    litellm = timed([sys.executable, "-c", "import litellm"], args.runs, env)
    probe = subprocess.run(
        [sys.executable, "-c", "import sys; from daemon.cli.main import build_parser; build_parser().format_help();"
         "print('litellm' in sys.modules)"], capture_output=True, text=True, env=env, check=True)
    print(f"python -c pass      median {statistics.median(bare):.3f}s  max {max(bare):.3f}s")
    print(f"troupe --help       median {statistics.median(help_times):.3f}s  max {max(help_times):.3f}s")
    print(f"import litellm      median {statistics.median(litellm):.3f}s  max {max(litellm):.3f}s")
    print(f"ratio litellm/help  {statistics.median(litellm) / statistics.median(help_times):.1f}x")
    print(f"troupe --help imports litellm: {probe.stdout.strip()}")


if __name__ == "__main__":
    main()
