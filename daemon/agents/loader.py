"""Load chains and roles from TOML: the built-in ones, then the repository's ``.troupe/chains/``.

A chain file looks like this (``daemon/agents/chains/*.toml`` are complete examples)::

    name = "ask"
    description = "Answer a question about the code, citing files and lines."

    [[steps]]
    tool = "context"            # or tests, doctests (the files' docstring examples), static_check
    window_share = 0.8          # context only: the share of the model's window it may fill (default 0.5)
    whole = true                # context only: a repository that fits is shown whole, in path order

    [[steps]]
    phase = "answer"
    instructor = "cto"
    assistant = "programmer"
    produces = "answer"
    template = "Question: {task}\\n\\n{context}\\n\\nAnswer, citing files as path:line."
    max_tokens = 512            # the cap of each model call (default: model.DEFAULT_MAX_TOKENS by produces)

    [[steps]]
    loop = "test"
    until = "tests_pass"        # or finished, no_placeholders
    max_cycles = 3
    without_tests = "skip"      # nothing to run: skip the loop (default), or "run" it (build: write tests)
    skip_cycle_when = ["unchanged"]  # a fix that kept the code ends the loop (default: [], every cycle runs)
    [[steps.phases]]
    phase = "test_fix"
    produces = "code"
    new_files = false           # its edits may change existing files only (default: true)
    edit_tests = false          # its edits may not change test files (default: true)
    temperature = 0.7           # its assistant's sampling temperature (default: the configured one)
    ...

    [[steps]]
    loop = "review"
    until = "finished"
    skip_cycle_when = ["unchanged", "addressed"]  # the default: cheap signals that end the loop
                                # (also "checks_pass": no first review when the failing checks pass now)
    [[steps.phases]]            # (a) the reviewer's comment, then (b) its fix
    ...
    resend_unchanged = false    # a fix that changes nothing is kept, not sent back (default in a review loop;
                                # elsewhere it goes back with the failing docstring examples its prompt lacked)

    [[steps]]
    phase = "environment"
    skip_if_empty = "imports"   # no model call when this template field renders empty
    skip_if_findings = true     # no model call when earlier steps made findings (review: a verified repair)
    skip_if_excerpted = true    # no model call when the prompt shows a file under review only in part
    continues = "review"        # goes on with that earlier phase's conversation (same assistant): its prompt
                                # and reply are this call's unchanged prefix, which a prompt cache serves again
    severities = "as_given"     # findings: keep the model's severities (default "evidence": suggestions)

A phase's reply is checked for the shape it ``produces`` and sent back with the reason up to
``max_retries`` times (``daemon.agents.produce``).

A chain may bound its wall-clock time: ``time_limit = 50`` (seconds; the review chain's, so a
review on save ends within a minute on any machine). A reply still being written then stops with
what it has (a findings reply loses only its unfinished last finding), and later phases are skipped
with the reason in the transcript. With ``time_limit_covers = ["review", "reproduce"]`` the limit is
instead the time those phases take at their caps at the model's measured speed
(:mod:`daemon.agents.timing`); ``time_limit`` then holds only where the speed is not known.

A chain may also say how it scales (``teams = 4``, ``topology = "small-world"``, ``agents = 32``,
``orchestrator = "learned"``, ...): those keys are checked by ``daemon.teams.config``.

Roles live in ``roles.toml`` (``[roles.<name>]`` with ``prompt``, optional ``model`` and
``tools``); a chain file may add its own ``[roles.<name>]`` tables. A repository's files win
over the built-in ones with the same chain or role name. Every mistake is a
:class:`ChainError` naming the file, the line and the reason.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from daemon.agents.model import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_SKIP_CYCLE_RULES,
    SKIP_CYCLE_RULES,
    TEMPLATE_FIELDS,
    Chain,
    ChainSet,
    Loop,
    Phase,
    Produces,
    Role,
    Step,
    Tool,
    ToolName,
    Until,
)
from daemon.agents.toml_lines import line_of
from daemon.json_types import Json, JsonObject
from daemon.teams.config import KEYS as SCALE_KEYS
from daemon.teams.config import TeamsConfigError, parse_teams_config

BUILTIN_DIR = Path(__file__).parent / "chains"
REPO_DIR = Path(".troupe") / "chains"
ROLES_FILE = "roles.toml"

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PHASE_KEYS = {"phase", "instructor", "assistant", "template", "produces", "max_turns", "marker", "reflect",
               "max_questions", "ask_human", "file", "max_retries", "max_tokens", "new_files", "edit_tests",
               "resend_unchanged", "skip_if_empty", "skip_if_findings", "skip_if_excerpted", "severities", "continues",
               "temperature"}
_LOOP_KEYS = {"loop", "until", "max_cycles", "stop_word", "phases", "without_tests", "skip_cycle_when"}
_TOOL_KEYS = {"tool", "window_share", "whole"}
_ROLE_KEYS = {"prompt", "model", "tools"}
_CHAIN_KEYS = {"name", "description", "steps", "roles", "start", "time_limit", "time_limit_covers",
               *SCALE_KEYS}  # SCALE_KEYS: daemon.teams


class ChainError(ValueError):
    """A chain or roles file is wrong: ``file:line: reason``."""

    def __init__(self, file: str, line: int, reason: str) -> None:
        super().__init__(f"{file}:{line}: {reason}")
        self.file, self.line, self.reason = file, line, reason


def placeholders(template: str) -> list[str]:
    """The ``{names}`` a template uses (other braces, such as JSON examples, are left alone)."""
    return _PLACEHOLDER.findall(template)


class _File:
    """One TOML file being read: its data, and a way to raise errors at the right line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ChainError(str(path), 1, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except OSError as exc:
            raise ChainError(str(path), 1, f"cannot read: {exc.strerror}") from None
        try:
            self.data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            line = getattr(exc, "lineno", None) or _line_from_message(str(exc))
            raise ChainError(str(path), line, f"not valid TOML: {getattr(exc, 'msg', exc)}") from None

    def error(self, where: list[str | int], reason: str) -> ChainError:
        return ChainError(str(self.path), line_of(self.text, where), reason)

    def expect(self, table: JsonObject, key: str, kind: type | tuple[type, ...], where: list[str | int],
               default: object = ..., allowed: set[str] | None = None) -> Json:
        """``table[key]`` (else ``default``), refused unless of ``kind``: Json, as ``kind`` is checked at run time."""
        if key not in table:
            if default is ...:
                raise self.error(where, f"missing required key {key!r}")
            return default
        value = table[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join(k.__name__ for k in kinds)
            raise self.error([*where, key], f"{key!r} must be {names}, got {value!r}")
        if allowed is not None and value not in allowed:
            raise self.error([*where, key], f"{key} = {value!r} is not one of: {', '.join(sorted(allowed))}")
        return value

    def no_unknown_keys(self, table: JsonObject, known: set[str], where: list[str | int], what: str) -> None:
        for key in table:
            if key not in known:
                raise self.error([*where, key], f"unknown key {key!r} in {what} (expected one of: "
                                 f"{', '.join(sorted(known))})")


def _line_from_message(message: str) -> int:
    match = re.search(r"line (\d+)", message)
    return int(match.group(1)) if match else 1


def _positive(f: _File, table: JsonObject, key: str, where: list[str | int], default: int,
              minimum: int = 1) -> int:
    value: int = f.expect(table, key, int, where, default)  # expect checked it is an int
    if value < minimum:
        raise f.error([*where, key], f"{key} must be at least {minimum}, got {value}")
    return value


def _temperature(f: _File, table: JsonObject, where: list[str | int]) -> float | None:
    value = f.expect(table, "temperature", (int, float), where, None)
    if value is not None and not 0 <= value <= 2:
        raise f.error([*where, "temperature"], f"temperature must be between 0 and 2, got {value}")
    return None if value is None else float(value)


def _time_limit(f: _File, data: JsonObject) -> float | None:
    value = f.expect(data, "time_limit", (int, float), [], None)
    if value is not None and value < 1:
        raise f.error(["time_limit"], f"time_limit is in seconds and must be at least 1, got {value}")
    return None if value is None else float(value)


def _time_limit_covers(f: _File, data: JsonObject, chain: Chain) -> tuple[str, ...]:
    names = f.expect(data, "time_limit_covers", list, [], [])
    if not names:
        return ()
    if chain.time_limit is None:
        raise f.error(["time_limit_covers"], "time_limit_covers needs a time_limit: the limit when the model's "
                      "speed is not known")
    phases = {phase.name for phase in chain.phases()}
    for i, name in enumerate(names):
        if name not in phases:
            raise f.error(["time_limit_covers", i], f"time_limit_covers names {name!r}, which is no phase of this "
                          f"chain (its phases: {', '.join(sorted(phases))})")
    return tuple(names)


def _roles(f: _File, data: JsonObject) -> dict[str, Role]:
    table = f.expect(data, "roles", dict, [], {})
    roles = {}
    for name, body in table.items():
        where: list[str | int] = ["roles", name]
        if not isinstance(body, dict):
            raise f.error(where, f"role {name!r} must be a table with a 'prompt'")
        f.no_unknown_keys(body, _ROLE_KEYS, where, f"role {name!r}")
        prompt = f.expect(body, "prompt", str, where)
        if not prompt.strip():
            raise f.error([*where, "prompt"], f"role {name!r} has an empty prompt")
        model = f.expect(body, "model", str, where, None) or None
        tools = f.expect(body, "tools", list, where, [])
        if not all(isinstance(t, str) for t in tools):
            raise f.error([*where, "tools"], "tools must be a list of strings")
        roles[name] = Role(name=name, prompt=prompt.strip(), model=model, tools=tuple(tools))
    return roles


def _phase(f: _File, body: JsonObject, where: list[str | int], *, review_fix: bool = False) -> Phase:
    """One phase; ``review_fix``: it answers a review comment (a later phase of a finished loop)."""
    f.no_unknown_keys(body, _PHASE_KEYS, where, "a phase")
    name = f.expect(body, "phase", str, where)
    produces = f.expect(body, "produces", str, where, "decision", allowed={p.value for p in Produces})
    phase = Phase(
        name=name,
        instructor=f.expect(body, "instructor", str, where),
        assistant=f.expect(body, "assistant", str, where),
        template=f.expect(body, "template", str, where),
        produces=Produces(produces),
        max_turns=_positive(f, body, "max_turns", where, 1),
        marker=f.expect(body, "marker", str, where, "<INFO>"),
        reflect=f.expect(body, "reflect", bool, where, produces == "decision"),
        max_questions=_positive(f, body, "max_questions", where, 2, minimum=0),
        ask_human=f.expect(body, "ask_human", bool, where, False),
        file=f.expect(body, "file", str, where, None),
        max_retries=_positive(f, body, "max_retries", where, 2, minimum=0),
        max_tokens=_positive(f, body, "max_tokens", where, DEFAULT_MAX_TOKENS[Produces(produces)], minimum=16),
        new_files=f.expect(body, "new_files", bool, where, True),
        edit_tests=f.expect(body, "edit_tests", bool, where, True),
        # a fix that keeps the code answers the comment too; the loop's "unchanged" rule then ends it
        resend_unchanged=f.expect(body, "resend_unchanged", bool, where, not review_fix),
        skip_if_empty=f.expect(body, "skip_if_empty", str, where, None, allowed=set(TEMPLATE_FIELDS)),
        skip_if_findings=f.expect(body, "skip_if_findings", bool, where, False),
        skip_if_excerpted=f.expect(body, "skip_if_excerpted", bool, where, False),
        severities=f.expect(body, "severities", str, where, "evidence", allowed={"evidence", "as_given"}),
        continues=f.expect(body, "continues", str, where, None),
        temperature=_temperature(f, body, where),
    )
    if not phase.template.strip():
        raise f.error([*where, "template"], f"phase {name!r} has an empty template")
    if not phase.marker.strip():
        raise f.error([*where, "marker"], "the termination marker must not be empty")
    if phase.produces is Produces.DOCUMENT and not phase.file:
        raise f.error(where, f"phase {name!r} produces a document but names no 'file' to write it to")
    return phase


def _step(f: _File, body: Json, where: list[str | int]) -> Step:
    if not isinstance(body, dict):
        raise f.error(where, "a step must be a table")
    kinds = [k for k in ("phase", "loop", "tool") if k in body]
    if len(kinds) != 1:
        raise f.error(where, "a step needs exactly one of 'phase = \"name\"', 'loop = \"name\"' or "
                      f"'tool = \"name\"' (found {', '.join(kinds) or 'none'})")
    if kinds[0] == "phase":
        return _phase(f, body, where)
    if kinds[0] == "tool":
        f.no_unknown_keys(body, _TOOL_KEYS, where, "a tool step")
        tool = ToolName(f.expect(body, "tool", str, where, allowed={t.value for t in ToolName}))
        if tool is not ToolName.CONTEXT and _TOOL_KEYS & set(body) - {"tool"}:
            raise f.error(where, "only the context tool takes 'window_share' and 'whole'")
        share = f.expect(body, "window_share", (float, int), where, None)
        if share is not None and not 0.1 <= share <= 0.9:
            raise f.error([*where, "window_share"], f"window_share must be between 0.1 and 0.9, got {share}")
        return Tool(tool, window_share=share, whole=f.expect(body, "whole", bool, where, False))
    f.no_unknown_keys(body, _LOOP_KEYS, where, "a loop")
    name = f.expect(body, "loop", str, where)
    until = f.expect(body, "until", str, where, allowed={u.value for u in Until})
    phases = f.expect(body, "phases", list, where)
    if not phases:
        raise f.error(where, f"loop {name!r} has no phases ([[steps.phases]] tables)")
    inner = []
    for i, p in enumerate(phases):
        if not isinstance(p, dict) or "phase" not in p:
            raise f.error([*where, "phases", i], f"loop {name!r}: each entry of 'phases' must be a phase table")
        inner.append(_phase(f, p, [*where, "phases", i], review_fix=until == Until.FINISHED and i > 0))
    allowed = SKIP_CYCLE_RULES.get(Until(until), ())
    rules = f.expect(body, "skip_cycle_when", list, where, list(DEFAULT_SKIP_CYCLE_RULES.get(Until(until), ())))
    unknown = [r for r in rules if r not in allowed]
    if unknown:
        raise f.error([*where, "skip_cycle_when"], f"skip_cycle_when of an until = {until!r} loop takes "
                      f"{', '.join(map(repr, allowed)) or 'no rule'} (got {', '.join(map(repr, unknown))})")
    return Loop(name=name, until=Until(until), phases=tuple(inner),
                max_cycles=_positive(f, body, "max_cycles", where, 3),
                stop_word=f.expect(body, "stop_word", str, where, "Finished"),
                without_tests=f.expect(body, "without_tests", str, where, "skip", allowed={"skip", "run"}),
                skip_cycle_when=tuple(rules))


def _chain(f: _File, roles: dict[str, Role]) -> Chain:
    data = f.data
    f.no_unknown_keys(data, _CHAIN_KEYS, [], "a chain file")
    name = f.expect(data, "name", str, [], f.path.stem)
    local_roles = _roles(f, data)
    all_roles = {**roles, **local_roles}
    steps_raw = f.expect(data, "steps", list, [])
    if not steps_raw:
        raise f.error([], f"chain {name!r} has no steps ([[steps]] tables)")
    steps = [_step(f, body, ["steps", i]) for i, body in enumerate(steps_raw)]
    chain = Chain(name=name, description=f.expect(data, "description", str, [], ""), steps=steps,
                  roles=all_roles, source=str(f.path),
                  start=f.expect(data, "start", str, [], "repository", allowed={"repository", "empty"}),
                  time_limit=_time_limit(f, data))
    chain.time_limit_covers = _time_limit_covers(f, data, chain)
    try:
        chain.scale = parse_teams_config(data)
    except TeamsConfigError as exc:
        raise f.error([exc.key], exc.reason) from None
    _check_references(f, chain)
    _check_scale(f, chain)
    return chain


def _check_scale(f: _File, chain: Chain) -> None:
    """The steps the scaling keys name must exist (pooling points, the network's phase)."""
    names = {step.name for step in chain.steps if not isinstance(step, Tool)}
    for name in chain.scale.pool_after:
        if name not in names:
            raise f.error(["pool_after"], f"pool_after names {name!r}, which is not a phase or loop of chain "
                          f"{chain.name!r} (its steps: {', '.join(sorted(names))})")
    target = chain.scale.network_phase
    code_phases = [p.name for p in chain.phases() if p.produces is Produces.CODE]
    if target is not None and target not in code_phases:
        raise f.error(["network_phase"], f"network_phase = {target!r} is not a phase of chain {chain.name!r} "
                      f"that writes code (those are: {', '.join(code_phases) or 'none'})")
    if chain.scale.topology is not None and not code_phases:
        raise f.error(["topology"], f"topology needs a phase that writes code, and chain {chain.name!r} has none")


def _check_references(f: _File, chain: Chain) -> None:
    phase_names = {p.name for p in chain.phases()}
    seen: dict[str, Phase] = {}
    for i, step in enumerate(chain.steps):
        if isinstance(step, Tool):
            continue
        inner = step.phases if isinstance(step, Loop) else (step,)
        for j, phase in enumerate(inner):
            where: list[str | int] = ["steps", i, "phases", j] if isinstance(step, Loop) else ["steps", i]
            if phase.name in seen:
                raise f.error([*where, "phase"], f"phase name {phase.name!r} is used twice in chain {chain.name!r}")
            earlier = seen.get(phase.continues or "")
            if phase.continues is not None and (earlier is None or earlier.assistant != phase.assistant):
                raise f.error([*where, "continues"], f"phase {phase.name!r} continues {phase.continues!r}, which "
                              + ("is not an earlier phase" if earlier is None else
                                 f"another assistant speaks in ({earlier.assistant!r}, not {phase.assistant!r})"))
            seen[phase.name] = phase
            for key in ("instructor", "assistant"):
                role = getattr(phase, key)
                if role not in chain.roles:
                    raise f.error([*where, key], f"unknown role {role!r} for the {key} of phase {phase.name!r} "
                                  f"(known roles: {', '.join(sorted(chain.roles))})")
            for field in placeholders(phase.template):
                if field not in TEMPLATE_FIELDS and field not in phase_names:
                    raise f.error([*where, "template"], f"template of phase {phase.name!r} uses unknown field "
                                  f"{{{field}}} (known: {', '.join(sorted(TEMPLATE_FIELDS))}, or a phase name: "
                                  f"{', '.join(sorted(phase_names))})")


def _read_roles(directory: Path, roles: dict[str, Role]) -> None:
    path = directory / ROLES_FILE
    if path.is_file():
        f = _File(path)
        f.no_unknown_keys(f.data, {"roles"}, [], "a roles file")
        roles.update(_roles(f, f.data))


def _read_chains(directory: Path, chains: ChainSet) -> None:
    for path in sorted(directory.glob("*.toml")):
        if path.name == ROLES_FILE:
            continue
        chain = _chain(_File(path), chains.roles)
        chains.chains[chain.name] = chain


def load_chains(repo_root: Path | str | None = None) -> ChainSet:
    """Built-in chains and roles, overridden and extended by ``<repo_root>/.troupe/chains/``."""
    chains = ChainSet()
    directories = [BUILTIN_DIR]
    if repo_root is not None and (Path(repo_root) / REPO_DIR).is_dir():
        directories.append(Path(repo_root) / REPO_DIR)
    for directory in directories:  # all roles first, so a repo role can serve a built-in chain
        _read_roles(directory, chains.roles)
    for directory in directories:
        _read_chains(directory, chains)
    return chains


def load_chain_file(path: Path | str, roles: dict[str, Role] | None = None) -> Chain:
    """One chain file, checked against the given roles (default: the built-in ones)."""
    if roles is None:
        roles = {}
        _read_roles(BUILTIN_DIR, roles)
    return _chain(_File(Path(path)), roles)
