"""The schema, as an append-only list of numbered steps.

``PRAGMA user_version`` holds the number of the last step a database has run. Opening a database
runs the pending steps in order (``storage.db.migrate``), each in its own ``BEGIN IMMEDIATE``
transaction that also sets ``user_version``, so a crash mid-step leaves the previous version
intact and the next open simply retries it.

How to change the schema (e.g. add the experience pools)::

    def _v3_experience_pools(db: Database) -> None:
        run_script(db, '''
            CREATE TABLE experiences (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                role TEXT NOT NULL, task TEXT NOT NULL, lesson TEXT NOT NULL,
                score REAL NOT NULL DEFAULT 0, created REAL NOT NULL
            );
            CREATE INDEX experiences_role ON experiences(role, score DESC);
        ''')
        add_fts(db, "experiences", ["task", "lesson"])  # then search with storage.search.search_rows

    MIGRATIONS = [..., Migration(3, "experience pools", _v3_experience_pools, postgres=V3_EXPERIENCE_POOLS)]

``postgres`` is the step for a PostgreSQL store (``storage.postgres``): its SQL script, or a function
of the connection; the same string as the SQLite step's where the SQL is the same (see
``storage.migrations_postgres`` for the translation, and ``migrations_postgres.fts_indexes`` in place of
``add_fts``). ``PRAGMA user_version`` is SQLite's record of the version; PostgreSQL keeps it in the
table ``troupe_schema_version``.

Rules, because databases in the wild have already run the old steps:

- Append only. Never edit, renumber or remove a step that has been committed.
- One step = one transaction: no ``PRAGMA foreign_keys`` or ``VACUUM`` inside a step (SQLite
  ignores or refuses them in a transaction). To rebuild a table (SQLite's ALTER is limited),
  follow https://www.sqlite.org/lang_altertable.html#otheralter with
  ``PRAGMA defer_foreign_keys = ON`` at the start of the step.
- No CHECK constraints for enum columns: enums are validated in Python (``storage.records``), so a
  new job kind or state needs no migration.
- ``tests/storage/test_migrations.py`` runs every step from every earlier version automatically.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from storage import migrations_postgres as pg

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"


@dataclass(frozen=True)
class Migration:
    version: int  # 1, 2, 3, ... with no gaps
    name: str  # what the step adds, for error messages and `troupe doctor`
    apply: Callable[[Database], None]  # runs inside the step's transaction
    postgres: str | Callable[[Any], None] | None = None  # the step on PostgreSQL: a script, or f(connection)


def run_script(db: Database, script: str) -> None:
    """Run several ``;``-separated statements inside the current transaction.

    (``sqlite3.Connection.executescript`` would COMMIT first, splitting a step in two.)
    """
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError(f"migration script ends with an incomplete statement: {statement.strip()!r}")


def add_fts(db: Database, table: str, columns: Sequence[str], *, rowid: str = "id") -> None:
    """Full-text index ``{table}_fts`` over ``columns`` of ``table``, kept in step by triggers.

    An external-content FTS5 table (the text is stored once, in ``table``) with BM25 ranking and
    porter stemming; rows already in ``table`` are indexed at once. The update trigger fires only
    when an indexed column changes, so state updates cost nothing. ``rowid`` must be the
    table's INTEGER PRIMARY KEY. Search it with ``storage.search.search_rows``.
    """
    fts = f"{table}_fts"
    cols = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    run_script(db, f"""
        CREATE VIRTUAL TABLE {fts} USING fts5(
            {cols}, content='{table}', content_rowid='{rowid}', tokenize='{FTS_TOKENIZER}'
        );
        CREATE TRIGGER {table}_ai AFTER INSERT ON {table} BEGIN
            INSERT INTO {fts}(rowid, {cols}) VALUES (new.{rowid}, {new});
        END;
        CREATE TRIGGER {table}_ad AFTER DELETE ON {table} BEGIN
            INSERT INTO {fts}({fts}, rowid, {cols}) VALUES ('delete', old.{rowid}, {old});
        END;
        CREATE TRIGGER {table}_au AFTER UPDATE OF {cols} ON {table} BEGIN
            INSERT INTO {fts}({fts}, rowid, {cols}) VALUES ('delete', old.{rowid}, {old});
            INSERT INTO {fts}(rowid, {cols}) VALUES (new.{rowid}, {new});
        END;
        INSERT INTO {fts}({fts}) VALUES ('rebuild');
    """)


def _v1_tables(db: Database) -> None:
    # Enum columns (kind, state, severity) are validated in Python; see the module docstring.
    run_script(db, """
        CREATE TABLE workspaces (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            root TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            created REAL NOT NULL,
            settings TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            workspace_id INTEGER REFERENCES workspaces(id) ON DELETE SET NULL,
            kind TEXT NOT NULL,
            state TEXT NOT NULL,
            priority INTEGER NOT NULL DEFAULT 0,
            request TEXT NOT NULL DEFAULT '{}',
            result TEXT,
            error TEXT,
            created REAL NOT NULL,
            updated REAL NOT NULL,
            started REAL,
            finished REAL,
            last_phase TEXT,
            checkpoint TEXT,
            last_seq INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX jobs_queue ON jobs(state, priority DESC, created);
        CREATE INDEX jobs_workspace ON jobs(workspace_id, created);
        CREATE INDEX jobs_created ON jobs(created);
        CREATE TABLE job_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            at REAL NOT NULL,
            kind TEXT NOT NULL,
            phase TEXT,
            role TEXT,
            data TEXT NOT NULL DEFAULT '{}',
            text TEXT NOT NULL DEFAULT '',  -- the strings inside data, for full-text search
            UNIQUE (job_id, seq)
        );
        CREATE TABLE changes (
            id TEXT PRIMARY KEY,
            job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
            workspace_id INTEGER REFERENCES workspaces(id) ON DELETE CASCADE,
            diff TEXT NOT NULL,
            edits TEXT NOT NULL DEFAULT 'null',
            base_hashes TEXT NOT NULL DEFAULT '{}',
            state TEXT NOT NULL,
            created REAL NOT NULL,
            updated REAL NOT NULL
        );
        CREATE INDEX changes_job ON changes(job_id);
        CREATE INDEX changes_workspace ON changes(workspace_id, state);
        CREATE TABLE findings (
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: editors hold ids in diagnostics
            workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
            job_id TEXT REFERENCES jobs(id) ON DELETE SET NULL,
            file TEXT NOT NULL,
            start_line INTEGER NOT NULL,
            start_col INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            end_col INTEGER,
            severity TEXT NOT NULL,
            message TEXT NOT NULL,
            rule TEXT,
            suggested_fix TEXT,
            fingerprint TEXT NOT NULL,
            state TEXT NOT NULL,
            created REAL NOT NULL,
            updated REAL NOT NULL
        );
        CREATE INDEX findings_file ON findings(workspace_id, file, state);
        CREATE INDEX findings_fingerprint ON findings(workspace_id, file, fingerprint);
        CREATE UNIQUE INDEX findings_one_open ON findings(workspace_id, file, fingerprint)
            WHERE state = 'open';
        CREATE INDEX findings_job ON findings(job_id);
        CREATE TABLE usage (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            job_id TEXT REFERENCES jobs(id) ON DELETE SET NULL,  -- spend outlives its job
            at REAL NOT NULL,
            model TEXT NOT NULL,
            role TEXT,
            prompt_tokens INTEGER NOT NULL,
            completion_tokens INTEGER NOT NULL,
            cost REAL NOT NULL
        );
        CREATE INDEX usage_job ON usage(job_id);
    """)


def _v2_full_text_search(db: Database) -> None:
    add_fts(db, "job_events", ["text"])
    add_fts(db, "findings", ["message", "rule", "file"])


def _v3_experience(db: Database) -> None:
    # One table for every pool (instructor, assistant, agent, workflow, learning): one search, one
    # curation surface and one export format; ``pool`` says which, ``data`` holds pool-specific fields.
    run_script(db, """
        CREATE TABLE experiences (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            pool TEXT NOT NULL,
            workspace_id INTEGER REFERENCES workspaces(id) ON DELETE CASCADE,  -- NULL: any repository
            job_id TEXT,  -- the job it was learnt from; kept as text, jobs may be deleted
            chain TEXT, phase TEXT, role TEXT,
            key TEXT NOT NULL,    -- what retrieval matches: a state, an instruction, an input, a task
            value TEXT NOT NULL,  -- what reaches the prompt: an instruction, code, a reply, a learning
            task TEXT NOT NULL DEFAULT '',
            score REAL NOT NULL DEFAULT 0,  -- value gain (shortcuts) or reward (agent pools)
            data TEXT NOT NULL DEFAULT '{}',
            batch INTEGER NOT NULL DEFAULT 0,  -- the refinement batch it was mined in
            pinned INTEGER NOT NULL DEFAULT 0,
            uses INTEGER NOT NULL DEFAULT 0,
            last_used REAL,
            created REAL NOT NULL,
            fingerprint TEXT NOT NULL UNIQUE
        );
        CREATE INDEX experiences_pool ON experiences(pool, chain, phase);
        CREATE INDEX experiences_workspace ON experiences(workspace_id, pool);
        CREATE INDEX experiences_job ON experiences(job_id);
        CREATE TABLE experience_retrievals (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            experience_id INTEGER NOT NULL REFERENCES experiences(id) ON DELETE CASCADE,
            job_id TEXT,
            phase TEXT,
            at REAL NOT NULL
        );
        CREATE INDEX experience_retrievals_experience ON experience_retrievals(experience_id);
        CREATE TABLE experience_eliminations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at REAL NOT NULL,
            batch INTEGER NOT NULL,
            kept INTEGER NOT NULL,
            removed TEXT NOT NULL  -- JSON list of {id, pool, key, uses, score}
        );
        CREATE TABLE experience_counters (
            name TEXT PRIMARY KEY,
            value INTEGER NOT NULL
        );
    """)
    add_fts(db, "experiences", ["key", "value", "task"])


def _v4_orchestrator_policies(db: Database) -> None:
    # The learned orchestrator's parameters (daemon.teams.puppeteer), versioned: every update is a row.
    run_script(db, """
        CREATE TABLE orchestrator_policies (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,          -- which policy: the chain it orchestrates
            version INTEGER NOT NULL,    -- 1, 2, 3, ... per name
            params TEXT NOT NULL,        -- JSON: weights per action and feature, baseline
            episodes INTEGER NOT NULL DEFAULT 0,
            mean_reward REAL,
            created REAL NOT NULL,
            UNIQUE (name, version)
        );
    """)


def _v5_reviewed_content(db: Database) -> None:
    # Reviews tagged with the text they read: a finding's content hash, and per file the newest
    # reviewed content, so an older review finishing late never replaces a newer one's findings.
    run_script(db, """
        ALTER TABLE findings ADD COLUMN content_hash TEXT;
        CREATE TABLE reviewed_content (
            workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
            file TEXT NOT NULL,
            content_hash TEXT NOT NULL,  -- sha256 of the file text the review read
            read_at REAL NOT NULL,       -- when it read it: later reads are newer content
            job_id TEXT,
            PRIMARY KEY (workspace_id, file)
        );
    """)


# Prompt tokens the provider served from its prompt cache (billed at a fraction): part of prompt_tokens.
_V6_CACHED_PROMPT_TOKENS = "ALTER TABLE usage ADD COLUMN cached_prompt_tokens INTEGER NOT NULL DEFAULT 0;"


def _v6_cached_prompt_tokens(db: Database) -> None:
    run_script(db, _V6_CACHED_PROMPT_TOKENS)


# The people of a team server (storage.verbs.people): a token is kept only as its SHA-256.
_V7_PEOPLE = """
    CREATE TABLE people (
        name TEXT PRIMARY KEY,
        token_sha256 TEXT NOT NULL UNIQUE,
        slack_user TEXT UNIQUE,             -- the Slack user the bot acts for as this person
        bot INTEGER NOT NULL DEFAULT 0,     -- 1: its token may act for Slack users
        created REAL NOT NULL
    );
