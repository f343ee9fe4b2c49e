"""Mining, after a job finished: its record becomes experience, at a bounded cost.

- ECL shortcuts (:mod:`daemon.experience.ecl`): at most ``MAX_SHORTCUTS`` per job, each with an
  instruction the model writes for the jump (at most ``instruction_calls`` model calls; without a
  model, or when it fails, the instructions recorded along the way stand in). Instructor pool:
  source state → instruction; assistant pool: instruction → the target's changed files.
- MAEL: one agent-pool entry per phase (the role's input, its reply, a reward from what happened
  next: the tests passed, the next review said "Finished" at once, no correction was needed).
- Co-Saving: one workflow entry (which skippable steps were redundant, and what they cost).
- IER: the mined-jobs counter sets the batch; after each batch, elimination runs.

Only successful jobs are mined. Every text is scrubbed of secrets before it is stored.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from daemon.experience.ecl import Shortcut, find_shortcuts
from daemon.experience.refine import MINED, batch_of, eliminate
from daemon.experience.settings import ExperienceSettings
from daemon.experience.text import clip, code_summary, scrub
from daemon.llm.budget import Budget
from daemon.llm.errors import LLMError

if TYPE_CHECKING:
    from daemon.experience.session import JobRecord
    from daemon.llm.gateway import ModelGateway
    from storage import AsyncStore

log = logging.getLogger("troupe.experience")

MAX_SHORTCUTS = 3
_INSTRUCTION_SYSTEM = ("You write one instruction for a programmer: what to do to get from the code before to the "
                       "code after. Reply with the instruction only, in at most three sentences.")


@dataclass
class MiningReport:
    job_id: str | None
    shortcuts: int = 0
    agent: int = 0
    workflow: int = 0
    instruction_calls: int = 0
    eliminated: int = 0
    skipped: str | None = None


def changed_files(shortcut: Shortcut) -> dict[str, str]:
    before, after = shortcut.source.files, shortcut.target.files
    return {path: text for path, text in after.items() if before.get(path) != text}


def target_code(shortcut: Shortcut, chars: int = 6000) -> str:
    blocks = [f"```{path}\n{text.rstrip()}\n```" for path, text in sorted(changed_files(shortcut).items())]
    return clip("\n\n".join(blocks), chars)


def _diff(shortcut: Shortcut, chars: int = 3000) -> str:
    lines: list[str] = []
    for path in sorted(set(shortcut.source.files) | set(shortcut.target.files)):
        before = shortcut.source.files.get(path, "").splitlines(keepends=True)
        after = shortcut.target.files.get(path, "").splitlines(keepends=True)
        lines += difflib.unified_diff(before, after, f"a/{path}", f"b/{path}")
    return clip("".join(lines), chars)


def recorded_instruction(shortcut: Shortcut) -> str:
    steps = [step.split(":", 1)[-1].strip() for step in shortcut.steps if step.strip()]
    return clip("Do these steps at once: " + " Then: ".join(steps), 1000)


async def write_instruction(gateway: ModelGateway, task: str, shortcut: Shortcut) -> str:
    prompt = (f"Task: {task}\n\nThe code before:\n{code_summary(shortcut.source.files) or '(no code yet)'}\n\n"
              f"The change that was made:\n{_diff(shortcut)}\n\nWrite the one instruction that would have led a "
              "programmer straight from the code before to the code after.")
    completion = await gateway.complete([{"role": "system", "content": _INSTRUCTION_SYSTEM},
                                         {"role": "user", "content": scrub(prompt)}],
                                        role="experience", budget=Budget(tokens=8000), max_tokens=256)
    return clip(completion.text, 1000)


async def _known_instruction(store: AsyncStore, code: str) -> str | None:
    """The instruction already stored for exactly this target code, if any."""
    for known, _ in await store.search_experience(code, pools=["assistant"], limit=5):
        if known.value == scrub(code):
            return known.data.get("instruction") or known.key.split("\n", 1)[0]
    return None


def reward_of(index: int, record: JobRecord) -> float:
    """What happened after a phase, as a reward in 0..1."""
    phase = record.phases[index]
    reward = 0.2 + (0.3 if record.tests_ok else 0.15 if record.tests_ok is None else 0.0)
    if phase.produces in ("code", "document"):
        reward += 0.3 if phase.passed_review else 0.15 if phase.passed_review is None else 0.0
        reward += 0.2 if phase.turns <= 2 else 0.0  # no question, no correction
    else:
        reward += 0.3 if phase.concluded else 0.0
        reward += 0.2 if phase.turns <= 2 else 0.1
    return round(min(1.0, reward), 4)


class _Scope(TypedDict):
    """What every experience mined from one job shares (``add_experience``'s keywords)."""

    workspace_id: int | None
    job_id: str | None
    chain: str
    task: str
    batch: int


async def mine(store: AsyncStore, settings: ExperienceSettings, record: JobRecord | None,
               gateway: ModelGateway | None = None) -> MiningReport:
    """Mine one job's record (``JobExperience.record``) into the pools; see the module docstring."""
    report = MiningReport(getattr(record, "job_id", None))
    if record is None or not settings.enabled:
        report.skipped = "experience is off" if record is not None else "nothing was captured"
        return report
    if not record.ok:
        report.skipped = "the job did not succeed"
        return report
    mined = await store.bump_experience_counter(MINED, 1)
    batch = batch_of(mined - 1, settings)
    task = scrub(record.task)
    common: _Scope = {"workspace_id": record.workspace_id, "job_id": record.job_id, "chain": record.chain, "task": task,
              "batch": batch}

    for shortcut in find_shortcuts(record.states, record.task, threshold=settings.shortcut_gain,
                                   limit=MAX_SHORTCUTS):
        if not changed_files(shortcut):
            continue
        instruction, by = recorded_instruction(shortcut), "recorded"
        known = await _known_instruction(store, target_code(shortcut))
        if known is not None:  # this jump was described before: no model call for it
            instruction, by = known, "known"
        elif gateway is not None and report.instruction_calls < settings.instruction_calls:
            report.instruction_calls += 1
            try:
                instruction, by = await write_instruction(gateway, record.task, shortcut), "model"
            except LLMError as exc:
                log.warning("experience: the model could not write a shortcut instruction (%s); using the "
                            "recorded steps", exc)
        instruction = scrub(instruction)
        data = {"source": shortcut.source.index, "target": shortcut.target.index, "instruction_by": by,
                "files": sorted(changed_files(shortcut))}
        summary = code_summary(shortcut.source.files) or "(empty workspace)"
        await store.add_experience("instructor", scrub(f"{record.task}\n{summary}"), instruction,
                                   score=shortcut.gain, data=data, **common)
        await store.add_experience("assistant", scrub(f"{instruction}\n{record.task}"), scrub(target_code(shortcut)),
                                   score=shortcut.gain, data={**data, "instruction": instruction}, **common)
        report.shortcuts += 1

    for index, phase in enumerate(record.phases):
        if not phase.reply.strip():
            continue
        await store.add_experience("agent", scrub(f"{record.task}\n{clip(phase.prompt, 1500)}"), scrub(phase.reply),
                                   phase=phase.phase, role=phase.role, score=reward_of(index, record),
                                   data={"cycle": phase.cycle, "tokens": phase.tokens, "produces": phase.produces,
                                         "turns": phase.turns, "files": sorted(phase.changed)},
                                   **common)
        report.agent += 1

    steps = record.steps
    summary = "; ".join(f"{name}: {'redundant' if s['redundant'] else 'did work'} ({s['tokens']} tokens"
                        + (f", {s['work_cycles']} cycle(s) of work" if "work_cycles" in s else "") + ")"
                        for name, s in steps.items()) or "no skippable step"
    await store.add_experience("workflow", task, f"job {record.job_id}: {summary}",
                               score=1.0 if record.tests_ok else 0.6,
                               data={"ok": record.ok, "tests_ok": record.tests_ok, "tokens": record.tokens,
                                     "steps": steps}, **common)
    report.workflow = 1

    if mined % settings.batch_size == 0:
        report.eliminated = len(await eliminate(store, settings, batch))
    return report
