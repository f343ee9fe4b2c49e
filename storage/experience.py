"""Experience: what past jobs taught, in pools, searchable, counted when used, and curated.

Pools (the ``pool`` column of one ``experiences`` table):

- ``instructor``: a code state (key) → the instruction that moved it forward (value) — ECL;
- ``assistant``: an instruction (key) → the code it led to (value) — ECL;
- ``agent``: a role's input in one phase (key) → its output (value), with a reward — MAEL;
- ``workflow``: a task (key) → how its run went, which steps were redundant (``data``) — Co-Saving;
- ``learning``: what a person said about a finding (applied, dismissed, why), per repository.

::

    exp = store.add_experience("agent", "write a word counter", "def count(...)...", chain="build",
                               phase="coding", role="programmer", score=0.9, task="word counter CLI")
    hits = store.search_experience("count words cli", pools=["agent"], phase="coding")  # [(exp, 3.2)]
    store.count_retrievals([exp.id], job_id="job-2", phase="coding")    # uses += 1, logged (and why:
                                                                        # storage.verbs.retrievals)
    store.eliminate_experience([exp.id], batch=3)                       # removed, and logged

Search is full-text (FTS5 BM25; PostgreSQL: ``ts_rank``) over key, value and task where *any* word
may match (a prompt is a long query); the caller re-ranks. Text is stored as given: callers scrub secrets first
(``daemon.experience.text.scrub``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from storage import values
from storage.errors import NotFoundError
from storage.search import count_sql, match_value, text_match
from storage.verbs.base import NO_LIMIT, UNSET, Verbs

POOLS = ("instructor", "assistant", "agent", "workflow", "learning")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
STOP_WORDS = frozenset((
    "the", "and", "for", "that", "this", "with", "from", "you", "your", "are", "was", "were",
    "not", "but", "have", "has", "had", "into", "than", "then", "them", "they", "their", "there",
    "what", "when", "which", "while", "will", "would", "should", "could", "can", "all", "any", "each",
    "only", "also", "just", "out", "its", "use", "used", "using", "code", "file", "files", "reply",
    "line", "lines", "one", "new", "def", "return", "self", "none", "true", "false", "import",
))
_EXPORTED = ("pool", "workspace_id", "job_id", "chain", "phase", "role", "key", "value", "task", "score", "data",
             "batch", "pinned", "uses", "last_used", "created")


@dataclass(frozen=True, slots=True)
class Experience:
    id: int
    pool: str
    workspace_id: int | None  # None: learnt anywhere, used everywhere
    job_id: str | None
    chain: str | None
    phase: str | None
    role: str | None
    key: str
    value: str
    task: str
    score: float
    data: dict[str, Any] = field(default_factory=dict)
    batch: int = 0
    pinned: bool = False
    uses: int = 0
    last_used: float | None = None
    created: float = 0.0
    fingerprint: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Every field but id and fingerprint: one line of an export."""
        return {name: getattr(self, name) for name in _EXPORTED}


def _experience(row: dict[str, Any]) -> Experience:
    return values.record(Experience, row, data=values.from_json(row["data"]) or {}, pinned=bool(row["pinned"]))


def experience_fingerprint(pool: str, workspace_id: int | None, chain: str | None, phase: str | None,
                           role: str | None, key: str, value: str) -> str:
    raw = "\0".join(str(part or "") for part in (pool, workspace_id, chain, phase, role, key.strip(), value.strip()))
    return hashlib.sha256(raw.encode("utf-8", "replace")).hexdigest()[:32]


def salient_words(query: str, most: int = 32) -> list[str]:
    """The first ``most`` distinct words of ``query`` worth searching for (no stop words), lowercased."""
    words: list[str] = []
    for word in _WORD.findall(query):
        word = word.lower()
        if word not in STOP_WORDS and word not in words:
            words.append(word)
        if len(words) >= most:
            break
    return words