"""


def _v7_people(db: Database) -> None:
    run_script(db, _V7_PEOPLE)


# A team server's audit log (storage.verbs.audit): who did what, never a token or a request's text.
_V8_AUDIT = """
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at REAL NOT NULL,
        actor TEXT NOT NULL,                -- the person
        action TEXT NOT NULL,               -- submit, apply, discard, cancel, add-person, remove-person, limited
        target TEXT NOT NULL DEFAULT '',    -- a job, change or person
        detail TEXT NOT NULL DEFAULT '',
        via TEXT                            -- the bot acting for the person
    );
    CREATE INDEX audit_actor ON audit (actor, action);
    CREATE INDEX audit_target ON audit (target);
"""


def _v8_audit(db: Database) -> None:
    run_script(db, _V8_AUDIT)


# Why each retrieval matched (storage.verbs.retrievals): what the experience was used as, the query's
# words it shares (JSON list) and its relevance (NULL where nothing ranked it); older rows: unknown.
_V9_RETRIEVAL_REASONS = """
    ALTER TABLE experience_retrievals ADD COLUMN why TEXT NOT NULL DEFAULT '';
    ALTER TABLE experience_retrievals ADD COLUMN matched TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE experience_retrievals ADD COLUMN relevance REAL;
    CREATE INDEX experience_retrievals_job ON experience_retrievals(job_id);
