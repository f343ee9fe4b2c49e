"""The build suite's tasks: a fixed stratified sample of SRDD, read from where the user keeps it.

SRDD (ChatDev's Software Requirement Description Dataset, 1,200 requirements in 40 categories)
is CC BY-NC 4.0, so Troupe does not ship it: ``troupe eval build --data PATH`` (or
``TROUPE_SRDD=PATH``) names ``data_attribute_format.csv`` or the folder holding it; a
``check.csv`` beside it (the authors' check of each description against their five writing
rules) is used when present.

The sample: one task per category, the first row of the category (in file order) that obeys all
five rules (``CountObey`` 5, joined on the description; without ``check.csv``, the first row).
Categories are ordered alphabetically and visited with a stride of 7 (0, 7, 14, …, modulo their
number), so the first ten of the 40 span the alphabet and mix games with other software; that is
the order ``--limit N`` cuts.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

from daemon.eval.suite import SuiteError

ENV = "TROUPE_SRDD"
TASKS_FILE = "data_attribute_format.csv"
CHECK_FILE = "check.csv"
SOURCE = ("SRDD is not bundled with Troupe (its licence, CC BY-NC 4.0, is non-commercial). Get "
          f"SRDD/data/{TASKS_FILE} and SRDD/data/{CHECK_FILE} from https://github.com/OpenBMB/ChatDev "
          "(branch chatdev1.0) and pass --data PATH (the CSV or its folder) or set TROUPE_SRDD=PATH.")
STRIDE = 7


@dataclass(frozen=True)
class Task:
    row: int  # 1-based data row in the tasks CSV
    category: str
    name: str
    description: str

    @property
    def id(self) -> str:
        return f"{self.category}/{self.name}"


def tasks_path(data: Path | None) -> Path:
    """The tasks CSV from ``data`` (a file, or a folder holding it), else from TROUPE_SRDD."""
    given = data if data is not None else (Path(os.environ[ENV]) if os.environ.get(ENV) else None)
    if given is None:
        raise SuiteError(f"the build suite needs SRDD. {SOURCE}")
    path = Path(given).expanduser()
    if path.is_dir():
        path = path / TASKS_FILE
    if not path.is_file():
        raise SuiteError(f"no SRDD tasks file at {path}. {SOURCE}")
    return path


def read_tasks(path: Path) -> list[Task]:
    """Every row of the tasks CSV (header ``Name,Description,Category``)."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        missing = {"Name", "Description", "Category"} - set(reader.fieldnames or [])
        if missing:
            raise SuiteError(f"{path} is not SRDD's {TASKS_FILE}: it lacks the column(s) {', '.join(sorted(missing))}")
        return [Task(number, row["Category"].strip(), row["Name"].strip(), row["Description"].strip())
                for number, row in enumerate(reader, 1) if row["Description"] and row["Category"]]


def clean_descriptions(path: Path) -> set[str] | None:
    """The descriptions ``check.csv`` (beside the tasks CSV) says obey all five rules; None without it."""
    check = path.with_name(CHECK_FILE)
    if not check.is_file():
        return None
    with check.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = [cell.strip() for cell in next(reader, [])]
        if "SoftwareDescription" not in header or "CountObey" not in header:
            raise SuiteError(f"{check} is not SRDD's {CHECK_FILE}: no SoftwareDescription/CountObey columns")
        text, count = header.index("SoftwareDescription"), header.index("CountObey")
        return {row[text].strip() for row in reader if len(row) > max(text, count) and row[count].strip() == "5"}


def sample(tasks: list[Task], clean: set[str] | None) -> list[Task]:
    """One task per category (the first clean row, else the first row), in stride order."""
    chosen: dict[str, Task] = {}
    for task in tasks:
        first = task.category not in chosen
        if first or (clean is not None and chosen[task.category].description not in clean
                     and task.description in clean):
            chosen[task.category] = task
    categories = sorted(chosen)
    order: list[int] = []
    position = 0
    while len(order) < len(categories):
        while position in order:  # only when STRIDE shares a factor with the number of categories
            position = (position + 1) % len(categories)
        order.append(position)
        position = (position + STRIDE) % len(categories)
    return [chosen[categories[i]] for i in order]


def load_sample(data: Path | None) -> list[Task]:
    path = tasks_path(data)
    return sample(read_tasks(path), clean_descriptions(path))
