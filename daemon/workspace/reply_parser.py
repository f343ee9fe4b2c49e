"""Parsing file edits out of model replies, robustly; errors are explained to the model.

Two formats are accepted (see :data:`EDIT_FORMAT_HELP`, which goes into prompts): whole
files in fenced blocks, and aider-style SEARCH/REPLACE blocks. Weak and local models bend
both, so the parser takes the file name from the fence line (```` ```python a.py ````,
```` ```a.py ````, ```` ```python title="a.py" ````), from the line before the fence (plain,
**bold**, `backticked`, ``### heading``, ``File: a.py``), or from a ``# File: a.py`` first
line; ``~~~`` fences, an unclosed last fence, list-indented fences and copied line numbers
are tolerated. Errors are written for the model: what was wrong and the format to use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from daemon.workspace.paths import PathOutsideWorkspace, normalize_rel

EDIT_FORMAT_HELP = """\
How to edit files. Every path is relative to the repository root. Use one of two formats.

1. WHOLE FILE, for new files or files you rewrite completely. Put the file's path on the
opening fence line, after the language, and write the COMPLETE file, never "..." or "rest of
the code unchanged":
```<language> <the file's path>
<the complete content of the file>
```

2. SEARCH/REPLACE, to change part of an existing file. Put the file's path on the line before
the block. SEARCH copies the current lines exactly (indentation included) and must match one
place in the file; REPLACE holds the new lines. Use several blocks for several places.
<the file's path>
```<language>
<<<<<<< SEARCH
<the lines as they are now>
=======
<the lines as they must be>
>>>>>>> REPLACE
```
An empty SEARCH section creates a new file. To delete a file, write DELETE: and its path on a line.
(Use the real paths of the files shown above; the words in <angle brackets> are to be replaced.)
"""

NEW_PROGRAM_FORMAT = """\
Reply with every file of the program in full, each in a fenced code block with its path on the opening fence line:
```python main.py
<the complete file>
```"""
"""How to write a new program into an empty workspace: what the bare build call asks, and what a
small model follows (the general format's ``src/app.py``-style examples get copied instead of the
``main.py`` the request named). A single block without a path is then ``main.py``
(:data:`NEW_PROGRAM_PATH`)."""
NEW_PROGRAM_PATH = "main.py"

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*?)\s*$")
_SR_START = re.compile(r"^\s*<{5,9}\s*SEARCH\b", re.IGNORECASE)
_SR_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_SR_END = re.compile(r"^\s*>{5,9}\s*REPLACE\b", re.IGNORECASE)
_DELETE = re.compile(r"^\s*(?:[-*]\s+)?\**(?:DELETE|Delete file|Remove file)\**\s*:?\s*(?P<path>\S+)\s*$")
_PATH_CHARS = re.compile(r"[\w.\-/\\~:@+]+")
_EXTENSION = re.compile(r"[^./\\]\.[A-Za-z][A-Za-z0-9_+-]{0,9}$|^\.[A-Za-z][\w.-]*$")
_KNOWN_NAMES = {"Makefile", "Dockerfile", "LICENSE", "README", "Procfile", "Gemfile", "Rakefile", "Justfile"}
_LABEL = re.compile(r"^(?:(?:new |updated |modified )?(?:file(?:name|path)?|path))\s*[:=\-]?\s*", re.IGNORECASE)
_COMMENT_NAME = re.compile(
    r"^\s*(?:#|//|--|;|/\*|<!--|%)\s*(?P<label>(?:file(?:name|path)?|path)\s*:\s*)?(?P<path>[^\s*]+?)\s*(?:\*/|-->)?\s*$",
    re.IGNORECASE,
)
_LINE_NUMBER = re.compile(r"^\s*(\d+)\| ?")
_PROSE_FILES = (".md", ".markdown", ".mdx", ".rst", ".txt")
_LANGUAGE_SUFFIXES = {
    "python": ("py", "pyi", "pyw"), "python3": ("py",), "javascript": ("js", "mjs", "cjs", "jsx"),
    "js": ("mjs", "cjs", "jsx"), "typescript": ("ts", "tsx", "mts"), "ts": ("tsx", "mts"), "markdown": ("md", "mdx"),
    "yaml": ("yml",), "rust": ("rs",), "ruby": ("rb",), "golang": ("go",), "c++": ("cpp", "cc", "hpp", "h"),
    "cpp": ("cc", "hpp", "h"), "c": ("h",), "csharp": ("cs",), "kotlin": ("kt", "kts"), "shell": ("sh",),
    "bash": ("sh",), "zsh": ("sh",), "text": ("txt", "cfg", "ini", "in"), "plaintext": ("txt",), "ini": ("cfg",),
    "html": ("htm",), "dockerfile": ("",), "makefile": ("",), "make": ("",),
}
# A block in one of these languages is a command or its output, not a file, unless the path is a script.
_COMMAND_LANGUAGES = {"bash", "sh", "shell", "console", "zsh", "powershell", "cmd", "bat", "terminal", "output",
                      "shell-session", "sh-session", "log"}


@dataclass
class ParsedEdit:
    path: str
    kind: Literal["whole", "search_replace", "delete"]
    content: str = ""
    search: str = ""
    replace: str = ""


class EditParseError(ValueError):
    """The reply held no usable edit; the message tells the model what was wrong and what to send."""


class EditApplyError(ValueError):
    """An edit does not fit the files; the message (for the model) shows what the file really holds."""

    def __init__(self, message: str, failures: list[str] | None = None) -> None:
        super().__init__(message)
        self.failures = failures or [message]


def parse_edits(reply: str, default_path: str | None = None) -> list[ParsedEdit]:
    """Every file edit in ``reply``, in order. Raises EditParseError when none parses or a path is unsafe.

    ``default_path``: the file a single unnamed code block is for (when the prompt was about one file).
    """
    return _Parser(_without_reasoning(reply).replace("\r\n", "\n").split("\n"), default_path).parse()


def _without_reasoning(reply: str) -> str:
    """Drop a reasoning model's ``<think>`` section: its draft code blocks are not the answer."""
    reply = re.sub(r"<think(?:ing)?>.*?</think(?:ing)?>", "", reply, flags=re.DOTALL | re.IGNORECASE)
    closing = re.search(r"</think(?:ing)?>", reply, flags=re.IGNORECASE)  # opening tag eaten by the chat template
    return reply[closing.end():] if closing else reply


