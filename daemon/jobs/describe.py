"""What a job is, in words every surface shows: its title and whether its own tests failed.
Computed once in the daemon (a job's ``JobInfo``, its ``queued`` event, its proposed change)."""

from __future__ import annotations

from daemon.job_options import stored_options_or_none
from daemon.json_types import JsonObject
from daemon.payloads import PayloadError, job_result


def job_title(kind: str, request: JsonObject) -> str:
    """A job as a person names it, computed once here for every surface: "review on save: app.py",
    "tests: test_app.py", "change: make add() take three numbers"."""
    options = stored_options_or_none(request)
    on_save = " on save" if options is not None and options.trigger == "save" else ""
    files = [f for f in request.get("files") or [] if isinstance(f, str)]
    named = ", ".join(files[:3]) + (f" (+{len(files) - 3} more)" if len(files) > 3 else "")
    if kind == "review":
        return f"review{on_save}: {named or 'the diff'}"
    if kind == "test":
        return f"tests{on_save}: {named or 'all'}"
    prompt = " ".join(str(request.get("prompt") or "").split())
    return f"{kind}: {prompt[:70] + '…' if len(prompt) > 70 else prompt}" if prompt else kind


def tests_failed(result: JsonObject | None) -> str | None:  # a stored result, checked by job_result
    """What the job's own test run said when it failed (its result's ``test_report``), else None.
    A run that found nothing to run (``ran`` false) is not a failure."""
    try:
        report = job_result(result).test_report
    except PayloadError:  # not a result of this daemon's: nothing to say about its tests
        return None
    return report.failed_run if report else None
