"""How long each test file takes, to hand the longest to pytest-xdist's workers first.

``scripts/test`` runs the files on several workers (``--dist loadfile``), each file whole on one of
them, in collection order. Left to xdist, the files are ordered by how many tests they hold, so
the few long end-to-end files (the eval suites, the team server's faults) came last and ran alone
at the end. ``tests/conftest.py`` orders the files by the seconds recorded in
``tests/file_durations.json`` instead, longest first; a file not in it counts as
:data:`UNKNOWN_S`. Only the order depends on these figures, never a result.

Refresh them from a run that printed every duration::

    .venv/bin/pytest -n 3 --dist loadfile -m "not slow" --durations=0 | tee /tmp/durations.log
    .venv/bin/python -m tests.file_durations /tmp/durations.log
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

RECORD = Path(__file__).with_name("file_durations.json")
UNKNOWN_S = 5.0
_LINE = re.compile(r"\s*([\d.]+)s (?:call|setup|teardown)\s+([^:\s]+)::")


def seconds_per_file(lines: list[str]) -> dict[str, float]:
    """The summed setup, call and teardown seconds of each file in ``pytest --durations=0`` output."""
    total: Counter[str] = Counter()
    for line in lines:
        if match := _LINE.match(line):
            total[match.group(2)] += float(match.group(1))
    return {name: round(seconds, 1) for name, seconds in sorted(total.items())}


def load() -> dict[str, float]:
    try:
        data = json.loads(RECORD.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def ordered(paths: list[str], durations: dict[str, float]) -> list[str]:
    """``paths`` (each once), longest first; ties keep their order."""
    return sorted(dict.fromkeys(paths), key=lambda path: -durations.get(path, UNKNOWN_S))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    figures = seconds_per_file(Path(argv[0]).read_text(errors="replace").splitlines())
    if not figures:
        print(f"no durations in {argv[0]}: run pytest with --durations=0", file=sys.stderr)
        return 1
    RECORD.write_text(json.dumps(figures, indent=1) + "\n")
    print(f"{len(figures)} files, {sum(figures.values()):.0f} s in all -> {RECORD}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
