"""What experience costs and what it saves, measured.

(a) Retrieval latency: p50/p99 of one retrieval as a phase does it (BM25 candidates from the store,
    re-ranked by TF-IDF cosine) at 1k, 10k and 100k experiences.
(b) A learning curve: 20 similar tasks ("a CLI that counts the words in ...", worded differently)
    run through the real engine and gateway against the fake OpenAI-compatible server, once with
    experience off and once on (each task mined after it ends, as the daemon does). Per task:
    prompt tokens, model calls, wall time, whether the tests passed (and at the first run).

The fake model (``FakeModel`` below) is deterministic and fixed per prompt. It behaves like a
model that improves code one step per call, reading the code from the prompt:
- coding: a first draft with two defects (``main()`` left as ``pass``; ``count_words`` splits on
  ``" "``, so double spaces miscount) and without the empty-input case;
- completion: fills ``main()``; review: asks for the empty-input case once, then says Finished;
  review fix: adds it; test fix: splits on whitespace;
- requirements.txt: none needed; README: a fixed text; shortcut instructions: one sentence.
The ONE rule that favours experience, stated plainly: when the coding prompt carries a quoted
experience block holding a complete solution (a ``count_words`` with ``main()`` implemented), the
fake reuses that solution instead of writing a draft — as a model shown a worked example of a
similar task would. Everything experience adds is paid for in the figures: the longer prompts,
and the mining calls that write shortcut instructions (counted in the "on" columns).

    LITELLM_LOCAL_MODEL_COST_MAP=True .venv/bin/python bench/experience.py [--tasks 20] [--sizes 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from daemon.agents.context import RunContext
from daemon.agents.job import JobSpec
from daemon.agents.runner import ChainRunner
from daemon.config import ModelSettings, Secret
from daemon.events import Event
from daemon.experience import retrieve
from daemon.experience.session import JobExperience
from daemon.experience.settings import ExperienceSettings
from daemon.llm.gateway import Gateway, import_litellm
from daemon.payloads import PhaseFinishedData, ToolRunData
from storage import AsyncStore, Store
from tests.fakes.llm_script import estimate_tokens
from tests.fakes.llm_server import FakeLLM

TEST_COMMAND = "python -m doctest wordcount.py"
PLACES = ["a file", "a text file", "a document", "the given file", "a log file", "a markdown file", "files",
          "a file given on the command line", "a plain-text file", "an input file"]
DRAFT = '''import sys


def count_words(text):
    """The number of words.

    >>> count_words("a b  c")
    3
    >>> count_words("")
    0
    """
    return len(text.split(" "))


def main(argv=None):
    pass


if __name__ == "__main__":
    sys.exit(main())
'''
MAIN = '''def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    with open(args[0]) as handle:
        print(count_words(handle.read()))
    return 0'''


def fenced(code: str) -> str:
    return f"```python wordcount.py\n{code.rstrip()}\n```"


def code_in(prompt: str) -> str:
    """The current wordcount.py as the prompt shows it (outside any experience block)."""
    own = prompt.split("<<<experience")[0]
    match = re.search(r"```python wordcount\.py\n(.*?)\n```", own, re.DOTALL)
    return match.group(1) + "\n" if match else DRAFT


def solution_in(prompt: str) -> str | None:
    """A complete solution inside the prompt's quoted experience, if there is one."""
    if "<<<experience" not in prompt:
        return None
    quoted = prompt.split("<<<experience", 1)[1]
    for block in re.findall(r"```(?:python )?wordcount\.py\n(.*?)\n```", quoted, re.DOTALL):
        if "def count_words" in block and "def main" in block and "    pass\n" not in block + "\n":
            return block + "\n"
    return None


def fake_model(body: dict[str, Any]) -> str:
    """The fake's reply to one request (see the module docstring)."""
    messages = body["messages"]
    system, user = messages[0]["content"], messages[-1]["content"]
    if "You write one instruction" in system:
        return "Write count_words that splits on whitespace and returns 0 for empty input, and a main()."
    if "Reply with every file of the program in full" in user:
        return fenced(solution_in(user) or DRAFT)
    code = code_in(user)
    if "These places are still unfinished" in user:
        return fenced(code.replace("def main(argv=None):\n    pass", MAIN))
    if "Give the ONE most important problem" in user:
        if "if not text.strip()" in code:
            return "<INFO> Finished"
        return "wordcount.py: count_words('') must be 0: return 0 for empty input."
    if "Fix the code as the comment asks" in user:
        return fenced(code.replace('    """\n    return', '    """\n    if not text.strip():\n        return 0\n'
                                                            '    return', 1))
    if "The program fails when it runs:" in user:
        return fenced(code.replace('text.split(" ")', "text.split()"))
    if "Write requirements.txt" in user:
        return "No third-party package is needed."
    if "Write README.md" in user:
        return "# wordcount\n\nCounts the words of a file: `python wordcount.py FILE`.\n"
    return "<INFO> OK"


