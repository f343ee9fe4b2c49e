"""Slack shows a job's cached prompt tokens beside its tokens, as `troupe jobs` and the viewer do."""

from __future__ import annotations

from daemon.api.protocol import JobInfo, Usage
from daemon.payloads import JobProgress
from slack_bot.render import details_text, final_status_text


def test_a_finished_jobs_status_and_details_name_its_cached_prompt_tokens() -> None:
    job = JobInfo(id="j1", kind="ask", state="succeeded", priority=20,
                  usage=Usage(prompt_tokens=3200, completion_tokens=180, cost=0.003, cached_prompt_tokens=1400))
    status = final_status_text(job, JobProgress(state="succeeded"))
    assert "3,380 tokens (1,400 cached) · $0.0030" in status
    assert "3,380 tokens (1,400 cached)" in details_text(job, [])


def test_a_job_without_cached_tokens_says_nothing_of_a_cache() -> None:
    job = JobInfo(id="j2", kind="ask", state="succeeded", priority=20,
                  usage=Usage(prompt_tokens=10, completion_tokens=2))
    assert "cached" not in final_status_text(job, JobProgress(state="succeeded"))
