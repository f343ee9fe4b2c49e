"""Usage: every model call's tokens and cost, summed per job."""

from __future__ import annotations

import math

import pytest

from storage import Job, NotFoundError, Store


def test_job_usage_sums_the_jobs_model_calls(store: Store, job: Job) -> None:
    store.record_usage(job.id, "openai/gpt-4o-mini", 1000, 200, 0.0003, role="reviewer")
    store.record_usage(job.id, "ollama/llama3", 500, 100, role="programmer")  # local models cost 0
    store.record_usage(store.record_job("ask", {}).id, "openai/gpt-4o-mini", 9, 9, 1.0)
    totals = store.job_usage(job.id)
    assert (totals.calls, totals.prompt_tokens, totals.completion_tokens) == (2, 1500, 300)
    assert totals.total_tokens == 1800 and totals.cost == pytest.approx(0.0003)


def test_a_job_without_model_calls_has_zero_usage(store: Store, job: Job) -> None:
    totals = store.job_usage(job.id)
    assert (totals.calls, totals.total_tokens, totals.cost) == (0, 0, 0.0)


def test_usage_outside_any_job_is_recorded(store: Store) -> None:
    record = store.record_usage(None, "openai/gpt-4o-mini", 5, 1)
    assert record.job_id is None and record.cost == 0.0


@pytest.mark.parametrize(("args", "error"), [
    (("m", -1, 0, 0.0), "prompt_tokens must be at least 0"),
    (("m", 1, 1.5, 0.0), "completion_tokens must be an integer"),
    (("m", 1, 1, math.nan), "cost must be a finite number"),
    (("m", 1, 1, -0.5), "cost must not be negative"),
    (("", 1, 1, 0.0), "usage model must not be empty"),
])
def test_bad_usage_figures_are_refused(store: Store, job: Job, args: tuple, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        store.record_usage(job.id, *args)


def test_usage_for_an_unknown_job_is_refused(store: Store) -> None:
    with pytest.raises(NotFoundError):
        store.record_usage("ghost", "m", 1, 1)
