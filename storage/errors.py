"""Errors the store raises. Each message says what was wrong, with what input, and what to do.

Bad arguments (an unknown job state, a path leaving the workspace, non-JSON data) raise plain
``ValueError``; the classes here cover the database itself and missing rows.
"""

from __future__ import annotations


class StoreError(Exception):
    """The database cannot be used as asked: unreadable file, failed migration, closed store."""


class SchemaTooNewError(StoreError):
    """The file was written by a newer Troupe; this code does not know its schema."""


class WrongThreadError(StoreError):
    """A sync ``Store`` was used from a thread other than the one that opened it."""


class StaleReview(ValueError):
    """A review's findings were computed on older content than findings the file already has."""


class NotFoundError(StoreError, LookupError):
    """The workspace, job, change or finding named by an id does not exist."""
