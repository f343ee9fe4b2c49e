"""Roles, phases, loops and chains: the engine's data model, loaded from TOML (see ``loader``).

A :class:`Chain` is a list of steps. A step is a :class:`Phase` (a dialogue between an
instructor role and an assistant role), a :class:`Tool` step (run the tests, run the static
checks, build the repository context) or a :class:`Loop` of phases repeated until a condition
holds (the reviewer is satisfied, the tests pass, no placeholder is left) or a cycle limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from daemon.teams.config import TeamsConfig


class Produces(StrEnum):
    DECISION = "decision"        # a short conclusion other phases build on
    DOCUMENT = "document"        # a file written into the workspace (README.md, requirements.txt)
    CODE = "code"                # edits applied to the scratch copy
    FINDINGS = "findings"        # structured review comments (JSON)
    TEST_REPORT = "test_report"  # an explanation of test results
    ANSWER = "answer"            # the job's answer to a question
    REPAIR = "repair"            # a corrected file, tried on a copy: its changed lines are findings if its
                                 # docstring examples then pass (daemon.agents.repair)
    REPRODUCE = "reproduce"      # tests of the reviewer's suspicions: one that fails on the code and passes
                                 # with a finding's fix makes it "major" (daemon.agents.reproduce)
    PATCH = "patch"              # the lines changed since the last commit, rewritten until the tests that
                                 # broke pass again, in the job's copy (daemon.agents.patch)


# The completion-token cap of a phase's calls when its chain file sets no ``max_tokens``: enough
# for what the phase produces, and a bound on a small model that would otherwise keep generating.
DEFAULT_MAX_TOKENS: dict[Produces, int] = {
    Produces.DECISION: 512,
    Produces.DOCUMENT: 1536,
    Produces.CODE: 3072,
    Produces.FINDINGS: 512,
    Produces.TEST_REPORT: 512,
    Produces.ANSWER: 512,
    Produces.REPAIR: 600,
    Produces.REPRODUCE: 400,
    Produces.PATCH: 200,
}
SIDE_MAX_TOKENS = 512  # the instructor's answers and remarks within a phase (never above the phase's cap)
REFLECT_MAX_TOKENS = 128  # the one-line conclusion extracted from a transcript


class Until(StrEnum):
    FINISHED = "finished"                # the first phase of a cycle concluded with the stop word
    TESTS_PASS = "tests_pass"            # the test command passes
    NO_PLACEHOLDERS = "no_placeholders"  # no `pass`/TODO/.../NotImplementedError left in the code


class ToolName(StrEnum):
    TESTS = "tests"                # the project's tests and the docstring examples: {test_report}, {test_failures}
    DOCTESTS = "doctests"          # only the docstring examples of the files in focus: fills {examples}
    RELATED_TESTS = "related_tests"  # only the tests related to the files in focus: fills {failing_tests}
    STATIC_CHECK = "static_check"  # ruff and friends: fills {lint}, adds lint findings
    CONTEXT = "context"            # repository map + relevant files: fills {context}


# Placeholders every template may use, besides the name of any phase of the same chain
# (which stands for that phase's latest conclusion).
TEMPLATE_FIELDS: dict[str, str] = {
    "task": "the user's request or question",
    "code": "the current code (changed and selected files, within the context budget)",
    "diff": "the change made so far, as a unified diff",
    "context": "the repository map and the files relevant to the task",
    "lint": "issues the static checks already found",
    "target": "what to review: files or hunks with line numbers",
    "test_report": "the latest test run's summary",
    "test_failures": "the latest test run's failures, with their output",
    "unfinished": "places in the code that are still placeholders",
    "edit_format": "how to write code edits",
    "program_format": "how to write a program anew: every file in full (what {edit_format} says in an empty workspace)",
    "findings_format": "how to write review findings",
    "files": "the files the user selected",
    "examples": "the docstring examples that fail, what each returned against what it expects (empty: none)",
    "failing_tests": "the related tests of the files under review that fail, with their assertions (empty: none)",
    "suspects": "the reviewer's suggestions that carry a fix, to reproduce with a test (empty: none)",
    "regression": ("a save's related tests that pass on the last commit and fail since, with their assertions, "
                   "under a line saying so (empty: none, or not a save)"),
    "other_files": "the repository's files besides the ones the user named (empty: there are none)",
    "to_rewrite": ("the files whose docstring examples fail, without those functions' bodies; none failing, the short "
                   "files whose functions the failing tests name, without those (empty: neither)"),
    "rewrite_reason": "what {to_rewrite} answers: the code does not do what its docstrings say, or the tests fail",
    "rewrite_goal": "what the rewritten bodies must do: what the docstrings say, or pass the tests",
    "changed_lines": ("the definition holding the one short span changed since the last commit where failing tests "
                      "passed, numbered, and what to send back (empty: no such span)"),
    "code_map": "the team's files with their definitions, docstrings and options (not their code)",
    "imports": "modules the code imports from outside the standard library and the project (empty: none)",
}

# What a phase's ``skip_if_empty`` field being empty means, for the transcript.
EMPTY_FIELD_MEANS: dict[str, str] = {
    "imports": "the code imports nothing outside the standard library and its own files",
    "lint": "the static checks found nothing", "unfinished": "nothing is left unfinished",
    "other_files": "the repository holds only the files the user named",
    "to_rewrite": "no docstring example fails, and no failing test names a function of a short file",
    "examples": "no docstring example fails",
    "failing_tests": "no related test fails (or none exists)",
    "suspects": "no suggestion with a fix to reproduce",
    "regression": "no related test fails since the save",
    "changed_lines": "no failing test passes on the last commit with one short span changed since",
}

# Cheap signals that end a loop before its next cycle, without a model turn (``skip_cycle_when``, see
# ``daemon.agents.cycles``): the rules each kind of loop takes, and its default.
SKIP_CYCLE_RULES: dict[Until, tuple[str, ...]] = {
    Until.FINISHED: ("checks_pass", "unchanged", "addressed"),
    Until.TESTS_PASS: ("unchanged",),
}
DEFAULT_SKIP_CYCLE_RULES: dict[Until, tuple[str, ...]] = {Until.FINISHED: ("unchanged", "addressed")}


@dataclass(frozen=True)
class Role:
    name: str
    prompt: str
    model: str | None = None  # a litellm model string; None: the configured model for this role
    tools: tuple[str, ...] = ()
    temperature: float | None = None  # None: the configured one (a phase's ``temperature`` sets its assistant's)


@dataclass(frozen=True)
class Phase:
    name: str
    instructor: str
    assistant: str
    template: str
    produces: Produces = Produces.DECISION
    max_turns: int = 1
    marker: str = "<INFO>"
    reflect: bool = False  # when no conclusion came, extract one from the transcript
    max_questions: int = 2  # communicative dehallucination: questions the assistant may ask
    ask_human: bool = False  # questions the instructor cannot answer may go to the human
    file: str | None = None  # for documents: where the document is written
    max_retries: int = 2  # replies of the wrong shape are sent back this many times, with the reason
    max_tokens: int | None = None  # the cap of each model call; None: DEFAULT_MAX_TOKENS[produces]
    new_files: bool = True  # code phases: whether the edits may create files (False: existing files only)
    edit_tests: bool = True  # code phases: whether the edits may change test files (False: the code only)
    # code phases: a reply that changes nothing is sent back with the failing docstring examples (max_retries
    # times); with none failing a resend would say nothing new, so the code is kept as it was
    resend_unchanged: bool = True
    skip_if_empty: str | None = None  # a template field: when it renders empty, the phase is skipped (no call)
    skip_if_findings: bool = False  # skipped (no call) when earlier steps already made model findings
    # skipped (no call) when its prompt shows a file under review only in part (too large to show whole): a
    # repair must send the code back, and the review it runs before gets the time (daemon.agents.runner)
    skip_if_excerpted: bool = False
    # a findings phase: "evidence" (default) makes its findings suggestions, a few per file (only executed
    # evidence is "major"); "as_given" keeps the model's own severities (a strong model a user trusts)
    severities: str = "evidence"
    # an earlier phase with the same assistant whose conversation this one goes on with: that phase's prompt
    # and replies come first, unchanged, so a prompt cache serves them again (llama.cpp's, a provider's) and
    # only this template's text is new; when that phase did not talk (skipped), this one is skipped too
    continues: str | None = None
    temperature: float | None = None  # its assistant's sampling temperature; None: the configured one

    @property
    def kind(self) -> str:
        return "phase"

    @property
    def token_cap(self) -> int:
        return self.max_tokens or DEFAULT_MAX_TOKENS[self.produces]


@dataclass(frozen=True)
class Tool:
    tool: ToolName
    # the context tool: the share of the model's context window it may fill (None: the runner's
    # CONTEXT_SHARE), and whether a repository that fits whole is shown whole, in path order (every
    # file, the same prefix for every question: a prompt cache serves it again) instead of ranked
    window_share: float | None = None
    whole: bool = False

    @property
    def name(self) -> str:
        return str(self.tool)

    @property
    def kind(self) -> str:
        return "tool"


@dataclass(frozen=True)
class Loop:
    name: str
    until: Until
    phases: tuple[Phase, ...]
    max_cycles: int = 3
    stop_word: str = "Finished"
    without_tests: str = "skip"  # tests_pass loops when there is nothing to run: "skip" the loop, or "run" it
    skip_cycle_when: tuple[str, ...] = ()  # SKIP_CYCLE_RULES[until] that end the loop before its next cycle

    @property
    def kind(self) -> str:
        return "loop"


Step = Phase | Tool | Loop


@dataclass
class Chain:
    name: str
    description: str
    steps: list[Step]
    roles: dict[str, Role]
    source: str = ""  # the file it came from
    start: str = "repository"  # "repository": a scratch copy of the repo; "empty": new software
    scale: TeamsConfig = field(default_factory=TeamsConfig)  # teams, topology, orchestrator (daemon.teams)
    time_limit: float | None = None  # seconds a run may take: a reply still being written then stops, later
    # phases are skipped and say so (review on save: a bounded wait on any machine, under any load)
    # the phases the time limit must leave room for at the model's measured speed (daemon.agents.timing);
    # ``time_limit`` holds when the speed is not known
    time_limit_covers: tuple[str, ...] = ()

    def phases(self) -> list[Phase]:
        """Every phase, loops unrolled once, in order."""
        out: list[Phase] = []
        for step in self.steps:
            if isinstance(step, Phase):
                out.append(step)
            elif isinstance(step, Loop):
                out.extend(step.phases)
        return out

    @property
    def writes_code(self) -> bool:
        """Whether the chain needs a scratch copy (it edits files or runs tests there)."""
        for step in self.steps:
            if isinstance(step, Tool) and step.tool is ToolName.TESTS:
                return True
            if isinstance(step, Loop) and step.until is Until.TESTS_PASS:
                return True
            for phase in step.phases if isinstance(step, Loop) else [step]:
                if isinstance(phase, Phase) and phase.produces in (Produces.CODE, Produces.DOCUMENT):
                    return True
        return False


@dataclass
class ChainSet:
    """The chains and roles available for one repository (built-in, then repo-local)."""

    chains: dict[str, Chain] = field(default_factory=dict)
    roles: dict[str, Role] = field(default_factory=dict)

    def get(self, name: str) -> Chain:
        try:
            return self.chains[name]
        except KeyError:
            known = ", ".join(sorted(self.chains)) or "none"
            raise KeyError(f"no chain named {name!r} (known: {known})") from None
