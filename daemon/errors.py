"""What the daemon's core refuses, as errors a person can read; the core never speaks HTTP.

The job queue, the services and the watcher raise these; the API edge (``daemon.api.server``)
maps each kind to its HTTP status once, and a client sees ``{"error": {"code", "message"}}``::

    raise NotFound(f"no job with id {job_id!r}; `troupe jobs` lists them")   # -> 404 not_found
    raise Conflict(f"job {job_id} already succeeded; nothing to cancel")     # -> 409 conflict
    raise Unavailable("the daemon is stopping; ...", code="stopping")        # -> 503 stopping
"""

from __future__ import annotations


class DomainError(Exception):
    """Base of the core's refusals: ``message`` says what was wrong and what to do; ``code`` is
    the machine-readable kind a client may test."""

    code = "bad_request"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class Invalid(DomainError):
    """The request names something that cannot work (a folder that is not there, a path outside
    the workspace)."""


class NotFound(DomainError):
    code = "not_found"


class Conflict(DomainError):
    """The thing exists but is not in a state that allows this (a finished job, an applied change)."""

    code = "conflict"


class TooLarge(DomainError):
    code = "too_large"


class Unavailable(DomainError):
    """The daemon cannot do it now (it is stopping); the same request may work later."""

    code = "unavailable"
