"""The build suite's static scores of a generated project: ChatDev 1.0's completeness and code text,
Troupe's placeholder check, and the consistency proxy (see :mod:`daemon.eval.srdd` for the table).

The ``chatdev_*`` functions re-implement ChatDev 1.0's ``chatdev/eval_quality.py`` rule for rule,
quirks included, so the numbers compare with the paper's; the others are Troupe's stronger checks.
"""

from __future__ import annotations

import keyword
import os
import re
from pathlib import Path

from daemon.agents.placeholders import CODE_SUFFIXES, find_unfinished
from daemon.experience.text import similarity, words
from daemon.workspace.files import list_repo_files

# Lines ChatDev drops before looking for "pass"/"todo" (case-insensitive substrings).
_CHATDEV_ALLOWED = ("password", "passenger", "passed", "passes")
# Words every Python file has (and ChatDev's ```Python fences, file names' "py"): they say nothing
# about the requirement.
_PYTHON_WORDS = frozenset(w.lower() for w in keyword.kwlist) | {"self", "cls", "init", "python", "py"}


def chatdev_code(root: Path) -> str:
    """ChatDev's ``get_code``: every ``*.py`` under ``root`` in ``os.walk`` order, keyed by base name
    (a later file with the same name replaces the earlier one's text), blank lines dropped, each as
    ``name`` + a fenced block; ``# None`` when there is no ``.py`` file."""
    books: dict[str, str] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(".py"):
                text = Path(folder, name).read_text(encoding="utf-8", errors="replace")
                books[name] = "\n".join(line for line in text.split("\n") if line.strip())
    code = "".join(f"{name}\n```Python\n{text}\n```\n\n" for name, text in books.items())
    return code.strip() if code else "# None"


def chatdev_completeness(root: Path) -> int:
    """ChatDev's completeness: 0 when any line of :func:`chatdev_code` (file-name and fence lines too)
    contains "pass" or "todo", case-insensitive, except lines with password/passenger/passed/passes;
    else 1. So ``bypass``, ``compass``, a ``todo_list`` or a file ``todo.py`` score 0, and a project
    without any ``.py`` file scores 1."""
    for line in chatdev_code(root).split("\n"):
        lower = line.lower()
        if any(word in lower for word in _CHATDEV_ALLOWED):
            continue
        if "pass" in lower or "todo" in lower:
            return 0
    return 1


def chatdev_strip_comments(code: str) -> str:
    """ChatDev's ``remove_comments``, run for ''' and then for \"\"\": lines starting with ``#`` dropped,
    the text inside every triple-quoted block deleted wherever it occurs (the quotes stay), and
    ``''''''\\n`` removed."""
    for pattern in (r"'''(.*?)'''", r'"""(.*?)"""'):
        code = "\n".join(line for line in code.split("\n") if not line.strip().startswith("#"))
        inner = [match.group(1) for match in re.finditer(pattern, code, re.DOTALL)]
        for text in [*inner, "''''''\n"]:
            code = code.replace(text, "")
    return code


def code_files(root: Path) -> list[str]:
    """The project's code files (``.gitignore`` honoured), as relative paths."""
    return [rel for rel in list_repo_files(root) if rel.endswith(CODE_SUFFIXES)]


def unfinished(root: Path) -> list[str]:
    """Troupe's placeholder check (:func:`daemon.agents.placeholders.find_unfinished`) on the project:
    stub functions, ``TODO``/``FIXME`` comments, Python that does not parse."""
    files = [(rel, (root / rel).read_text(encoding="utf-8", errors="replace")) for rel in code_files(root)]
    return [str(place) for place in find_unfinished(files)]


def consistency(requirement: str, root: Path) -> float:
    """The consistency proxy: TF-IDF cosine (:func:`daemon.experience.text.similarity`) between the
    requirement and the project's code as ChatDev gives it to its embedding model
    (:func:`chatdev_code`, then :func:`chatdev_strip_comments`), with Python keywords and ``self``
    left out of the code's words; 0.0 for a project without Python."""
    code = chatdev_strip_comments(chatdev_code(root))
    if code == "# None":
        return 0.0
    code_words = " ".join(word for word in words(code) if word not in _PYTHON_WORDS)
    return round(similarity(requirement, code_words), 4)


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