class ExperienceVerbs(Verbs):
    def add_experience(self, pool: str, key: str, value: str, *, workspace_id: int | None = None,
                       job_id: str | None = None, chain: str | None = None, phase: str | None = None,
                       role: str | None = None, task: str = "", score: float = 0.0,
                       data: dict[str, Any] | None = None, batch: int = 0, pinned: bool = False,
                       uses: int = 0, last_used: float | None = None, created: float | None = None) -> Experience:
        """Add one experience. The same pool, scope, step, key and value again is the same row: it is
        returned with the higher of the two scores (so mining a job twice adds nothing)."""
        if pool not in POOLS:
            raise ValueError(f"experience pool {pool!r} is not one of: {', '.join(POOLS)}")
        key, value = values.text(key, "experience key"), values.text(value, "experience value")
        score = float(score)
        fingerprint = experience_fingerprint(pool, workspace_id, chain, phase, role, key, value)
        row_values = {"pool": pool, "workspace_id": workspace_id, "job_id": job_id, "chain": chain, "phase": phase,
                      "role": role, "key": key, "value": value, "task": values.text(task, "task", required=False),
                      "score": score, "data": values.to_json(data or {}, "experience data"),
                      "batch": values.integer(batch, "batch", minimum=0), "pinned": int(bool(pinned)),
                      "uses": values.integer(uses, "uses", minimum=0), "last_used": last_used,
                      "created": values.now() if created is None else created, "fingerprint": fingerprint}
        with self._conn.write():
            if workspace_id is not None and not self._conn.scalar("SELECT 1 FROM workspaces WHERE id = ?",
                                                                  [workspace_id]):
                raise NotFoundError(f"no workspace with id {workspace_id}")
            columns, marks = ", ".join(row_values), ", ".join(":" + c for c in row_values)
            row = self._conn.one(f"INSERT INTO experiences ({columns}) VALUES ({marks}) ON CONFLICT (fingerprint) "
                                 f"DO UPDATE SET score = {self._conn.greatest}(experiences.score, excluded.score) "
                                 "RETURNING *", row_values)
        assert row is not None
        return _experience(row)

    def get_experience(self, experience_id: int) -> Experience | None:
        row = self._conn.one("SELECT * FROM experiences WHERE id = ?", [experience_id])
        return _experience(row) if row else None

    def list_experience(self, *, pool: str | None = None, workspace_id: int | None = None, job_id: str | None = None,
                        chain: str | None = None, phase: str | None = None, limit: int | None = 100,
                        order: str = "recent") -> list[Experience]:
        """Experiences, newest first (``order="uses"``: most used first); ``workspace_id``: that
        repository's and the global ones."""
        where, params = _filters(pool=pool, workspace_id=workspace_id, chain=chain, phase=phase, alias="")
        if job_id is not None:
            where.append("job_id = :job_id")
            params["job_id"] = job_id
        sort = {"recent": "created DESC, id DESC", "uses": "uses DESC, score DESC, id DESC"}.get(order)
        if sort is None:
            raise ValueError(f"order {order!r} is not one of: recent, uses")
        params["limit"] = NO_LIMIT if limit is None else values.integer(limit, "limit", minimum=0)
        rows = self._conn.all(f"SELECT * FROM experiences {'WHERE ' + ' AND '.join(where) if where else ''} "
                              f"ORDER BY {sort} LIMIT :limit", params)
        return [_experience(row) for row in rows]

    def search_experience(self, query: str, *, pools: Sequence[str] | None = None, workspace_id: int | None = None,
                          chain: str | None = None, phase: str | None = None, role: str | None = None,
                          min_batch: int | None = None, limit: int = 20,
                          only_global: bool = False) -> list[tuple[Experience, float]]:
        """Experiences sharing words with ``query``, best first, with their BM25 relevance (higher is
        better). ``min_batch`` keeps only later batches (pinned ones and learnings always stay).
        ``only_global``: none of any repository's (a job with no workspace must not read them)."""
        where, params = _filters(pools=pools, workspace_id=workspace_id, chain=chain, phase=phase, role=role,
                                 alias="t.")
        if only_global:
            where.append("t.workspace_id IS NULL")
        if min_batch is not None:
            where.append("(t.batch >= :min_batch OR t.pinned = 1 OR t.pool = 'learning')")
            params["min_batch"] = min_batch
        terms = self._by_rarity(query)
        if not terms or limit <= 0:
            return []
        match = text_match(self._conn, "experiences", any_word=True)
        sql = (f"SELECT t.*, {match.rank} AS rank FROM {match.source} WHERE {match.condition}"
               f"{''.join(' AND ' + w for w in where)} ORDER BY rank, t.id DESC LIMIT :limit")
        # The rarest words first, more only when they find too little; every word only in a small store.
        small = self._conn.scalar("SELECT count(*) FROM experiences") < 5000
        for size in (8, 16, len(terms) if small else 16):
            value = match_value(self._conn, terms[:size], any_word=True)
            rows = self._conn.all(sql, {**params, "match": value, "limit": limit})
            if len(rows) >= limit or size >= len(terms):
                break
        return [(_experience(row), -float(row["rank"])) for row in rows]

    def _by_rarity(self, query: str) -> list[str]:
        """The query's words that some experience holds, rarest first: ranking every row that shares
        one common word with a long prompt is what makes a naive search slow."""
        counted = []
        for term in salient_words(query):
            df = self._conn.scalar(count_sql(self._conn, "experiences"), {"match": match_value(self._conn, [term])})
            if df:
                counted.append((df, term))
        return [term for _, term in sorted(counted)]

    def update_experience(self, experience_id: int, *, pinned: bool = UNSET, score: float = UNSET,
                          data: dict[str, Any] = UNSET) -> Experience:
        sets: list[str] = []
        params: dict[str, Any] = {"id": experience_id}
        if pinned is not UNSET:
            sets.append("pinned = :pinned")
            params["pinned"] = int(bool(pinned))
        if score is not UNSET:
            sets.append("score = :score")
            params["score"] = float(score)
        if data is not UNSET:
            sets.append("data = :data")
            params["data"] = values.to_json(data, "experience data")
        with self._conn.write():
            row = self._conn.one(f"UPDATE experiences SET {', '.join(sets) or 'id = id'} WHERE id = :id RETURNING *",
                                 params)
        if row is None:
            raise NotFoundError(f"no experience with id {experience_id}")
        return _experience(row)

    def reward_job_experience(self, job_id: str, bonus: float, *, pools: Sequence[str] = ("agent",)) -> int:
        """Raise the score of what a job taught (e.g. the user applied its change); returns how many rows."""
        marks = ", ".join("?" for _ in pools)
        with self._conn.write():
            return self._conn.execute(
                f"UPDATE experiences SET score = score + ? WHERE job_id = ? AND pool IN ({marks})",
                [float(bonus), job_id, *pools]).rowcount

    def delete_experience(self, experience_id: int) -> Experience:
        with self._conn.write():
            row = self._conn.one("DELETE FROM experiences WHERE id = ? RETURNING *", [experience_id])
        if row is None:
            raise NotFoundError(f"no experience with id {experience_id}; `troupe experience list` shows them")
        return _experience(row)

    def eliminate_experience(self, experience_ids: Iterable[int], *, batch: int) -> list[Experience]:
        """Remove experiences that refinement judged useless, and log what went (see
        ``experience_eliminations``)."""
        ids = list(dict.fromkeys(experience_ids))
        removed: list[Experience] = []
        with self._conn.write():
            for experience_id in ids:
                row = self._conn.one("DELETE FROM experiences WHERE id = ? AND pinned = 0 RETURNING *", [experience_id])
                if row is not None:
                    removed.append(_experience(row))
            kept = self._conn.scalar("SELECT count(*) FROM experiences")
            log = [{"id": e.id, "pool": e.pool, "key": e.key[:200], "uses": e.uses, "score": e.score} for e in removed]
            self._conn.execute("INSERT INTO experience_eliminations (at, batch, kept, removed) VALUES (?, ?, ?, ?)",
                               [values.now(), batch, kept, values.to_json(log, "removed")])
        return removed

    def experience_eliminations(self, limit: int = 20) -> list[dict[str, Any]]:
        rows = self._conn.all("SELECT * FROM experience_eliminations ORDER BY id DESC LIMIT ?", [limit])
        return [{**row, "removed": values.from_json(row["removed"])} for row in rows]

    def bump_experience_counter(self, name: str, by: int = 1) -> int:
        """Add ``by`` to a named counter (e.g. jobs mined) and return its new value."""
        with self._conn.write():
            row = self._conn.one("INSERT INTO experience_counters (name, value) VALUES (?, ?) ON CONFLICT(name) "
                                 "DO UPDATE SET value = value + excluded.value RETURNING value", [name, by])
        assert row is not None
        return int(row["value"])

    def experience_stats(self) -> dict[str, Any]:
        pools = {row["pool"]: {"count": row["n"], "uses": row["uses"], "pinned": row["pinned"]}
                 for row in self._conn.all("SELECT pool, count(*) AS n, coalesce(sum(uses), 0) AS uses, "
                                           "coalesce(sum(pinned), 0) AS pinned FROM experiences GROUP BY pool")}
        counters = {row["name"]: row["value"] for row in self._conn.all("SELECT * FROM experience_counters")}
        return {"pools": pools, "total": sum(p["count"] for p in pools.values()),
                "retrievals": self._conn.scalar("SELECT count(*) FROM experience_retrievals"),
                "eliminations": self._conn.scalar("SELECT count(*) FROM experience_eliminations"),
                "eliminated": sum(len(values.from_json(r["removed"])) for r in
                                  self._conn.all("SELECT removed FROM experience_eliminations")),
                "counters": counters}

    def export_experience(self, *, workspace_id: int | None = None) -> list[dict[str, Any]]:
        """Every experience as a plain dict (one JSONL line each); ``import_experience`` takes them back."""
        return [e.to_dict() for e in self.list_experience(workspace_id=workspace_id, limit=None)][::-1]

    def import_experience(self, rows: Iterable[dict[str, Any]]) -> tuple[int, int]:
        """Add exported experiences; returns (added, already there). A bad row is a ValueError
        naming its position, and nothing is imported."""
        checked = []
        for number, row in enumerate(rows, 1):
            if not isinstance(row, dict):
                raise ValueError(f"experience {number}: expected an object, got {type(row).__name__}")
            unknown = set(row) - set(_EXPORTED) - {"id", "fingerprint"}
            if unknown or "pool" not in row or "key" not in row or "value" not in row:
                raise ValueError(f"experience {number}: needs pool, key and value"
                                 + (f"; unknown fields {sorted(unknown)}" if unknown else ""))
            checked.append({k: v for k, v in row.items() if k in _EXPORTED})
        added = 0
        with self._conn.write():
            before = self._conn.scalar("SELECT count(*) FROM experiences")
            for number, row in enumerate(checked, 1):
                pool, key, value = row.pop("pool"), row.pop("key"), row.pop("value")
                try:
                    self.add_experience(pool, key, value, **row)
                except (TypeError, ValueError, NotFoundError) as exc:
                    raise ValueError(f"experience {number}: {exc}") from None
            added = self._conn.scalar("SELECT count(*) FROM experiences") - before
        return added, len(checked) - added


def _filters(*, pool: str | None = None, pools: Sequence[str] | None = None, workspace_id: int | None = None,
             chain: str | None = None, phase: str | None = None, role: str | None = None,
             alias: str) -> tuple[list[str], dict[str, Any]]:
    where: list[str] = []
    params: dict[str, Any] = {}
    wanted = list(pools or ([] if pool is None else [pool]))
    for name in wanted:
        if name not in POOLS:
            raise ValueError(f"experience pool {name!r} is not one of: {', '.join(POOLS)}")
    if wanted:
        where.append(f"{alias}pool IN ({', '.join(f':pool{i}' for i in range(len(wanted)))})")
        params.update({f"pool{i}": name for i, name in enumerate(wanted)})
    if workspace_id is not None:
        where.append(f"({alias}workspace_id IS NULL OR {alias}workspace_id = :ws)")
        params["ws"] = workspace_id
    for column, wanted_value in (("chain", chain), ("phase", phase), ("role", role)):
        if wanted_value is not None:
            where.append(f"{alias}{column} = :{column}")
            params[column] = wanted_value
    return where, params


def dump_jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)
