"""Whether a reply has the shape its phase produces — checked before it is used.

Each check returns None for a usable reply, or the correction the model gets (precise: what was
wrong, and what to send instead). Code edits and findings have their own parsers (their errors
are written the same way); this module covers documents, answers and replies cut at the cap.
Empty replies never get here: the engine treats them as a model failure (``accounting``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import PurePosixPath

CITATION = re.compile(r"([\w./-]+\.[A-Za-z0-9]+):(\d+)(?:-(\d+))?")
_PROSE_SUFFIXES = (".md", ".markdown", ".rst", ".adoc", ".txt")
_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[\w,\s-]+\])?\s*([<>=!~]=?\s*[\w.*+!-]+\s*,?\s*)*"
                          r"(;.*)?$")
_ACKNOWLEDGEMENT = re.compile(r"^\W*(understood|sure|ok(ay)?|certainly|i agree|agreed|got it|noted|great|"
                              r"thank you|thanks|yes)\b", re.IGNORECASE)
_NOT_CONTENT = re.compile(r"[\s`'\".,;:()\[\]-]+")  # what is left of a reply of citations only
_NOTHING_NEEDED = re.compile(r"\b(no|none|not need|without)\b.{0,40}\b(package|dependenc|requirement|librar)"
                             r"|standard library", re.IGNORECASE)


_PLACEHOLDER_LINE = re.compile(r"^\s*(<(?:the|every|your)\b[\w\s',.-]*>)\s*$", re.MULTILINE | re.IGNORECASE)


def copied_placeholder(text: str) -> str | None:
    """A format's placeholder (``<the complete content of the file>``) copied where code belongs."""
    match = _PLACEHOLDER_LINE.search(text)
    return match.group(1) if match else None


def says_nothing_needed(reply: str) -> bool:
    """A requirements reply in words that says no third-party package is needed."""
    return _NOTHING_NEEDED.search(reply) is not None


def cut_at_cap(max_tokens: int | None, what: str) -> str:
    """The correction for a reply that stopped at the token cap."""
    limit = f"the limit of {max_tokens} tokens" if max_tokens else "the length limit"
    return f"Your reply was cut off at {limit}, so it is incomplete. {what}"


def document_problem(text: str, path: str) -> str | None:
    """Why ``text`` is not the content of the document ``path`` (README.md, requirements.txt, ...)."""
    name = PurePosixPath(path).name
    fenced = f"Reply with the whole file in one code block: a line ```{_fence_lang(path)} {path}, the file, and ```."
    if not text.strip():
        return f"Your reply holds no {name}. {fenced}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if name.lower().startswith("requirements") and name.endswith(".txt"):
        wrong = [line for line in lines if not line.startswith(("#", "-")) and not _REQUIREMENT.match(line)]
        if wrong:
            return (f"{name} may hold only package requirements, one per line (such as: requests>=2), but your "
                    f"reply has {wrong[0][:80]!r}. Reply with only the file's lines in a code block; an empty "
                    "code block if no third-party package is needed.")
        return None
    if path.lower().endswith(_PROSE_SUFFIXES):
        if _ACKNOWLEDGEMENT.match(lines[0]) and len(lines) < 4:
            return f"Your reply answers the discussion, but it is not {name}. {fenced}"
        if path.lower().endswith((".md", ".markdown")) and not any(line.startswith("#") for line in lines):
            return (f"Your reply is not a Markdown document: {name} needs a title line starting with '# ' and "
                    f"sections. {fenced}")
    return None


def without_stdlib(text: str) -> str:
    """A requirements file without the lines that name a standard-library module (nothing to install)."""
    def stdlib(line: str) -> bool:
        match = re.match(r"^\s*([A-Za-z0-9_.-]+)", line)
        return match is not None and match.group(1).lower() in sys.stdlib_module_names

    return "\n".join(line for line in text.splitlines() if not stdlib(line))


def _fence_lang(path: str) -> str:
    return {".md": "markdown", ".txt": "text", ".rst": "rst", ".toml": "toml"}.get(PurePosixPath(path).suffix, "")


def citation_problems(answer: str, read: Callable[[str], str | None]) -> list[str]:
    """Each ``path:line`` in ``answer`` that names no file or a line the file does not have."""
    problems = []
    for path, first, last in dict.fromkeys(CITATION.findall(answer)):
        text = read(path)
        if text is None:
            problems.append(f"the answer cites {path}:{first}, but there is no such file")
            continue
        count = len(text.splitlines())
        for line in (first, last):
            if line and not 1 <= int(line) <= count:
                problems.append(f"the answer cites {path}:{line}, but {path} has {count} lines")
                break
    return problems


def answer_problem(answer: str) -> str | None:
    """Why ``answer`` is no answer: nothing but citations (``calc.py:13``, the shape of an example a
    small model copied). A short value is an answer ("0.2", "EUR", a path): questions ask for them,
    and sending one back made the bundled model talk its right value into a wrong one."""
    if _NOT_CONTENT.sub("", CITATION.sub("", answer)):
        return None
    return (f"Your reply ({answer.strip()[:80]!r}) only cites a place and does not answer the question. "
            "Answer it, then name the file and lines it comes from.")


def python_problem(path: str, text: str, before: str | None) -> str | None:
    """Why a whole Python file from a reply is not Python (a sentence copied into the block, a cut
    line), when the file it replaces was; None when it parses, or when it is not Python."""
    import ast

    if not path.endswith(".py"):
        return None
    for old in ([before] if before is not None else []):
        try:
            ast.parse(old)
        except (SyntaxError, ValueError):
            return None  # it was not valid before either: the model may be mid-way through a fix
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return (f"your {path} is not valid Python (line {exc.lineno}: {exc.msg}). Reply with the whole corrected "
                f"{path} again: only its Python lines inside the code block, no words.")
    except ValueError as exc:
        return f"your {path} is not valid Python ({exc}). Reply with the whole corrected {path} again."
    emptied = sorted(_stubs(text) & _stubs(before or "", bodies=True))  # functions that had code
    if emptied:
        return (f"your {path} leaves {', '.join(emptied)} without code: only a docstring (or pass, ...). Write the "
                f"code of its body, so it does what its docstring says, and send the whole {path} again.")
    return None


def _stubs(text: str, *, bodies: bool = False) -> set[str]:
    """The functions of ``text`` whose body is only a docstring, ``pass`` or ``...`` (``bodies``: the
    functions whose body is more than that)."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and bodies != all(
                isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
                for s in node.body):
            found.add(node.name)
    return found