# ---------------------------------------------------------------- (b) the learning curve

async def run_task(gateway: Gateway, store: AsyncStore | None, settings: ExperienceSettings, task: str,
                   number: int, llm: FakeLLM, scratch: Path) -> dict[str, Any]:
    events: list[Event] = []

    async def emit(event: Event) -> None:
        events.append(event)

    experience = JobExperience(store, settings, job_id=f"task-{number}") if store is not None else None
    runner = ChainRunner(RunContext.of(gateway, emit, scratch_dir=scratch, experience=experience))
    before = len(llm.requests)
    started = time.monotonic()
    outcome = await runner.run(JobSpec(chain="build", task=task, job_id=f"task-{number}", test_command=TEST_COMMAND))
    job_seconds = time.monotonic() - started
    job_requests = llm.requests[before:]
    mined = len(llm.requests)
    if experience is not None:
        await experience.mine(gateway)
    mining = llm.requests[mined:]
    runs = [e.data.ok for e in events if isinstance(e.data, ToolRunData) and e.data.tool == "tests"]
    phases: dict[str, list[int]] = {}
    for e in events:
        if isinstance(e.data, PhaseFinishedData):
            tally = phases.setdefault(e.data.phase, [0, 0])
            tally[0] += e.data.prompt_tokens
            tally[1] += e.data.calls or 0
    return {"ok": outcome.ok, "tests_ok": bool(runs and runs[-1]), "first_ok": bool(runs and runs[0]),
            "prompt_tokens": sum(r.prompt_tokens for r in job_requests),
            "completion_tokens": sum(estimate_tokens(r.reply or "") for r in job_requests),
            "calls": len(job_requests), "mining_calls": len(mining),
            "mining_tokens": sum(r.prompt_tokens + estimate_tokens(r.reply or "") for r in mining),
            "seconds": job_seconds, "phases": phases, "skipped": [e.data.phase for e in events
                                                                  if isinstance(e.data, PhaseFinishedData)
                                                                  and e.data.skipped]}


async def learning_curve(tasks: int, on: bool) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="troupe-bench-exp-") as folder:
        store = await AsyncStore.open(Path(folder) / "troupe.db") if on else None
        async with FakeLLM() as llm:
            llm.default_reply = fake_model
            settings = ModelSettings(default="openai/fake-model", api_base=llm.api_base, api_key=Secret("sk-fake"),
                                     max_retries=0)
            gateway = Gateway(settings)
            rows = []
            for number in range(tasks):
                task = f"a CLI that counts the words in {PLACES[number % len(PLACES)]}"
                rows.append(await run_task(gateway, store, ExperienceSettings(), task, number, llm,
                                           Path(folder) / "scratch"))
        if store is not None:
            await store.close()
    return rows


