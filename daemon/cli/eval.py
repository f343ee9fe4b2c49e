"""``troupe eval SUITE``: the team on an outside benchmark beside the bare model, through the
daemon (started if it is not running). Argparse and the suite names only at import time, so
``troupe --help`` stays fast; the harness (``daemon.eval``) is imported when the command runs."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, TextIO

from daemon.eval.suite import SUITES

if TYPE_CHECKING:
    from daemon.eval.report import EvalReport
    from daemon.eval.split import ArmResult, SplitReport
    from daemon.eval.suite import ItemResult, Suite


def add_eval_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("eval", help="measure the team on a benchmark (review, fix, ask, build, exercism, "
                       "mutants) beside the bare model",
                       description="Run a suite's items as real jobs through the daemon, each in its own temporary "
                       "workspace, score them with the suite's own tests in the sandbox, and print the team's row "
                       "beside the bare model's (the same model, one plain call with the same information).")
    p.add_argument("suite", choices=list(SUITES), help="review, fix (HumanEvalFix), ask (shipped questions), "
                   "build (SRDD: needs --data), exercism (Aider's benchmark: pass@1 and pass@2 beside "
                   "Aider's published row), mutants (one-line bugs in --repo PATH that its own tests catch)")
    p.add_argument("--model", help="any litellm model string (default: the configured one, or the bundled model)")
    p.add_argument("-n", "--limit", type=int, metavar="N", help="only the first N items (the order is fixed)")
    rows = p.add_mutually_exclusive_group()
    rows.add_argument("--team", dest="rows", action="store_const", const=("team",), help="only the team's row")
    rows.add_argument("--bare", dest="rows", action="store_const", const=("bare",), help="only the bare model's row")
    rows.add_argument("--both", dest="rows", action="store_const", const=("team", "bare"),
                      help="both rows (the default)")
    rows.add_argument("--experience-split", action="store_true",
                      help="does experience pay? the team learns on half the items (even positions; mutants: "
                      "the first half of the repository's, in order), then runs the other, held-out half with "
                      "experience off and on: a row per half and setting")
    p.add_argument("--data", metavar="PATH", help="the suite's data where it is not shipped (build: the SRDD CSV)")
    p.add_argument("--repo", metavar="PATH", help="mutants: the repository to plant one-line bugs in (only read: "
                   "every mutant is tested and reviewed on a copy); its own tests must pass")
    p.add_argument("--files", metavar="GLOB", help="mutants: the files to mutate, a glob relative to the repository "
                   "(default: its Python files outside the tests)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="mutants: the seed of the draw (-n N: the first N mutants its tests kill, in this order)")
    p.add_argument("--on-save", action="store_true", help="mutants: each mutant is a save over the unmutated "
                   "commit, reviewed with its diff as the watcher sends it (default: the mutant committed, the "
                   "whole file reviewed)")
    p.add_argument("--tests", metavar="COMMAND", help="mutants: the command that runs the repository's tests, for "
                   "judging mutants and fixes and for the team's test jobs, e.g. 'pytest -q tests/storage' "
                   "(default: the runner Troupe chooses, pytest or unittest, over every test)")
    p.add_argument("--out", metavar="FILE", help="write the full results (every item, model, commit) as JSON, "
                   "rewritten after every result (a run cut short keeps what finished)")
    p.add_argument("--resume", metavar="FILE", help="go on with a run cut short: keep the results in its --out FILE "
                   "and run only the rest (the same suite, items, rows and commit); FILE is rewritten as they come")
    p.add_argument("--job-timeout", type=float, default=900.0, metavar="S",
                   help="seconds to wait for one job before cancelling it and recording the item as failed")
    p.add_argument("--keep", action="store_true", help="keep the workspaces and their jobs in the daemon "
                   "(`troupe jobs --open ID` shows one); by default they are removed at the end")
    p.add_argument("--json", action="store_true", help="print the results JSON instead of the table")


class ProgressBar:
    """One line on stderr, redrawn on a terminal; one line per item otherwise."""

    def __init__(self, suite: str, stream: TextIO = sys.stderr) -> None:
        self.suite, self.stream, self.live = suite, stream, stream.isatty()
        self.started = time.monotonic()

    def __call__(self, result: ItemResult, done: int, total: int, label: str | None = None) -> None:
        label = label or result.row
        mark = ("solved" if result.solved else "unsolved") + ("" if result.status == "ok" else f", {result.status}")
        elapsed = time.monotonic() - self.started
        if self.live:
            width = 24
            bar = "#" * (width * done // max(1, total))
            self.stream.write(f"\r[{bar:<{width}}] {done}/{total} {result.item} {label}: {mark} "
                              f"({elapsed:.0f}s)\033[K")
            if done == total:
                self.stream.write("\n")
        else:
            first = (result.error or "").strip().splitlines()[:1]
            why = f" — {first[0][:200]}" if first else ""
            self.stream.write(f"{self.suite} {done}/{total} {result.item} {label}: {mark} "
                              f"({result.seconds:.1f}s){why}\n")
        self.stream.flush()


def run_eval(args: argparse.Namespace) -> int:
    from daemon.client import DaemonError
    from daemon.eval.report import EvalReport, source_commit
    from daemon.eval.suite import SuiteError, load_suite

    data, options = args.data, {}
    if args.suite == "mutants":  # the drawing needs N and the seed before the items exist
        data, options = args.repo or args.data, {"files": args.files, "n": args.limit, "seed": args.seed,
                                                 "on_save": args.on_save, "tests": args.tests,
                                                 "progress": lambda line: print(line, file=sys.stderr)}
    try:
        suite = load_suite(args.suite, Path(data) if data else None, **options)
        items = suite.items()[:args.limit] if args.limit else suite.items()
    except SuiteError as exc:
        print(f"troupe: {exc}", file=sys.stderr)
        return 2
    rows = tuple(args.rows or ("team", "bare"))
    if args.resume and args.experience_split:
        print("troupe: --resume goes on with a plain run; an --experience-split run starts anew", file=sys.stderr)
        return 2
    report: EvalReport | SplitReport
    if args.experience_split:
        from daemon.eval.split import SplitReport, halves, split_order

        order = split_order(suite)
        learn, held = halves(items, order)
        report = SplitReport(suite=suite.name, model=args.model or "", commit=source_commit(),
                             learn=[i.id for i in learn], held_out=[i.id for i in held],
                             score_names=tuple(suite.score_names), order=order)
    else:
        report = EvalReport(suite=suite.name, model=args.model or "", commit=source_commit(),
                            items=[i.id for i in items], rows=list(rows), score_names=tuple(suite.score_names))
        if args.resume:
            try:
                resumed(report, suite, Path(args.resume))
            except ValueError as exc:
                print(f"troupe: cannot resume from {args.resume}: {exc}", file=sys.stderr)
                return 2
            args.out = args.out or args.resume
    started, status = time.monotonic(), 0
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` keeps the finished results as Ctrl-C does
    try:
        asyncio.run(_run(suite, args, report))
    except DaemonError as exc:
        print(f"troupe: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # what was done so far is still worth a table and a file
        print(f"\ninterrupted after {len(report.results)} results", file=sys.stderr)
        report.interrupted, status = True, 130
    report.seconds += time.monotonic() - started
    report.model = report.model or _configured_model()
    data = report.to_json()
    reference = getattr(suite, "reference", None)  # a suite's comparison with published figures (exercism)
    extra = ""
    if callable(reference) and isinstance(report, EvalReport):  # not an --experience-split run
        extra, data["reference"] = reference(report.model, report.results, list(report.rows))
    if args.out:
        Path(args.out).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(data, indent=1) if args.json else report.table() + (f"\n\n{extra}" if extra else ""))
    return status


def resumed(report: EvalReport, suite: Suite, path: Path) -> None:
    """``report`` with the results of the run saved in ``path`` (its ``--out``), when that run is this
    one cut short: the same suite, items, rows and commit. Raises ValueError saying what differs."""
    from daemon.eval.suite import ItemResult

    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        results = [ItemResult(**r) for r in saved["results"]]
        before = {name: saved[name] for name in ("suite", "commit", "items", "rows", "seconds")}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"not the results of a troupe eval run ({exc})") from None
    for name, now in (("suite", report.suite), ("commit", report.commit), ("items", report.items),
                      ("rows", report.rows)):
        if before[name] != now:
            what = {"items": "other items (another -n, --seed or data)", "rows": f"rows {before['rows']}",
                    "commit": f"commit {before['commit']} (this is {now}): a row is one commit's"}
            raise ValueError(f"it holds {what.get(name, before[name])}")
    report.results, report.seconds = results, float(before["seconds"] or 0)
    on_resume = getattr(suite, "resumed", None)  # a suite's own state from finished items (mutants: clean files)
    if callable(on_resume):
        on_resume(results)


def checkpoint(report: EvalReport, path: Path, *, seconds: float) -> None:
    """``report`` so far in ``path`` (written whole, then renamed: never half a file), marked interrupted."""
    data = report.to_json()
    data.update(interrupted=True, seconds=round(report.seconds + seconds, 1))
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    part.replace(path)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


async def _run(suite: Suite, args: argparse.Namespace, report: EvalReport | SplitReport) -> None:
    """Fill ``report.results`` as items finish (so an interrupted run keeps them)."""
    from daemon.client import DaemonClient
    from daemon.eval.runner import DaemonContext, run_suite
    from daemon.eval.split import SplitReport, run_split

    progress = ProgressBar(suite.name)

    def on_arm(arm: ArmResult, done: int, total: int) -> None:  # run_split keeps the results in the report itself
        progress(arm.result, done, total, label=f"{arm.half} ({arm.experience})")

    async with DaemonClient() as client:
        await client.health()  # starts the daemon when it is not running (and says so when it cannot)
        ctx = DaemonContext(client, model=args.model, job_timeout=args.job_timeout, keep=args.keep)
        if args.keep:
            print(f"workspaces kept in {ctx.scratch}", file=sys.stderr)
        try:
            if isinstance(report, SplitReport):  # --experience-split
                await run_split(suite, ctx, report, limit=args.limit, on_result=on_arm)
                if report.learnt == 0:
                    print("troupe: the learning half left no experience (none of its jobs succeeded, or experience "
                          "is off in the daemon: TROUPE_EXPERIENCE=off, [experience] enabled = false)", file=sys.stderr)
            else:
                plain = report

                def on_result(result: ItemResult, done: int, total: int) -> None:
                    plain.results.append(result)
                    progress(result, done, total)
                    if args.out:  # a run cut short (a killed shell, a machine gone) keeps what finished
                        checkpoint(plain, Path(args.out), seconds=time.monotonic() - started)

                started = time.monotonic()
                await run_suite(suite, ctx, rows=tuple(plain.rows), limit=args.limit, on_result=on_result,
                                skip={(r.item, r.row) for r in plain.results})
        finally:
            report.model = _model_used(args.model, sorted(ctx.models_seen))
            await ctx.close()


def _model_used(asked: str | None, answered: list[str]) -> str:
    """What the bare row's replies say answered (the truth), else what was asked for."""
    if asked and answered and answered != [asked]:
        print(f"troupe: asked for {asked}, but {', '.join(answered)} answered (TROUPE_MODEL in the daemon's "
              "environment wins over --model)", file=sys.stderr)
    return ", ".join(answered) or asked or ""


def _configured_model() -> str:
    """The model the daemon would use with nothing passed (as this shell's configuration says)."""
    from daemon.config import ConfigError, load_settings

    try:
        return load_settings(None).model.default or "the bundled local model"
    except ConfigError:
        return "the configured model"