"""


def _v9_retrieval_reasons(db: Database) -> None:
    run_script(db, _V9_RETRIEVAL_REASONS)


MIGRATIONS: list[Migration] = [
    Migration(1, "workspaces, jobs, job events, changes, findings, usage", _v1_tables, pg.V1_TABLES),
    Migration(2, "full-text search over job events and findings", _v2_full_text_search, pg.V2_FULL_TEXT_SEARCH),
    Migration(3, "experience pools, retrieval log, eliminations", _v3_experience, pg.V3_EXPERIENCE),
    Migration(4, "orchestrator policies, one row per version", _v4_orchestrator_policies,
              pg.V4_ORCHESTRATOR_POLICIES),
    Migration(5, "findings tagged with the content they were computed on", _v5_reviewed_content,
              pg.V5_REVIEWED_CONTENT),
    Migration(6, "cached prompt tokens per model call", _v6_cached_prompt_tokens, _V6_CACHED_PROMPT_TOKENS),
    Migration(7, "people of a team server: tokens as SHA-256, Slack users, bots", _v7_people, pg.V7_PEOPLE),
    Migration(8, "a team server's audit log", _v8_audit, pg.V8_AUDIT),
    Migration(9, "why each experience retrieval matched: its use, the words, the relevance", _v9_retrieval_reasons,
              pg.V9_RETRIEVAL_REASONS),
]

LATEST_VERSION = MIGRATIONS[-1].version
