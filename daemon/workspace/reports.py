"""Test results as records: parsed from pytest's JUnit XML or a traceback, summarised for the next prompt.

:class:`TestReport` is the one record of a test run, end to end: the workspace's runners make it, the
engine reads it, a checkpoint and a job's result keep it as JSON (``msgspec.to_builtins``) and read it
back (``msgspec.convert``; :data:`daemon.payloads.JobResult` holds it), and a ``tool_run`` event sums it
up (:meth:`daemon.payloads.ToolRunData.of_report`). Its JSON keeps ``ran`` and ``summary``, so the
rows of older daemons (``{"ok", "ran", "passed", "failed", "summary", "failures", "cannot_run"}``)
read as reports.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import ClassVar

import msgspec

_LOCATION = re.compile(
    r'^\s*(?:File "(?P<tb_file>[^"]+)", line (?P<tb_line>\d+)'  # a Python traceback frame
    r'|(?P<file>[^\s:"][^:\n"]*\.py):(?P<line>\d+):)',        # pytest's "path.py:12: AssertionError"
    re.MULTILINE,
)
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")


class TestFailure(msgspec.Struct):
    __test__: ClassVar[bool] = False  # not a pytest test class

    test_id: str = ""
    file: str | None = None
    line: int | None = None
    message: str = ""
    output: str = ""


class TestReport(msgspec.Struct, kw_only=True):
    __test__: ClassVar[bool] = False

    ok: bool = False
    command: list[str] = []
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    failures: list[TestFailure] = []
    output_tail: str = ""
    seconds: float = 0.0
    timed_out: bool = False
    cannot_run: str = ""  # why these tests cannot run here at all (a missing runner or package): no fix helps
    # Computed when the report is made, and kept in its JSON: what a reader without the run sees.
    did_run: bool | None = msgspec.field(default=None, name="ran")
    summary_text: str = msgspec.field(default="", name="summary")

    def __post_init__(self) -> None:
        if self.did_run is None:  # a stored row without "ran" (an older daemon's) said what it ran: it ran
            self.did_run = bool(self.command) or bool(self.summary_text)
        if not self.summary_text:
            self.summary_text = self.describe()

    @property
    def failed_run(self) -> str | None:
        """What a failed run said, else None (a run with nothing to run is not a failure)."""
        if self.ok or not self.ran:
            return None
        return self.summary_text or f"{self.failed} test(s) failed"

    @property
    def hanging(self) -> list[TestFailure]:
        """The tests stopped by their own timeout (pytest-timeout, or the unittest runner's alarm)."""
        return [f for f in self.failures if "Timeout" in f.message[:80]]

    @property
    def ran(self) -> bool:
        """False when there was nothing to run (no tests, no entry point)."""
        return bool(self.command) if self.did_run is None else self.did_run

    def summary(self, max_failures: int = 8, max_chars: int = 6000) -> str:
        """Compact text for the programmer's next prompt: each failure with file:line, message, trimmed
        traceback. With the default limits, the text computed when the report was made (a report read
        back from a checkpoint or a stored result says what it said then)."""
        if self.summary_text and (max_failures, max_chars) == (8, 6000):
            return self.summary_text
        return self.describe(max_failures, max_chars)

    def describe(self, max_failures: int = 8, max_chars: int = 6000) -> str:
        """The summary computed from the run's fields."""
        what = _describe(self.command)
        counts = ", ".join(f"{n} {label}" for n, label in ((self.failed, "failed"), (self.errors, "errors"),
                                                           (self.passed, "passed"), (self.skipped, "skipped")) if n)
        if not self.ran:
            return self.output_tail
        verdict = "PASSED" if self.ok else "FAILED"
        lines = [f"Tests {verdict}: {counts or 'nothing collected'} ({what}, {self.seconds:.1f} s)"]
        if self.cannot_run:
            lines.append(f"The tests cannot run here: {self.cannot_run}.")
        if self.timed_out:
            lines.append(f"Timed out after {self.seconds:.0f} s: an endless loop, or a wait for input or network?")
        for failure in self.hanging:
            where = f"{failure.file}:{failure.line}" if failure.file else failure.test_id
            lines.append(f"HANGING {failure.test_id}: stopped by its own timeout at {where}")
        for failure in self.failures[:max_failures]:
            where = f" at {failure.file}:{failure.line}" if failure.file else ""
            lines += ["", f"FAILED {failure.test_id}{where}"]
            lines += ["  " + line for line in failure.message.strip()[:500].split("\n")]
            lines += ["  " + line for line in trim_traceback(failure.output).split("\n") if line.strip()]
        if len(self.failures) > max_failures:
            lines.append(f"\n... and {len(self.failures) - max_failures} more failures")
        if not self.ok and not self.failures and self.output_tail:
            lines += ["", "Output (end):", trim_traceback(self.output_tail, 30)]
        text = "\n".join(lines)
        return text if len(text) <= max_chars else text[: max_chars - 30] + "\n[... summary cut ...]"


def _describe(command: list[str]) -> str:
    if any(part == "pytest" or part.endswith("/pytest") for part in command[:3]):
        return "pytest"
    if command and Path(command[0]).name.startswith("python"):
        command = ["python", *command[1:]]
    text = " ".join(command)
    return text if len(text) <= 80 else text[:77] + "..."


def trim_traceback(text: str, keep: int = 25) -> str:
    """The end of a traceback, where the error is; long tracebacks lose their middle."""
    lines = text.rstrip().split("\n")
    if len(lines) <= keep:
        return "\n".join(lines)
    return "\n".join([*lines[:3], f"[... {len(lines) - keep} lines ...]", *lines[-(keep - 3):]])


def parse_junit(xml_text: str, root: Path) -> tuple[int, int, int, int, list[TestFailure]]:
    """(passed, failed, errors, skipped, failures) from pytest's JUnit XML (xunit1 adds file and line)."""
    passed = failed = errors = skipped = 0
    failures: list[TestFailure] = []
    for case in ET.fromstring(xml_text).iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            if problem.tag == "failure":
                failed += 1
            else:
                errors += 1
            failures.append(_failure_from_case(case, problem, root))
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, errors, skipped, failures


def _failure_from_case(case: ET.Element, problem: ET.Element, root: Path) -> TestFailure:
    name, classname, file = case.get("name", ""), case.get("classname", ""), case.get("file")
    if file and classname:
        module = file[:-3].replace("/", ".") if file.endswith(".py") else ""
        owner = classname[len(module) + 1:] if module and classname.startswith(module + ".") else ""
        test_id = "::".join(part for part in (file, owner, name) if part)
    else:
        test_id = ".".join(part for part in (classname, name) if part)
    text = problem.text or ""
    message = problem.get("message") or (text.strip().split("\n")[-1] if text.strip() else problem.tag)
    located = last_location(text, root)
    if located == (None, None) and file:
        line = case.get("line")
        located = (file, int(line) + 1 if line and line.isdigit() else None)  # pytest writes 0-based lines
    return TestFailure(test_id=test_id, file=located[0], line=located[1], message=message, output=text)


def last_location(text: str, root: Path) -> tuple[str | None, int | None]:
    """The deepest ``file:line`` of a traceback that lies in the project (paths made relative to ``root``)."""
    real_root = Path(root).resolve()
    found: tuple[str | None, int | None] = (None, None)
    for match in _LOCATION.finditer(text):
        raw, line = (match["tb_file"], match["tb_line"]) if match["tb_file"] else (match["file"], match["line"])
        path = Path(raw)
        if path.is_absolute():
            if not path.resolve().is_relative_to(real_root):
                continue
            raw = path.resolve().relative_to(real_root).as_posix()
        if raw.startswith(("<", "..")) or "site-packages" in raw:
            continue
        found = (raw, int(line))
    return found


def traceback_failure(test_id: str, output: str, root: Path) -> TestFailure:
    """A failure read from a program's output: the last exception line, and where it was raised."""
    lines = [line for line in output.rstrip().split("\n") if line.strip()]
    start = max((i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")), default=-1)
    message = lines[-1].strip() if lines else "the command failed without output"
    file, line = last_location("\n".join(lines[start:]) if start >= 0 else output, root)
    return TestFailure(test_id=test_id, file=file, line=line, message=message,
                       output="\n".join(lines[start:] if start >= 0 else lines[-25:]))


def parse_pytest_counts(output: str) -> tuple[int, int, int, int]:
    """(passed, failed, errors, skipped) from pytest's last summary line, when there is no JUnit report."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    for line in reversed(output.strip().split("\n")):
        found = _COUNT.findall(line)
        if found:
            for number, label in found:
                key = "errors" if label.startswith("error") else label
                if key in counts:
                    counts[key] += int(number)
            break
    return counts["passed"], counts["failed"], counts["errors"], counts["skipped"]
