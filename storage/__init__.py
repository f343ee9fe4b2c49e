"""Troupe's store: workspaces, jobs and their events, proposed changes, findings and usage in one
SQLite file (WAL, foreign keys, forward-only migrations, FTS5 search), or, for a team server, in a
PostgreSQL database with the same verbs (``Store.open("postgresql://...")``: ``storage.postgres``).
No SQL leaks out::

    from storage import Store, FindingDraft

    store = Store.open(database_path())              # creates and migrates the file as needed
    ws = store.add_workspace("/home/ada/shop")       # idempotent per root
    job = store.record_job("review", {"file": "app.py"}, workspace_id=ws.id)
    store.set_job_state(job.id, "running")
    store.append_event(job.id, "message", {"text": "Looks risky"}, phase="review", role="reviewer")  # -> 1
    store.events_after(job.id, 0)                    # [JobEvent(seq=1, ...)]
    store.add_findings(ws.id, job.id, "app.py", [FindingDraft("SQL built from input", "major", 12)])
    store.list_findings(ws.id, "app.py")             # open findings, by line
    store.search_findings("sql input")               # every word must match; FTS syntax is literal
    change = store.propose_change(job.id, diff_text, base_hashes={"app.py": "sha256:..."})
    store.set_change_state(change.id, "applied")
    store.record_usage(job.id, "openai/gpt-4o-mini", 1200, 300, 0.0004, role="reviewer")
    store.job_usage(job.id).total_tokens             # 1500
    store.set_job_state(job.id, "succeeded", result={"findings": 1})
    store.close()

From asyncio, ``await AsyncStore.open(path)`` gives the same verbs as coroutines, run on one
worker thread. Records are frozen dataclasses (``storage.records``); bad arguments raise
``ValueError`` with a readable message; ``storage.errors`` has the rest. Adding tables: see
``storage.migrations``; experience pools: ``storage.experience``.
"""

from storage.async_store import AsyncStore
from storage.errors import NotFoundError, SchemaTooNewError, StoreError, WrongThreadError
from storage.experience import POOLS, Experience
from storage.migrations import LATEST_VERSION
from storage.records import (
    Change,
    ChangeState,
    Finding,
    FindingDraft,
    FindingState,
    Job,
    JobEvent,
    JobKind,
    JobState,
    Severity,
    UsageRecord,
    UsageTotals,
    Workspace,
)
from storage.store import Store
from storage.verbs.audit import AuditEntry
from storage.verbs.people import Person
from storage.verbs.retrievals import Retrieval, RetrievalRecord

__all__ = [
    "LATEST_VERSION",
    "POOLS",
    "AsyncStore",
    "AuditEntry",
    "Change",
    "ChangeState",
    "Experience",
    "Finding",
    "FindingDraft",
    "FindingState",
    "Job",
    "JobEvent",
    "JobKind",
    "JobState",
    "NotFoundError",
    "Person",
    "Retrieval",
    "RetrievalRecord",
    "SchemaTooNewError",
    "Severity",
    "Store",
    "StoreError",
    "UsageRecord",
    "UsageTotals",
    "Workspace",
    "WrongThreadError",
]