def looks_like_path(token: str) -> bool:
    """True for a single token that reads as a file path (``a.py``, ``src/x``, ``Makefile``, ``/etc/passwd``)."""
    if not token or "://" in token or not _PATH_CHARS.fullmatch(token):
        return False
    base = re.split(r"[\\/]", token)[-1]
    return bool(base) and (base in _KNOWN_NAMES or bool(_EXTENSION.search(base)) or "/" in token.strip("/"))


def _clean_token(token: str) -> str:
    return token.strip().strip("`'\"*_").rstrip(":.,;").strip("`'\"*_")


def path_from_label(line: str) -> str | None:
    """The path named by a line before a fence: ``a.py``, ``**a.py**``, ``### `a.py` ``, ``File: a.py``, ..."""
    return _label(line)[0]


def _label(line: str) -> tuple[str | None, bool]:
    """(path, certain): certain when the line is only a (decorated) path, not a sentence that mentions one."""
    text = line.strip()
    if not text or _FENCE.match(text) or len(text) > 200:
        return None, False
    text = re.sub(r"^(?:>\s*)?(?:#{1,6}\s+|\d+[.)]\s+|[-*+]\s+)?", "", text)
    text = _LABEL.sub("", text.strip("*_ ")).strip()
    whole = _clean_token(text)
    if looks_like_path(whole):
        return whole, True
    ticked = {_clean_token(t) for t in re.findall(r"`([^`\s]+)`", line)}
    ticked = {t for t in ticked if looks_like_path(t)}
    if len(ticked) == 1:
        return ticked.pop(), False
    if line.rstrip().endswith(":"):
        words = [_clean_token(w) for w in line.split()]
        named = [w for w in words if looks_like_path(w) and ("." in w or "/" in w)]
        if len(named) == 1:
            return named[0], False
    return None, False


def language_fits(language: str, path: str) -> bool:
    """Whether a fence's language could be the content of ``path`` (``python`` and ``a.py``: yes; ``bash``: no)."""
    suffix = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    language = language.lower()
    return language == suffix or suffix in _LANGUAGE_SUFFIXES.get(language, ())


