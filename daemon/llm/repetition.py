"""Spotting a reply that repeats itself: small local models fall into loops (the same line or
block again and again until the token cap). The gateway stops such a stream early and keeps the
text before the loop plus one copy of the repeated part.

    >>> cut = loop_cut("intro\\n" + "BUG: x is never reset\\n" * 40)
    >>> ("intro\\n" + "BUG: x is never reset\\n" * 40)[:cut]
    'intro\\nBUG: x is never reset\\n'
"""

from __future__ import annotations

WINDOW = 6000      # only the tail of a reply is searched (a loop shows there)
MIN_SPAN = 320     # characters of repetition before a loop is called one
PROBE = 24         # the tail piece whose earlier occurrences suggest a period
_CANDIDATES = 8    # periods tried per check


def _periodic_run(text: str, period: int, low: int) -> int:
    """How many characters at the end of ``text`` equal the ones ``period`` before them."""
    n = len(text)
    most = n - period - low
    lo, hi = 0, most  # the property is monotonic in the length: binary search on it
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if text[n - mid:] == text[n - mid - period:n - period]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def loop_cut(text: str) -> int | None:
    """Where to cut ``text`` when it ends in a degenerate loop (``text[:cut]`` keeps what came before
    and one copy of the repeated part), or None. A part must repeat at least 4 times (3 when it is
    80 characters or longer) over at least ``MIN_SPAN`` characters; blank repetition does not count."""
    n = len(text)
    if n < MIN_SPAN:
        return None
    low = max(0, n - WINDOW)
    probe = text[n - PROBE:]
    if not probe.strip():
        return None
    end = n - 1
    for _ in range(_CANDIDATES):
        pos = text.rfind(probe, low, end)
        if pos == -1:
            return None
        period = n - PROBE - pos
        span = _periodic_run(text, period, low) + period
        unit = text[n - period:]
        if span >= MIN_SPAN and span / period >= (3 if period >= 80 else 4) and len(unit.strip()) >= 2:
            cut = n - span + period
            newline = text.find("\n", cut - 1)
            if "\n" in unit and 0 <= newline - cut < period:  # end the kept copy at its line's end
                cut = newline + 1
            return cut
        end = pos + PROBE - 1
    return None


def trim_loop(text: str) -> tuple[str, bool]:
    """``text`` without its loop, and whether one was cut."""
    cut = loop_cut(text)
    return (text, False) if cut is None else (text[:cut], True)