def report_curve(off: list[dict[str, Any]], on: list[dict[str, Any]]) -> None:
    print("(b) learning curve: build chain, 20 similar tasks, fake server (tokens as the fake counts them)\n")
    print(f"{'task':>4} | {'prompt tok':>10} {'calls':>5} {'wall s':>6} {'tests':>5} | {'prompt tok':>10} "
          f"{'calls':>5} {'+mine tok':>9} {'wall s':>6} {'tests':>5}  skipped (on)")
    for i, (a, b) in enumerate(zip(off, on, strict=True)):
        mark = lambda r: ("ok" if r["tests_ok"] else "FAIL") + ("" if r["first_ok"] else "*")  # noqa: E731
        print(f"{i + 1:>4} | {a['prompt_tokens']:>10} {a['calls']:>5} {a['seconds']:>6.2f} {mark(a):>5} | "
              f"{b['prompt_tokens']:>10} {b['calls']:>5} {b['mining_tokens']:>9} {b['seconds']:>6.2f} "
              f"{mark(b):>5}  {', '.join(b['skipped'])}")
    total = lambda rows, key: sum(r[key] for r in rows)  # noqa: E731
    off_tokens = total(off, "prompt_tokens") + total(off, "completion_tokens")
    on_tokens = total(on, "prompt_tokens") + total(on, "completion_tokens") + total(on, "mining_tokens")
    print("\n(* = the first test run failed; the test loop fixed it)")
    print(f"\nprompt tokens: off {total(off, 'prompt_tokens')}, on {total(on, 'prompt_tokens')} "
          f"(+ mining {total(on, 'mining_tokens')} prompt+completion)")
    print(f"all tokens (prompt + completion + mining): off {off_tokens}, on {on_tokens}, "
          f"ratio on/off {on_tokens / off_tokens:.3f} ({(on_tokens / off_tokens - 1) * 100:+.2f}%; "
          "Co-Saving reports -50.85%)")
    print(f"model calls: off {total(off, 'calls')}, on {total(on, 'calls')} + {total(on, 'mining_calls')} mining "
          f"(ratio {(total(on, 'calls') + total(on, 'mining_calls')) / total(off, 'calls'):.3f})")
    print(f"wall: off {total(off, 'seconds'):.1f} s, on {total(on, 'seconds'):.1f} s (jobs only; mining is "
          "background work in the daemon)")
    print(f"tests passing: off {sum(r['tests_ok'] for r in off)}/{len(off)}, on {sum(r['tests_ok'] for r in on)}/"
          f"{len(on)}; first run passing: off {sum(r['first_ok'] for r in off)}, on {sum(r['first_ok'] for r in on)}")
    late_off, late_on = off[len(off) // 2:], on[len(on) // 2:]
    print(f"second half only: prompt tokens/task off {statistics.mean(r['prompt_tokens'] for r in late_off):.0f}, "
          f"on {statistics.mean(r['prompt_tokens'] for r in late_on):.0f}")
    print("\nwhere it comes from (prompt tokens / calls, summed over the 20 tasks):")
    names = list(dict.fromkeys([p for r in off + on for p in r["phases"]]))
    for name in names:
        a = [sum(r["phases"].get(name, [0, 0])[k] for r in off) for k in (0, 1)]
        b = [sum(r["phases"].get(name, [0, 0])[k] for r in on) for k in (0, 1)]
        print(f"  {name:<16} off {a[0]:>7} / {a[1]:>3}   on {b[0]:>7} / {b[1]:>3}   {b[0] - a[0]:>+8}")


# ---------------------------------------------------------------- (a) retrieval latency

class Wrapped:
    """A sync Store seen through the async verbs ``retrieve.ranked`` calls (no thread hop measured)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def search_experience(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.search_experience(*args, **kwargs)


def retrieval_latency(sizes: list[int], queries: int = 200) -> None:
    """Synthetic experiences of 40 words drawn from a 3,000-word vocabulary with Zipf frequencies (as
    words in code and prose are); queries of 12 words drawn the same way."""
    rng = random.Random(7)
    vocabulary = [f"w{n}x" for n in range(3000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]

    def text(count: int) -> str:
        return " ".join(rng.choices(vocabulary, weights, k=count))

    print("(a) retrieval latency: BM25 candidates (20) from the store + TF-IDF re-rank, as a phase does it\n")
    print(f"{'experiences':>11} {'insert/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
    with tempfile.TemporaryDirectory(prefix="troupe-bench-ret-") as folder:
        store = Store.open(Path(folder) / "troupe.db")
        have = 0
        for size in sizes:
            started = time.monotonic()
            with store.transaction():
                for n in range(have, size):
                    words = text(40)
                    store.add_experience("agent", f"task {n}: {words}", f"reply {n}: {words}", phase=rng.choice(
                        ["coding", "design", "review_comment"]), role="programmer", score=rng.random())
            rate = (size - have) / (time.monotonic() - started)
            have = size
            wrapped = Wrapped(store)
            times = []
            for _ in range(queries):
                query = "a CLI that " + text(12)
                t = time.perf_counter()
                asyncio.run(retrieve.ranked(wrapped, query, pools=["agent"], workspace_id=None, floor=None,
                                            phase="coding"))
                times.append((time.perf_counter() - t) * 1000)
            times.sort()
            print(f"{size:>11} {rate:>9.0f} {statistics.median(times):>8.2f} {times[int(len(times) * 0.99) - 1]:>8.2f}")
        store.close()
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()
    if not args.skip_latency:
        retrieval_latency([int(s) for s in args.sizes.split(",")])
    import_litellm()
    off = asyncio.run(learning_curve(args.tasks, on=False))
    on = asyncio.run(learning_curve(args.tasks, on=True))
    report_curve(off, on)


if __name__ == "__main__":
    main()
