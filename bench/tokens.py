"""Prompt and completion tokens per phase of the build, change and review chains on a generic fake.

The fake (``generic_reply``) knows nothing of Troupe's phases beyond what any request says: asked
to write or fix code, it answers with the same complete 130-line program (``app.py`` and its
pytest tests, which pass); asked for a code review it accepts the code in plain words ("I accept
this code ..."), without Troupe's ``<INFO> Finished`` marker, as many models do; asked for bugs in
the findings format it answers ``NONE``; decisions end with an ``<INFO>`` line; requirements.txt
is an empty block, README.md a short file. Real engine, gateway, litellm, HTTP and pytest in the
sandbox. Tokens are as the fake counts them (ceil(chars / 4) of every message); "cached" is what
the fake's prompt cache (``FakeLLM(prompt_cache=True)``: leading messages identical to an earlier
request's) would serve. ``--revising-fixes``: a fix returns the program with one function
changed, so the comment counts as addressed and the tests decide.

The build chain runs on five small CLI tasks; the change chain asks for a change to the program
in a repository (the fake sends the program back as it is, so that job ends "no change": the
figures are what its phases cost getting there); the review chain reviews its ``app.py``. ``fix``
is the change chain on a one-function bug that a docstring example shows (HumanEvalFix's shape, as
``troupe eval fix`` runs it): the fake's program fixes it. ``fix-unchanged`` is the same job where
the fake's program is the repository's, bug and all: every reply sends the file back as it was (as
the bundled model did in most code phases of the greedy fix runs), so that job ends "no change".

    LITELLM_LOCAL_MODEL_COST_MAP=True .venv/bin/python bench/tokens.py \
        [--chains build,change,review,fix,fix-unchanged] [--revising-fixes]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from daemon.agents.context import RunContext
from daemon.agents.job import JobSpec
from daemon.agents.runner import ChainRunner
from daemon.config import ModelSettings, Secret, Settings
from daemon.events import Event
from daemon.llm.gateway import Gateway, import_litellm
from daemon.payloads import LogData, PhaseFinishedData
from tests.fakes.llm_script import message_text
from tests.fakes.llm_server import FakeLLM

TASKS = ["a CLI that counts the words in a file", "a CLI that prints the longest line of a file",
         "a CLI that counts how often each word occurs in a file", "a CLI that reverses the lines of a file",
         "a CLI that prints the number of characters, words and lines of a file"]
CHANGE_TASK = "add a --top N option that prints only the N most frequent words"

APP = '''"""Text statistics for a file: words, lines, characters and the most frequent words."""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

WORD = re.compile(r"[A-Za-z0-9']+")


def read_text(path: str) -> str:
    """The file's text; a missing file is reported, not raised."""
    file = Path(path)
    if not file.is_file():
        raise SystemExit(f"error: {path} is not a file")
    return file.read_text(encoding="utf-8", errors="replace")


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased."""
    return [w.lower() for w in WORD.findall(text)]


def count_words(text: str) -> int:
    """How many words ``text`` holds."""
    return len(words(text))


def count_lines(text: str) -> int:
    """How many lines ``text`` holds (a last line without a newline counts)."""
    if not text:
        return 0
    return text.count("\\n") + (0 if text.endswith("\\n") else 1)


def count_chars(text: str) -> int:
    """How many characters ``text`` holds.

    >>> count_chars("abc")
    3
    """
    return len(text)


def frequencies(text: str) -> list[tuple[str, int]]:
    """Each word with how often it occurs, the most frequent first, ties by word."""
    counts = collections.Counter(words(text))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def longest_line(text: str) -> str:
    """The longest line (the first of equal ones); empty for an empty text."""
    lines = text.splitlines()
    return max(lines, key=len) if lines else ""


def reversed_lines(text: str) -> list[str]:
    """The lines in reverse order."""
    return list(reversed(text.splitlines()))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", help="the text file to read")
    parser.add_argument("--lines", action="store_true", help="print the number of lines")
    parser.add_argument("--chars", action="store_true", help="print the number of characters")
    parser.add_argument("--freq", action="store_true", help="print each word with its count")
    parser.add_argument("--longest", action="store_true", help="print the longest line")
    parser.add_argument("--reverse", action="store_true", help="print the lines in reverse order")
    return parser.parse_args(argv)


def report(args: argparse.Namespace, text: str) -> list[str]:
    """The lines to print for the options given."""
    if args.freq:
        return [f"{word} {count}" for word, count in frequencies(text)]
    if args.longest:
        return [longest_line(text)]
    if args.reverse:
        return reversed_lines(text)
    out = [str(count_words(text))]
    if args.lines:
        out.append(str(count_lines(text)))
    if args.chars:
        out.append(str(count_chars(text)))
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    text = read_text(args.file)
    for line in report(args, text):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''
TESTS = '''import app


def test_counts():
    text = "one two  three\\nfour\\n"
    assert app.count_words(text) == 4
    assert app.count_lines(text) == 2
    assert app.count_chars("abc") == 3


def test_frequencies_and_lines():
    assert app.frequencies("b a b") == [("b", 2), ("a", 1)]
    assert app.longest_line("ab\\nabc\\nx") == "abc"
    assert app.reversed_lines("1\\n2") == ["2", "1"]


def test_main_prints_the_word_count(tmp_path, capsys):
    (tmp_path / "t.txt").write_text("a b c")
    assert app.main([str(tmp_path / "t.txt")]) == 0
    assert capsys.readouterr().out.strip() == "3"
'''
PROGRAM = f"```python app.py\n{APP}```\n\n```python tests/test_app.py\n{TESTS}```"
BUGGY_APP = APP.replace("    return len(text)\n", "    return len(text) - 1\n")  # count_chars("abc") is 2
FIX_TASK = "The function count_chars in app.py does not do what its docstring says; fix it."
REVISED = PROGRAM.replace('holds."""\n    return len(words', 'holds (0 for "")."""\n    return len(words')
README = "```markdown README.md\n# Text statistics\n\nCounts words, lines and characters of a file.\n\n" \
         "    python app.py notes.txt --lines\n```"


def generic_reply(body: dict[str, Any], revising: bool = False, program: str = PROGRAM) -> str:
    """What the generic fake answers, from the request's text alone (see the module docstring)."""
    texts = [message_text(m) for m in body["messages"] if m.get("role") == "user"]
    asked, first = texts[-1], texts[0]
    if "Write requirements.txt" in first:
        return "```text requirements.txt\n```"
    if "Write README.md" in first:
        return README
    if "Find the bugs" in first:
        return "NONE"
    if ("How to edit files" in first or "code block" in first or "Reply with the whole corrected" in first
            or "send the file again" in asked):
        fix = "comment" in first or "tests fail" in first
        return REVISED if revising and fix and program == PROGRAM else program
    if "most important problem" in first:
        return "I accept this code: it does what the user asked, and I see nothing important to fix."
    if "<INFO>" in first:
        return "<INFO> Python, one module app.py with its pytest tests in tests/test_app.py."
    return "OK"


async def run_chain(llm: FakeLLM, spec: JobSpec) -> tuple[list[dict], Any]:
    events: list[Event] = []

    async def emit(event: Event) -> None:
        events.append(event)

    settings = ModelSettings(default="openai/fake-model", api_base=llm.api_base, api_key=Secret("sk-fake"),
                             max_retries=0)
    outcome = await ChainRunner(RunContext(Gateway(settings), emit, Settings(model=settings))).run(spec)
    rows = [msgspec.structs.asdict(e.data) if isinstance(e.data, PhaseFinishedData) else {"phase": f"({e.data.text})"}
            for e in events if isinstance(e.data, PhaseFinishedData)
            or (isinstance(e.data, LogData) and e.data.skipped is not None)]
    return rows, outcome


def repository(folder: Path, app: str = APP) -> Path:
    (folder / "tests").mkdir(parents=True)
    (folder / "app.py").write_text(app)
    (folder / "tests" / "test_app.py").write_text(TESTS)
    return folder


async def measure(chains: list[str], revising: bool) -> dict[str, list[tuple[list[dict], Any]]]:
    results: dict[str, list[tuple[list[dict], Any]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        repo = repository(Path(folder) / "repo")
        fix = JobSpec(chain="change", task=FIX_TASK, workspace=repository(Path(folder) / "fix", BUGGY_APP),
                      files=["app.py"])
        specs = {"build": [JobSpec(chain="build", task=t) for t in TASKS],
                 "change": [JobSpec(chain="change", task=CHANGE_TASK, workspace=repo)],
                 "review": [JobSpec(chain="review", task="review app.py", workspace=repo, files=["app.py"])],
                 "fix": [fix], "fix-unchanged": [fix]}
        for chain in chains:  # "fix-unchanged": the fake's program is the repository's, bug and all
            program = PROGRAM.replace(APP, BUGGY_APP) if chain == "fix-unchanged" else PROGRAM
            async with FakeLLM(default_reply=lambda body, p=program: generic_reply(body, revising, p),
                               prompt_cache=True) as llm:
                results[chain] = [await run_chain(llm, spec) for spec in specs[chain]]
    return results


def print_chain(chain: str, runs: list[tuple[list[dict], Any]]) -> None:
    phases, _ = runs[0]
    title = f"{chain} chain" if chain in ("build", "change", "review") else f"{chain} (the change chain)"
    print(f"\n## {title} ({len(runs)} task(s); phases of the first)\n")
    print("| phase | calls | prompt tokens | cached | completion tokens |\n|---|---|---|---|---|")
    for p in phases:
        label = f"{p['phase']}#{p['cycle']}" if p.get("cycle") else p["phase"]
        if p.get("skipped"):
            label += f" (skipped: {p['skipped']})"
        print(f"| {label} | {p.get('calls', 0)} | {p.get('prompt_tokens', 0)} | {p.get('cached_prompt_tokens', 0)} "
              f"| {p.get('completion_tokens', 0)} |")
    prompt = [o.usage.prompt_tokens for _, o in runs]
    completion = [o.usage.completion_tokens for _, o in runs]
    calls = [o.usage.calls for _, o in runs]
    cached = [o.usage.cached_prompt_tokens for _, o in runs]
    for _, outcome in runs:  # the change chain's job ends "no change" on this fake: its reply is the code as it is
        if outcome.status != "succeeded":
            print(f"\nthe job {outcome.status}: {outcome.error}")
    print(f"\nper task: prompt tokens {min(prompt)}-{max(prompt)} (median {statistics.median(prompt):.0f}; "
          f"cached {min(cached)}-{max(cached)}), completion tokens {min(completion)}-{max(completion)}, "
          f"calls {min(calls)}-{max(calls)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", default="build,change,review,fix,fix-unchanged",
                        help="comma-separated (default: all five)")
    parser.add_argument("--revising-fixes", action="store_true", help="a fix changes the program (one docstring)")
    args = parser.parse_args()
    import_litellm()
    results = asyncio.run(measure(args.chains.split(","), args.revising_fixes))
    for chain, runs in results.items():
        print_chain(chain, runs)


if __name__ == "__main__":
    main()
