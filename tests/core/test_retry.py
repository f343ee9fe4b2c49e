"""One backoff and one Retry-After reader for every retry (daemon.retry)."""

import time
from email.utils import formatdate

from daemon.retry import RECONNECT, Backoff, retry_after


def test_a_backoff_doubles_from_its_first_wait_up_to_its_cap() -> None:
    assert [RECONNECT.delay(n) for n in range(7)] == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    assert Backoff(first=0.25, cap=5.0).delay(10_000) == 5.0  # no overflow after a long outage


def test_a_spread_backoff_waits_at_most_the_plain_delay_and_at_least_its_share() -> None:
    spread = Backoff(first=1.0, cap=8.0, spread=0.5)
    waits = [spread.delay(2) for _ in range(200)]
    assert all(2.0 <= w <= 4.0 for w in waits) and len(set(waits)) > 1


def test_retry_after_reads_seconds_an_http_date_or_nothing() -> None:
    assert retry_after("120") == 120.0 and retry_after(["3"]) == 3.0 and retry_after(2) == 2.0
    assert 55 <= (retry_after(formatdate(time.time() + 60, usegmt=True)) or 0) <= 60
    assert retry_after(formatdate(time.time() - 60, usegmt=True)) == 0.0  # a date in the past: at once
    assert retry_after(None) is None and retry_after("soon") is None and retry_after([]) is None
