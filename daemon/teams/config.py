"""How a chain scales: several teams (Croto), a network of agents (MacNet), an orchestrator (puppeteer).

In a chain file (all keys optional; the defaults run the chain once, in its written order)::

    teams = 4                          # teams solving the same task at once
    pool_after = ["coding"]            # steps after which their solutions are pooled (always at the end)
    team_temperatures = [0.2, 0.5, 0.8, 1.0]   # default: spread over 0.2 .. 1.0
    team_models = ["openai/gpt-4o-mini", "ollama/qwen2.5-coder"]  # cycled over the teams
    topology = "small-world"           # a network of agents does the network phase
    agents = 32
    network_phase = "coding"           # default: the chain's first phase that writes code
    orchestrator = "learned"           # "heuristic" or "learned": who picks the next loop to run
    merge = "when-needed"              # Croto: "always" (the default) merges the best solutions;
                                       # "when-needed" keeps a flawless one as it is (tests pass,
                                       # nothing unfinished, no lint) and saves the merge call

On the command line: ``troupe ask --kind change --teams 4 --topology small-world --agents 32
--orchestrator learned --merge when-needed``; those travel as the job's ``options`` and win over
the chain file.

This module imports nothing from the engine, so the loader and the API protocol can use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Literal, TypedDict

TOPOLOGIES = ("chain", "star", "tree", "mesh", "layered", "small-world", "random")
ORCHESTRATORS = ("heuristic", "learned")
MERGE_WHEN = ("always", "when-needed")
ChoiceKey = Literal["topology", "orchestrator", "merge"]
CHOICES: dict[ChoiceKey, tuple[str, ...]] = {"topology": TOPOLOGIES, "orchestrator": ORCHESTRATORS, "merge": MERGE_WHEN}
MAX_TEAMS = 16
MAX_AGENTS = 5000
OptionKey = Literal["teams", "topology", "agents", "orchestrator", "merge"]
OPTION_KEYS: tuple[OptionKey, ...] = ("teams", "topology", "agents", "orchestrator", "merge")  # a job may override


class TeamsConfigError(ValueError):
    """A scaling key has a wrong value; ``key`` names it so the loader can point at its line."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(reason)
        self.key, self.reason = key, reason


class ScaleOptions(TypedDict, total=False):
    """A job's scaling options, checked (:func:`parse_options`): those given."""

    teams: int
    topology: str
    agents: int
    orchestrator: str
    merge: str


class _ConfigFields(ScaleOptions, total=False):
    """The :class:`TeamsConfig` fields a chain file sets, checked (:func:`parse_teams_config`)."""

    pool_after: tuple[str, ...]
    team_temperatures: tuple[float, ...]
    team_models: tuple[str, ...]
    network_phase: str


@dataclass(frozen=True)
class TeamsConfig:
    teams: int = 1
    pool_after: tuple[str, ...] = ()
    team_temperatures: tuple[float, ...] = ()
    team_models: tuple[str, ...] = ()
    topology: str | None = None
    agents: int | None = None
    network_phase: str | None = None
    orchestrator: str | None = None
    merge: str = "always"

    @property
    def plain(self) -> bool:
        """True when the chain runs as written: one team, no network, no orchestrator."""
        return self.teams == 1 and self.topology is None and self.orchestrator is None

    def temperature(self, team: int) -> float | None:
        """Team ``team``'s temperature: the configured one, else spread over 0.2 .. 1.0; None for one team."""
        if self.team_temperatures:
            return self.team_temperatures[team % len(self.team_temperatures)]
        if self.teams == 1:
            return None
        return round(0.2 + 0.8 * team / (self.teams - 1), 3)

    def model(self, team: int) -> str | None:
        return self.team_models[team % len(self.team_models)] if self.team_models else None

    def network_size(self) -> int:
        return self.agents or 8

    def with_options(self, options: Mapping[str, object]) -> TeamsConfig:
        """This configuration with a job's options (``teams``, ``topology``, ``agents``,
        ``orchestrator``, ``merge``) on top; a value of None leaves the chain's setting."""
        return replace(self, **parse_options(options))  # parse_options leaves out the None values


KEYS = tuple(f.name for f in fields(TeamsConfig))


def _int(key: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TeamsConfigError(key, f"{key} must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise TeamsConfigError(key, f"{key} must be between {low} and {high}, got {value}")
    return value


def _choice(key: str, value: object, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise TeamsConfigError(key, f"{key} = {value!r} is not one of: {', '.join(allowed)}")
    return str(value)


def _strings(key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise TeamsConfigError(key, f"{key} must be a list of non-empty strings, got {value!r}")
    return tuple(value)


def _temperatures(key: str, value: object) -> tuple[float, ...]:
    if not isinstance(value, list) or not value:
        raise TeamsConfigError(key, f"{key} must be a non-empty list of numbers, got {value!r}")
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int | float) or not 0 <= item <= 2:
            raise TeamsConfigError(key, f"{key}: every temperature must be a number from 0 to 2, got {item!r}")
        out.append(float(item))
    return tuple(out)


def parse_teams_config(data: Mapping[str, object]) -> TeamsConfig:
    """The scaling keys of a chain file's top-level table (other keys are ignored here)."""
    values: _ConfigFields = {}
    if "teams" in data:
        values["teams"] = _int("teams", data["teams"], 1, MAX_TEAMS)
    lists: tuple[Literal["pool_after", "team_models"], ...] = ("pool_after", "team_models")
    for name in lists:
        if name in data:
            values[name] = _strings(name, data[name])
    if "team_temperatures" in data:
        values["team_temperatures"] = _temperatures("team_temperatures", data["team_temperatures"])
    for key, allowed in CHOICES.items():
        if key in data:
            values[key] = _choice(key, data[key], allowed)
    if "agents" in data:
        values["agents"] = _int("agents", data["agents"], 1, MAX_AGENTS)
    if "network_phase" in data:
        values["network_phase"] = _strings("network_phase", [data["network_phase"]])[0]
    if "agents" in values and "topology" not in values:
        raise TeamsConfigError("agents", "agents needs a topology (for example topology = \"small-world\")")
    return TeamsConfig(**values)


def parse_options(options: Mapping[str, object]) -> ScaleOptions:
    """A job's scaling options, checked (None values mean "not given"); raises TeamsConfigError."""
    out: ScaleOptions = {}
    for key in OPTION_KEYS:
        value = options.get(key)
        if value is None:
            continue
        if key == "teams" or key == "agents":
            out[key] = _int(key, value, 1, MAX_TEAMS if key == "teams" else MAX_AGENTS)
        else:
            out[key] = _choice(key, value, CHOICES[key])
    return out

