"""Retrieval: which experiences reach one phase's prompt, ranked, within a size budget.

Candidates come from FTS5 (BM25, any word of the query); they are re-ranked by TF-IDF cosine
between the query and each experience's key and task (hybrid lexical ranking), and, for agent
pools, by relevance × reward. What is chosen is rendered as one quoted-data block, and each keeps
why it matched (:meth:`Retrieved.reason`: its use, the query's words its key and task share, the
cosine), which the retrieval log records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from daemon.agents.model import Phase, Produces
from daemon.experience.settings import ExperienceSettings
from daemon.experience.text import Corpus, clip, quoted, tokens_of, words
from storage.experience import Experience
from storage.verbs.retrievals import MAX_MATCHED, Retrieval

if TYPE_CHECKING:
    from storage import AsyncStore

CANDIDATES = 20


@dataclass
class Retrieved:
    experience: Experience
    relevance: float
    text: str
    why: str = ""  # what it is used as: "hint", "solution" or "example"
    matched: tuple[str, ...] = ()

    def reason(self) -> Retrieval:
        return Retrieval(self.experience.id, self.why, self.matched, self.relevance)


def matched_words(query: str, text: str) -> tuple[str, ...]:
    """The words of ``query`` that ``text`` holds too, in the query's order (as the ranking reads both)."""
    held = set(words(text))
    return tuple(w for w in dict.fromkeys(words(query)) if w in held)[:MAX_MATCHED]


def why_matched(query: str, experience: Experience) -> tuple[str, ...]:
    """What :func:`ranked` compared: the query's words the experience's key and task share."""
    return matched_words(query, f"{experience.key}\n{experience.task}")


async def ranked(store: AsyncStore, query: str, *, pools: list[str], workspace_id: int | None, floor: int | None,
                 chain: str | None = None, phase: str | None = None, role: str | None = None) -> list[
                     tuple[Experience, float]]:
    """Candidates by BM25, re-ranked by cosine similarity of ``query`` to their key and task. Those of
    the job's repository and the global ones; a job with no repository (``workspace_id`` None), the
    global ones only: another repository's code and dismissals stay in that repository."""
    hits = await store.search_experience(query, pools=pools, workspace_id=workspace_id, chain=chain, phase=phase,
                                         role=role, min_batch=floor, limit=CANDIDATES,
                                         only_global=workspace_id is None)
    if not hits:
        return []
    corpus = Corpus([query] + [f"{e.key}\n{e.task}" for e, _ in hits])
    scored = [(e, corpus.similarity(0, i + 1)) for i, (e, _) in enumerate(hits)]
    return sorted(scored, key=lambda pair: -pair[1])


def of_files(experience: Experience, files: list[str] | None) -> bool:
    """Whether a shortcut or code example may be shown to a code phase working on ``files`` (None:
    any, as in a new program): only one about a file the job works on. Another file's code, or an
    instruction about it, is taken for the answer by a small model: on HumanEvalFix (every task
    reads alike) the bundled model wrote an earlier task's function in place of its own (7 of its
    11 misses with experience on were a ``NameError`` for the function the task named), and with
    the code left out, it wrote the function an instruction hint named (``truncate_number`` into
    ``mean_absolute_deviation.py``)."""
    return files is None or bool(set(experience.data.get("files") or ()) & set(files))


async def for_phase(store: AsyncStore, settings: ExperienceSettings, *, chain: str, phase: Phase, role: str, task: str,
                    prompt: str, workspace_id: int | None, floor: int | None,
                    files: list[str] | None = None) -> list[Retrieved]:
    """Shortcut hints (code phases) and few-shot examples from the role's pool, best first.

    ``files``: the files a change to an existing repository works on; shortcut hints, their code
    and code phases' examples are then only those of these files (:func:`of_files`)."""
    query = f"{task}\n{clip(prompt, 4000)}"
    found: list[Retrieved] = []
    if phase.produces is Produces.CODE:
        hints = [(e, r) for e, r in await ranked(store, query, pools=["instructor"], workspace_id=workspace_id,
                                                 floor=floor) if of_files(e, files)]
        if hints and hints[0][1] >= settings.min_relevance:
            hint, relevance = hints[0]
            found.append(Retrieved(hint, relevance, f"In a similar earlier task ({clip(hint.task, 200)}), this "
                                                    f"instruction moved similar code forward:\n{hint.value}",
                                   "hint", why_matched(query, hint)))
            query = f"{hint.value}\n{query}"
        solutions = [(e, r) for e, r in await ranked(store, query, pools=["assistant"], workspace_id=workspace_id,
                                                     floor=floor) if of_files(e, files)]
        if solutions and solutions[0][1] >= settings.min_relevance:
            solution, relevance = solutions[0]
            found.append(Retrieved(solution, relevance, f"For a similar instruction in an earlier task "
                                                        f"({clip(solution.task, 200)}), this code was the result:\n"
                                                        f"{solution.value}", "solution", why_matched(query, solution)))
    examples = await ranked(store, query, pools=["agent"], workspace_id=workspace_id, floor=floor, chain=chain,
                            phase=phase.name, role=role)
    # An example can only make a phase converge faster: one that concluded at once before gets none (a
    # few-shot example there is pure cost). Code phases always may: their examples are solutions.
    good = [(e, r) for e, r in examples if r >= settings.min_relevance and e.score >= 0.5
            and (of_files(e, files) if phase.produces is Produces.CODE else e.data.get("turns", 3) > 2)]
    good.sort(key=lambda pair: -(pair[1] * pair[0].score))
    shown = {r.experience.value.strip() for r in found}
    for example, relevance in good[: settings.top_k]:
        if example.value.strip() in shown:
            continue
        found.append(Retrieved(example, relevance, f"A reply by the {role} that worked well in this step of a "
                                                   f"similar earlier task ({clip(example.task, 200)}):\n"
                                                   f"{example.value}", "example", why_matched(query, example)))
    return found


def learnings_block(learnings: list[Experience], files: list[str], budget_tokens: int) -> tuple[str, list[int]]:
    """What people said about earlier findings, the reviewed files' first (each is shown for being this
    repository's: :func:`learning_reason`)."""
    order = sorted(learnings, key=lambda e: (e.data.get("file") not in files, -e.created))
    lines, used, spent = [], [], 0
    for learning in order:
        line = f"- {learning.value}"
        if spent + tokens_of(line) > budget_tokens:
            break
        lines.append(line)
        used.append(learning.id)
        spent += tokens_of(line)
    if not lines:
        return "", []
    return (quoted("What the people of this repository said about earlier review findings; do not report "
                   "again what they dismissed on the same code.", lines), used)


def learning_reason(learning: Experience, files: list[str]) -> Retrieval:
    """Why a person's word reached a review: it is this repository's; ``matched``: the reviewed file it
    is about, when it is about one of them."""
    file = learning.data.get("file")
    return Retrieval(learning.id, "learning", (file,) if isinstance(file, str) and file in files else ())


def fit(found: list[Retrieved], budget_tokens: int) -> tuple[str, list[int]]:
    """The retrieved items that fit in ``budget_tokens``, as one quoted block (the first is clipped to fit)."""
    items: list[str] = []
    used: list[int] = []
    spent = 0
    for item in found:
        text = item.text
        if spent + tokens_of(text) > budget_tokens:
            if items:
                continue
            text = clip(text, budget_tokens * 4 - 400)
        items.append(text)
        used.append(item.experience.id)
        spent += tokens_of(text)
    if not items:
        return "", []
    return quoted("Experience from similar earlier tasks.", items), used