def path_from_info(info: str) -> str | None:
    """The path in a fence's info string: ``python a.py``, ``a.py``, ``python:a.py``, ``python title="a.py"``."""
    for token in info.split():
        if "=" in token:
            key, _, value = token.partition("=")
            if key.lower() in ("title", "filename", "file", "path"):
                return _clean_token(value)
            continue
        if ":" in token and re.match(r"^[A-Za-z+#-]+:", token):
            token = token.split(":", 1)[1]
        token = _clean_token(token)
        if looks_like_path(token):
            return token
    return None


class _Parser:
    def __init__(self, lines: list[str], default_path: str | None) -> None:
        self.lines = lines
        self.default_path = default_path
        self.edits: list[ParsedEdit] = []
        self.unnamed: list[str] = []
        self.problems: list[str] = []
        self.last_sr_path: str | None = None
        self.sr_fence: tuple[str, int] | None = None  # the fence wrapping SEARCH/REPLACE blocks, if open

    def parse(self) -> list[ParsedEdit]:
        i = 0
        while i < len(self.lines):
            i = self._step(i)
        if self.problems:
            raise EditParseError("Your edits were not applied. " + " ".join(self.problems) + "\n\n" + EDIT_FORMAT_HELP)
        if not self.edits and len(self.unnamed) == 1 and self.default_path:
            self.edits.append(ParsedEdit(self._safe(self.default_path) or "", "whole", content=self.unnamed[0]))
        if not self.edits:
            if self.unnamed:
                raise EditParseError(
                    f"Your reply has {len(self.unnamed)} code block(s) but none says which file it is for, so "
                    "nothing was changed. Put the file path on the opening fence line, for example "
                    "```python src/app.py\n\n" + EDIT_FORMAT_HELP
                )
            raise EditParseError(
                "Your reply contained no file edits: no fenced code block with a file path and no SEARCH/REPLACE "
                "block, so nothing was changed.\n\n" + EDIT_FORMAT_HELP
            )
        return self.edits

    def _step(self, i: int) -> int:
        line = self.lines[i]
        if _SR_START.match(line):
            return self._search_replace(i)
        fence = _FENCE.match(line)
        if fence:
            if self.sr_fence and not fence["info"] and fence["fence"][0] == self.sr_fence[0]:
                self.sr_fence = None  # closes the fence around SEARCH/REPLACE blocks
                return i + 1
            if self._wraps_search_replace(i):
                self.sr_fence = (fence["fence"][0], len(fence["fence"]))
                return i + 1
            return self._whole_file(i, fence)
        deleted = _DELETE.match(line)
        if deleted and looks_like_path(_clean_token(deleted["path"])):
            path = self._safe(_clean_token(deleted["path"]))
            if path:
                self.edits.append(ParsedEdit(path, "delete"))
        return i + 1

    def _next_content(self, i: int) -> int:
        while i < len(self.lines) and not self.lines[i].strip():
            i += 1
        return i

    def _wraps_search_replace(self, i: int) -> bool:
        j = self._next_content(i + 1)
        if j < len(self.lines) and _SR_START.match(self.lines[j]):
            return True
        k = self._next_content(j + 1)
        if k >= len(self.lines) or not _SR_START.match(self.lines[k]):
            return False
        return path_from_label(self.lines[j]) is not None

    def _safe(self, path: str) -> str | None:
        try:
            return normalize_rel(path)
        except PathOutsideWorkspace as exc:
            self.problems.append(f"Refused path {path!r}: {exc.reason}. Use paths relative to the repository root.")
            return None

    def _label_before(self, i: int) -> tuple[str | None, bool]:
        """A path named on one of the two lines before line ``i`` (blank lines skipped), and whether it is certain."""
        k = i - 1
        while k >= 0 and i - k <= 3 and not self.lines[k].strip():
            k -= 1
        return _label(self.lines[k]) if k >= 0 and i - k <= 3 else (None, False)

    def _whole_file(self, i: int, fence: re.Match[str]) -> int:
        char, size, indent = fence["fence"][0], len(fence["fence"]), len(fence["indent"].expandtabs())
        language = fence["info"].split()[0].split(":")[0] if fence["info"].split() else ""
        path = path_from_info(fence["info"])
        if path is None:
            path, certain = self._label_before(i)
            if path and not language_fits(language, path) and (not certain or language.lower() in _COMMAND_LANGUAGES):
                path = None  # "Run `python main.py`:" before a bash block names a command, not the file
        nested = 0
        end = i + 1
        while end < len(self.lines):
            inner = _FENCE.match(self.lines[end])
            if inner and inner["fence"][0] == char:
                if inner["info"] and path and path.lower().endswith(_PROSE_FILES):
                    nested += 1  # a code sample inside a markdown file
                elif not inner["info"] and len(inner["fence"]) >= size:
                    if not nested:
                        break
                    nested -= 1
            end += 1
        body = [_dedent(line, indent) for line in self.lines[i + 1:end]]
        while body and re.fullmatch(r"\s*`{0,2}\s*", body[-1]):
            body.pop()  # blank lines, or the start of a closing fence the model did not finish
        if body:
            named = _COMMENT_NAME.match(body[0])
            comment_path = _clean_token(named["path"]) if named else ""
            if looks_like_path(comment_path) and (path is None or (named and named["label"] and comment_path == path)):
                path = comment_path
                body = body[1:]
        content = "\n".join(_strip_line_numbers(body))
        content = content + "\n" if content.strip() else ""
        if path is None:
            if content:
                self.unnamed.append(content)
        else:
            safe = self._safe(path)
            if safe:
                self.edits.append(ParsedEdit(safe, "whole", content=content))
        return end + 1

    def _search_replace(self, i: int) -> int:
        path = self._sr_path(i)
        divider = self._find(_SR_DIVIDER, i + 1)
        end = self._find(_SR_END, (divider or i) + 1)
        where = f"the SEARCH/REPLACE block at line {i + 1}" + (f" for {path}" if path else "")
        if divider is None:
            self.problems.append(f"{where} has no ======= line between SEARCH and REPLACE.")
            return len(self.lines)
        if end is None or self._find(_SR_START, divider + 1, end) is not None:
            self.problems.append(f"{where} is not finished: it needs a >>>>>>> REPLACE line.")
            return len(self.lines)
        if path is None:
            self.problems.append(f"{where} does not say which file it edits: put the path on the line before it.")
            return end + 1
        safe = self._safe(path)
        if safe:
            self.last_sr_path = path
            search, replace = self.lines[i + 1:divider], self.lines[divider + 1:end]
            self.edits.append(ParsedEdit(safe, "search_replace", search=_join(search), replace=_join(replace)))
        return end + 1

    def _sr_path(self, i: int) -> str | None:
        k = self._previous_content(i - 1)
        if k is not None:
            fence = _FENCE.match(self.lines[k])
            if fence:
                named = path_from_info(fence["info"])
                if named:
                    return named
                k = self._previous_content(k - 1)
            if k is not None and not _SR_END.match(self.lines[k]):
                named = path_from_label(self.lines[k])
                if named:
                    return named
        return self.last_sr_path

    def _previous_content(self, k: int) -> int | None:
        while k >= 0 and not self.lines[k].strip():
            k -= 1
        return k if k >= 0 else None

    def _find(self, pattern: re.Pattern[str], start: int, stop: int | None = None) -> int | None:
        for k in range(start, len(self.lines) if stop is None else stop):
            if pattern.match(self.lines[k]):
                return k
        return None


def _join(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _dedent(line: str, indent: int) -> str:
    expanded = line.expandtabs() if line[:1] == "\t" else line
    strip = min(indent, len(expanded) - len(expanded.lstrip(" ")))
    return expanded[strip:]


def _strip_line_numbers(body: list[str]) -> list[str]:
    """Drop ``  12| `` prefixes a model copied from a numbered listing (only when every line has one)."""
    numbered = [_LINE_NUMBER.match(line) for line in body if line.strip()]
    if len(numbered) < 2 or not all(numbered):
        return body
    numbers = [int(m[1]) for m in numbered if m]
    if numbers != sorted(numbers):
        return body
    return [_LINE_NUMBER.sub("", line, count=1) for line in body]
