"""What a model sees of a repository: a compact map, then the files that matter, within a token budget.

:func:`build_context` never sends the whole repository when it does not fit: the map lists
files (and, for Python, classes and functions with their lines via ``ast``; a few other
languages by pattern), the most relevant files follow in full, and a closing note says
what was left out. Relevance is lexical: the task's words and identifiers against each
file's path, symbols and text (weighted by rarity, like BM25's idf).
"""

from __future__ import annotations

import ast
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from daemon.workspace.files import list_repo_files
from daemon.workspace.paths import PathOutsideWorkspace, normalize_rel

__all__ = ["Context", "Symbol", "build_context", "estimate_tokens", "excerpt", "is_test_file", "list_repo_files",
           "python_symbols", "symbols_for"]

_STOPWORDS = frozenset({
    "the", "and", "for", "with", "that", "this", "from", "into", "when", "what", "which", "where", "make", "makes",
    "should", "would", "could", "does", "have", "has", "are", "was", "were", "not", "but", "all", "any", "can",
    "its", "use", "using", "add", "fix", "file", "files", "code", "please", "also", "then", "than", "them", "they",
    "there", "their", "our", "your", "you", "new", "get", "set", "let", "how", "why", "def", "class", "self",
    "return", "true", "false", "none", "import",
})
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_PATTERNS: dict[tuple[str, ...], list[tuple[str, re.Pattern[str]]]] = {
    (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs"): [
        ("function", re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*(\w+)")),
        ("class", re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+(\w+)")),
    ],
    (".go",): [
        ("function", re.compile(r"^func\s+(?:\([^)]*\)\s*)?(\w+)")),
        ("class", re.compile(r"^type\s+(\w+)\s+(?:struct|interface)\b")),
    ],
    (".rs",): [
        ("function", re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s+(\w+)")),
        ("class", re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait)\s+(\w+)")),
    ],
    (".java", ".kt", ".cs", ".scala"): [
        ("class", re.compile(r"^\s*(?:[\w@]+\s+)*(?:class|interface|enum|object|record)\s+(\w+)")),
    ],
    (".rb",): [
        ("function", re.compile(r"^\s*def\s+((?:self\.)?\w+[?!]?)")),
        ("class", re.compile(r"^\s*(?:class|module)\s+(\w+)")),
    ],
}
_PY_FALLBACK = [
    ("function", re.compile(r"^(?:async\s+)?def\s+(\w+)")),
    ("class", re.compile(r"^class\s+(\w+)")),
    ("method", re.compile(r"^\s+(?:async\s+)?def\s+(\w+)")),
]
_LANGUAGES = {".py": "python", ".js": "javascript", ".ts": "typescript", ".go": "go", ".rs": "rust", ".md": "markdown",
              ".toml": "toml", ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".sh": "bash", ".rb": "ruby"}


@dataclass
class Symbol:
    name: str     # qualified for methods and nested classes: ``Engine.run``
    kind: str     # "class", "function" or "method"
    line: int     # 1-based line of the ``def``/``class``
    end_line: int


@dataclass
class Context:
    text: str
    included: list[str] = field(default_factory=list)   # files shown in full
    left_out: list[str] = field(default_factory=list)   # relevant files that did not fit, most relevant first
    excerpts: list[str] = field(default_factory=list)   # of ``included``, the files shown only in part
    tokens: int = 0


def estimate_tokens(text: str) -> int:
    """A conservative token count (3 bytes a token; real tokenizers average 3.5 to 4 on code)."""
    return (len(text.encode("utf-8")) + 2) // 3


def python_symbols(source: str) -> list[Symbol]:
    """Classes, functions and methods with their lines; a file with a syntax error is scanned by pattern."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return _pattern_symbols(source, _PY_FALLBACK)
    found: list[Symbol] = []

    def visit(body: Iterable[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                found.append(Symbol(prefix + node.name, "class", node.lineno, node.end_lineno or node.lineno))
                visit(node.body, f"{prefix}{node.name}.", True)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                kind = "method" if in_class else "function"
                found.append(Symbol(prefix + node.name, kind, node.lineno, node.end_lineno or node.lineno))

    visit(tree.body, "", False)
    return found


def symbols_for(path: str, source: str) -> list[Symbol]:
    """Symbols of any supported language, picked by the file's extension ([] for others)."""
    suffix = Path(path).suffix.lower()
    if suffix in (".py", ".pyi"):
        return python_symbols(source)
    for suffixes, patterns in _PATTERNS.items():
        if suffix in suffixes:
            return _pattern_symbols(source, patterns)
    return []


def _pattern_symbols(source: str, patterns: list[tuple[str, re.Pattern[str]]]) -> list[Symbol]:
    found = []
    for number, line in enumerate(source.split("\n"), 1):
        for kind, pattern in patterns:
            match = pattern.match(line)
            if match:
                found.append(Symbol(match[1], kind, number, number))
                break
    return found


def task_terms(text: str) -> set[str]:
    """Lower-case words of ``text``, identifiers split at ``_`` and camelCase, stopwords dropped."""
    terms: set[str] = set()
    for word in _WORD.findall(text):
        parts = [word, *word.split("_"), *_CAMEL.findall(word)]
        terms.update(part.lower() for part in parts if len(part) >= 3)
    return terms - _STOPWORDS


@dataclass
class _File:
    path: str
    text: str
    symbols: list[Symbol]
    words: Counter[str]
    score: float = 0.0


def build_context(
    root: Path, task: str, token_budget: int, focus: Iterable[str] = (), *, line_numbers: bool = True,
    whole_if_fits: bool = False, focus_lines: Mapping[str, Iterable[int]] | None = None,
) -> Context:
    """A repository map, then the full text of the most relevant files, never more than ``token_budget`` tokens.

    ``focus`` files come first; then files ranked by lexical relevance to ``task``. Files
    that matter but do not fit are named in ``left_out`` and in a note at the end. A file too large
    to show whole is shown as an :func:`excerpt` instead when something says which part matters:
    its ``focus_lines`` (a diff's hunks, lines a traceback names), else the definitions ``task``
    names (a failing test's call of ``total`` in the file that defines it). With
    ``whole_if_fits``, a repository whose every file fits is shown whole in path order: nothing a
    ranking could miss, and the same text for every task (a provider's prompt cache serves it again).
    """
    root = Path(root)
    files = _load(root)
    budget = max(0, token_budget)
    if whole_if_fits:
        whole = [files[p] for p in sorted(files)]  # every file in full: no map (it would say it again)
        text = f"The repository's {len(whole)} files, in full{_numbers_note(line_numbers)}:\n" + "".join(
            _render_file(item, line_numbers) for item in whole)
        if estimate_tokens(text) <= budget:
            return Context(text=text, included=[f.path for f in whole], left_out=[], tokens=estimate_tokens(text))
    ranked = _rank(files, task, _focus(focus))
    map_text = _render_map(files, ranked, budget * 0.35)
    included: list[str] = []
    left_out: list[str] = []
    sections: list[str] = []
    used = estimate_tokens(map_text) + 60  # room for headers and the closing note
    wanted = {path: sorted(set(lines)) for path, lines in (focus_lines or {}).items()}
    excerpts: list[str] = []
    named = set(_WORD.findall(task))
    for item in ranked:
        section = _render_file(item, line_numbers)
        cost = estimate_tokens(section)
        room = budget - 8 * min(len(left_out) + 1, 20) - used
        lines = wanted.get(item.path) or [s.line for s in item.symbols
                                          if s.name.rsplit(".", 1)[-1] in named][:MAX_NAMED_EXCERPTS]
        if cost > room and lines:
            section = excerpt(item.path, item.text, lines, room, line_numbers=line_numbers, symbols=item.symbols)
            cost = estimate_tokens(section) if section else room + 1
        if cost <= room:
            sections.append(section)
            included.append(item.path)
            used += cost
            if section.startswith(f"{item.path} is "):
                excerpts.append(item.path)
        else:
            left_out.append(item.path)
    text = _assemble(map_text, sections, left_out, files, line_numbers)
    while estimate_tokens(text) > budget and sections:
        sections.pop()
        left_out.insert(0, included.pop())
        text = _assemble(map_text, sections, left_out, files, line_numbers)
    if estimate_tokens(text) > budget:
        text = text[: max(0, budget * 3 - 40)].rsplit("\n", 1)[0] + "\n[context cut to fit the budget]\n"
        text = text if estimate_tokens(text) <= budget else ""
    return Context(text=text, included=included, left_out=left_out, tokens=estimate_tokens(text),
                   excerpts=[p for p in excerpts if p in included])


MAX_NAMED_EXCERPTS = 6
"""At most this many definitions of a large file are shown because the task names them."""
EXCERPT_WINDOW = 15
"""Lines either side of a line of interest that no definition of a useful size holds."""


def excerpt(path: str, text: str, lines: Iterable[int], token_budget: int, *, line_numbers: bool = True,
            symbols: list[Symbol] | None = None) -> str:
    """The parts of a file too large to show whole that a phase needs: its header (imports), and for
    each line of ``lines``, in order, the innermost definition holding it (with its decorators) that
    fits the budget, else a window of lines around it. Within ``token_budget`` tokens; "" when not
    even the first part fits. The text says which lines it shows, so an edit can quote them."""
    source = text.split("\n")
    if source and source[-1] == "":
        source.pop()
    symbols = symbols if symbols is not None else symbols_for(path, text)
    budget = max(0, token_budget) - estimate_tokens(path) - 40

    def cost(start: int, end: int) -> int:
        return estimate_tokens("\n".join(source[start - 1:end])) + 2 * (end - start + 1) * line_numbers

    first_def = min((s.line for s in symbols), default=len(source) + 1)
    header_end = min(first_def - 1, 40)
    while header_end > 0 and source[header_end - 1].lstrip().startswith("@"):
        header_end -= 1
    header = [(1, header_end)] if header_end > 0 and cost(1, header_end) <= budget // 4 else []
    spans: list[tuple[int, int]] = []
    for line in lines:
        if not 1 <= line <= len(source) or any(a <= line <= b for a, b in header + spans):
            continue
        holding = sorted((s for s in symbols if s.line <= line <= s.end_line), key=lambda s: s.end_line - s.line)
        span = next(((_decorated(source, s.line), s.end_line) for s in holding
                     if cost(_decorated(source, s.line), s.end_line) <= budget // 2), None)
        spans.append(span or (max(1, line - EXCERPT_WINDOW), min(len(source), line + EXCERPT_WINDOW)))
    chosen = list(header)
    for start, end in spans:
        if sum(cost(a, b) for a, b in chosen) + cost(start, end) > budget:
            break
        chosen.append((start, end))
    if len(chosen) == len(header):  # not one of the lines that matter fits
        return ""
    chosen.sort()
    merged: list[tuple[int, int]] = []
    for start, end in chosen:
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    parts = []
    for start, end in merged:
        body = source[start - 1:end]
        parts.append(f"(lines {start}-{end})\n" + "\n".join(
            f"{n:>4}| {line}" for n, line in enumerate(body, start)) if line_numbers else
            f"(lines {start}-{end})\n" + "\n".join(body))
    ticks = "````" if "```" in text else "```"
    language = _LANGUAGES.get(Path(path).suffix.lower(), "")
    shown = ", ".join(f"{a}-{b}" for a, b in merged)
    return (f"{path} is {len(source)} lines, too large to show whole: only lines {shown} (the definitions that "
            f"matter here). Change it with SEARCH/REPLACE blocks, or send back whole only the definitions you change, "
            f"never the whole file.\n{ticks}{language}\n"
            + "\n...\n".join(parts) + f"\n{ticks}\n")


def _decorated(source: list[str], line: int) -> int:
    """The first line of the definition at ``line``, its decorators included."""
    while line > 1 and source[line - 2].lstrip().startswith("@"):
        line -= 1
    return line


def _load(root: Path) -> dict[str, _File]:
    files = {}
    for rel in list_repo_files(root):
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # vanished or changed since the listing: nothing to show
        words = Counter(term for line in text.split("\n") for term in task_terms(line))
        files[rel] = _File(rel, text, symbols_for(rel, text), words)
    return files


def _focus(focus: Iterable[str]) -> list[str]:
    clean = []
    for rel in focus:
        try:
            clean.append(normalize_rel(rel))
        except PathOutsideWorkspace:
            continue  # a caller's bad focus path only loses its priority
    return clean


def _rank(files: dict[str, _File], task: str, focus: list[str]) -> list[_File]:
    """Focus files in the given order, then every file with some relevance to the task, best first."""
    terms = task_terms(task)
    mentioned = {token.strip("`'\".,:;()") for token in task.split()}
    tests_unasked = not terms & {"test", "tests", "pytest", "testing", "unittest"}
    idf = {term: math.log(1 + len(files) / (sum(1 for f in files.values() if term in f.words) or 1)) for term in terms}
    for item in files.values():
        item.score = 0.0
        path_words = task_terms(item.path.replace("/", " ").replace(".", " "))
        symbol_words = task_terms(" ".join(symbol.name for symbol in item.symbols))
        for term in terms:
            tf = item.words.get(term, 0)
            weight = (1 + math.log(tf) if tf else 0) + 2 * (term in path_words) + 1.5 * (term in symbol_words)
            item.score += idf[term] * weight
        if tests_unasked and is_test_file(item.path):
            item.score *= 0.6  # tests mention everything they test; prefer the code unless tests are the subject
        if item.path in mentioned or Path(item.path).name in mentioned:
            item.score += 100.0
    chosen = [files[p] for p in dict.fromkeys(focus) if p in files]
    rest = sorted((f for f in files.values() if f.score > 0 and f.path not in focus), key=lambda f: (-f.score, f.path))
    if not chosen and not rest:
        rest = [f for f in files.values() if Path(f.path).name.lower().startswith(("readme", "main.", "__main__."))]
    return chosen + rest


def is_test_file(path: str) -> bool:
    """Whether ``path`` belongs to the tests: under a ``tests``/``test``/``testing`` folder, a
    ``test_*``/``*_test.py`` module, or a ``conftest.py``."""
    parts = path.split("/")
    name = parts[-1]
    return (any(p in ("tests", "test", "testing") for p in parts[:-1]) or name.startswith("test_")
            or name.endswith("_test.py") or name == "conftest.py")


def _render_map(files: dict[str, _File], ranked: list[_File], budget: float) -> str:
    """Paths (most relevant first to get a place), then symbols of relevant files, as long as they fit."""
    order = ranked + [f for p, f in sorted(files.items()) if f not in ranked]
    shown: dict[str, list[str]] = {}
    used = 0
    for item in order:
        cost = estimate_tokens(item.path) + 1
        if used + cost > budget:
            break
        shown[item.path] = []
        used += cost
    for item in order:
        if item.path not in shown:
            continue
        lines = [f"  {_symbol_line(symbol)}" for symbol in item.symbols]
        cost = estimate_tokens("\n".join(lines)) + 1 if lines else 0
        if used + cost <= budget:
            shown[item.path] = lines
            used += cost
    body = [line for path in sorted(shown) for line in [path, *shown[path]]]
    hidden = len(files) - len(shown)
    head = f"Repository map: {len(files)} files (paths; classes and functions with their line ranges)"
    tail = [f"... and {hidden} more files not listed"] if hidden else []
    return "\n".join([head, *body, *tail]) + "\n"


def _numbers_note(numbered: bool) -> str:
    return " (each line starts with its number and '| ', which are not part of the file)" if numbered else ""


def _symbol_line(symbol: Symbol) -> str:
    word = "class" if symbol.kind == "class" else "def"
    lines = f"L{symbol.line}" if symbol.end_line == symbol.line else f"L{symbol.line}-{symbol.end_line}"
    return f"{word} {symbol.name} {lines}"


def _render_file(item: _File, line_numbers: bool) -> str:
    lines = item.text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    body = "\n".join(f"{n:>4}| {line}" for n, line in enumerate(lines, 1)) if line_numbers else "\n".join(lines)
    fence = "````" if "```" in item.text else "```"
    language = _LANGUAGES.get(Path(item.path).suffix.lower(), "")
    return f"{fence}{language} {item.path}\n{body}\n{fence}\n"


def _assemble(map_text: str, sections: list[str], left_out: list[str], files: dict[str, _File], numbered: bool) -> str:
    parts = [map_text]
    if sections:
        parts.append(f"\nFiles shown in full{_numbers_note(numbered)}:\n")
        parts.extend(sections)
    if left_out:
        names = ", ".join(f"{p} (~{estimate_tokens(files[p].text)} tokens)" for p in left_out[:20])
        more = f" and {len(left_out) - 20} more" if len(left_out) > 20 else ""
        parts.append(f"\nLeft out (relevant, but did not fit the budget): {names}{more}. They are in the map above.\n")
    else:
        parts.append("\nNothing relevant was left out.\n")
    return "".join(parts)
