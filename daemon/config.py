"""Configuration: defaults < user file < repository file < editor overrides < environment.

The repository file is ``.troupe.toml`` at the repository root, or ``[tool.troupe]`` in
``pyproject.toml``; the user file is ``~/.config/troupe/config.toml``. Environment variables
(``TROUPE_MODEL``, ``TROUPE_API_BASE``, ``TROUPE_API_KEY``, ...) win over both.
:func:`load_settings` reads only files and the environment; the daemon then lays a workspace's
editor overrides (``troupe.model``, ``troupe.reviewOnSave``, ``troupe.testOnSave``, kept in the
store) over them with :func:`with_overrides`, where ``TROUPE_MODEL`` still wins.

Example ``.troupe.toml``::

    [model]
    default = "openai/gpt-4o-mini"
    timeout = 60
    [model.roles]
    reviewer = "anthropic/claude-sonnet-4-5"
    [budget]
    tokens = 200000
    dollars = 0.50
    [review]
    on_save = true
    [test]
    command = "pytest -q"

The store is daemon-wide, so it is set only in the user file (or ``TROUPE_STORE_URL``, which
wins): :func:`store_target`::

    [store]
    url = "postgresql://troupe:PASSWORD@db.internal:5432/troupe"   # default: troupe.db in TROUPE_HOME
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from daemon.json_types import Json, JsonObject
from daemon.paths import database_path, user_config_path


class ConfigError(ValueError):
    """A configuration file or variable is wrong; the message names the file and the key."""


class Secret(str):
    """A string that never shows itself in ``repr``/``str`` formatting of containers or logs."""

    def __repr__(self) -> str:
        return "Secret('***')"

    def reveal(self) -> str:
        return str.__str__(self)


@dataclass
class ModelSettings:
    default: str | None = None
    api_base: str | None = None
    api_key: Secret | None = field(default=None, repr=False)
    roles: dict[str, str] = field(default_factory=dict)
    timeout: float = 120.0
    max_retries: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    concurrency: int = 4
    context_window: int = 16384
    local: str | None = None  # the local model when none is configured (daemon/llm/local_models.py)
    threads: int | None = None  # the local model's threads (None: chosen from the cores and the load)
    batch_threads: int | None = None  # its prompt-processing threads (None: from its speed file, else ``threads``)
    # Speculative decoding: a bigger local model drafted by the smaller one, when installed. None: no (it
    # was slower with one and with two threads on a quiet two-core machine: bench/RESULTS.md).
    draft: bool | None = None
    # Sampling temperature of every call that names none (Croto's teams name theirs). 0: the same code
    # gets the same review and the same fix, and an evaluation's rows can be compared.
    temperature: float | None = 0.0
    # The model's speed, in tokens/s written and prompt tokens/s processed: the local server sets what it
    # measured at its start; a provider's model may be given them. A chain's time limit covers its phases'
    # caps at this speed (daemon.agents.timing); None: the chain's fixed time_limit.
    tokens_per_s: float | None = None
    prompt_per_s: float | None = None

    def for_role(self, role: str | None) -> str | None:
        if role and role in self.roles:
            return self.roles[role]
        return self.default


@dataclass
class BudgetSettings:
    tokens: int | None = None
    dollars: float | None = None


@dataclass
class Settings:
    model: ModelSettings = field(default_factory=ModelSettings)
    budget: BudgetSettings = field(default_factory=BudgetSettings)
    review_on_save: bool = True
    test_on_save: bool = False
    test_command: str | None = None
    per_test_timeout: float = 30.0  # [test] per_test_timeout: seconds before one test is stopped as hanging
    sources: list[str] = field(default_factory=list)


def _read_toml(path: Path) -> JsonObject:  # TOML, checked key by key by _apply
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc


def repo_config(root: Path) -> tuple[JsonObject, str | None]:
    """The repository's Troupe table and the file it came from (``None`` when there is none)."""
    dotfile = root / ".troupe.toml"
    if dotfile.is_file():
        return _read_toml(dotfile), str(dotfile)
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        table = _read_toml(pyproject).get("tool", {}).get("troupe")
        if isinstance(table, dict):
            return table, f"{pyproject} [tool.troupe]"
    return {}, None


def _expect(value: Json, kind: type | tuple[type, ...], where: str) -> Json:  # value, checked to be a kind
    if not isinstance(value, kind) or (kind in (int, float) and isinstance(value, bool)):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise ConfigError(f"{where}: expected {names}, got {value!r}")
    return value


def _apply(settings: Settings, data: JsonObject, source: str) -> None:
    model = data.get("model", {})
    if isinstance(model, str):
        model = {"default": model}
    _expect(model, dict, f"{source}: [model]")
    m = settings.model
    for key, kind in (("default", str), ("api_base", str), ("timeout", (int, float)),
                      ("max_retries", int), ("backoff_base", (int, float)), ("backoff_max", (int, float)),
                      ("concurrency", int), ("context_window", int), ("local", str), ("threads", int),
                      ("batch_threads", int), ("draft", bool), ("temperature", (int, float)),
                      ("tokens_per_s", (int, float)), ("prompt_per_s", (int, float))):
        if key in model:
            setattr(m, key, _expect(model[key], kind, f"{source}: model.{key}"))
    for key in ("tokens_per_s", "prompt_per_s"):
        if (value := getattr(m, key)) is not None and value <= 0:
            raise ConfigError(f"{source}: model.{key} must be above 0, got {value!r}")
    if m.temperature is not None and not 0 <= m.temperature <= 2:
        raise ConfigError(f"{source}: model.temperature must be from 0 to 2, got {m.temperature!r}")
    if "api_key" in model:
        m.api_key = Secret(_expect(model["api_key"], str, f"{source}: model.api_key"))
    roles = _expect(model.get("roles", {}), dict, f"{source}: [model.roles]")
    for role, name in roles.items():
        m.roles[role] = _expect(name, str, f"{source}: model.roles.{role}")

    budget = _expect(data.get("budget", {}), dict, f"{source}: [budget]")
    if "tokens" in budget:
        settings.budget.tokens = _expect(budget["tokens"], int, f"{source}: budget.tokens")
    if "dollars" in budget:
        settings.budget.dollars = float(_expect(budget["dollars"], (int, float), f"{source}: budget.dollars"))

    review = _expect(data.get("review", {}), dict, f"{source}: [review]")
    if "on_save" in review:
        settings.review_on_save = _expect(review["on_save"], bool, f"{source}: review.on_save")
    test = _expect(data.get("test", {}), dict, f"{source}: [test]")
    if "on_save" in test:
        settings.test_on_save = _expect(test["on_save"], bool, f"{source}: test.on_save")
    if "command" in test:
        settings.test_command = _expect(test["command"], str, f"{source}: test.command")
    if "per_test_timeout" in test:
        settings.per_test_timeout = float(_expect(test["per_test_timeout"], (int, float),
                                                  f"{source}: test.per_test_timeout"))
    settings.sources.append(source)


Number = TypeVar("Number", int, float)


def _env_number(name: str, kind: type[Number]) -> Number | None:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        return kind(raw)
    except ValueError as exc:
        raise ConfigError(f"environment variable {name}={raw!r} is not a valid {kind.__name__}") from exc


def _env_switch(name: str, default: bool | None) -> bool | None:
    raw = os.environ.get(name, "").strip().lower()
    if raw == "":
        return default
    if raw in ("1", "on", "true", "yes"):
        return True
    if raw in ("0", "off", "false", "no"):
        return False
    raise ConfigError(f"environment variable {name}={raw!r} is not on or off (1/on/true/yes, 0/off/false/no)")


def load_settings(root: Path | None = None, *, env: bool = True) -> Settings:
    """Settings for a repository root (or only user-wide ones when ``root`` is None)."""
    settings = Settings()
    user = user_config_path()
    if user.is_file():
        _apply(settings, _read_toml(user), str(user))
    if root is not None:
        data, source = repo_config(Path(root))
        if source:
            _apply(settings, data, source)
    if env:
        m = settings.model
        m.default = os.environ.get("TROUPE_MODEL") or m.default
        m.api_base = os.environ.get("TROUPE_API_BASE") or m.api_base
        if os.environ.get("TROUPE_API_KEY"):
            m.api_key = Secret(os.environ["TROUPE_API_KEY"])
        for name, attr, kind in (("TROUPE_LLM_TIMEOUT", "timeout", float),
                                 ("TROUPE_LLM_RETRIES", "max_retries", int),
                                 ("TROUPE_LLM_CONCURRENCY", "concurrency", int),
                                 ("TROUPE_LOCAL_THREADS", "threads", int),
                                 ("TROUPE_LOCAL_BATCH_THREADS", "batch_threads", int),
                                 ("TROUPE_TEMPERATURE", "temperature", float)):
            value = _env_number(name, kind)
            if value is not None:
                setattr(m, attr, value)
        m.draft = _env_switch("TROUPE_LOCAL_DRAFT", m.draft)
        if m.temperature is not None and not 0 <= m.temperature <= 2:
            raise ConfigError(f"environment variable TROUPE_TEMPERATURE must be from 0 to 2, got {m.temperature!r}")
        tokens = _env_number("TROUPE_BUDGET_TOKENS", int)
        dollars = _env_number("TROUPE_BUDGET_DOLLARS", float)
        if tokens is not None:
            settings.budget.tokens = tokens
        if dollars is not None:
            settings.budget.dollars = dollars
    return settings


def store_target() -> Secret | Path:
    """Where the daemon's store lives: ``TROUPE_STORE_URL``, else ``url`` in the user file's ``[store]``,
    else ``troupe.db`` in TROUPE_HOME. A ``postgresql://`` URL (a Secret: it may hold a password) is a
    PostgreSQL database; any other value is the path of a SQLite file."""
    from storage.location import is_url

    raw = os.environ.get("TROUPE_STORE_URL", "").strip()
    user = user_config_path()
    if not raw and user.is_file():
        table = _expect(_read_toml(user).get("store", {}), dict, f"{user}: [store]")
        raw = _expect(table.get("url", ""), str, f"{user}: store.url").strip()
    if not raw:
        return database_path()
    return Secret(raw) if is_url(raw) else Path(raw).expanduser()


OVERRIDE_KEYS = ("model", "review_on_save", "test_on_save")


def with_overrides(settings: Settings, overrides: JsonObject | None) -> Settings:  # an editor's, checked here
    """``settings`` (from :func:`load_settings`) with a workspace's editor overrides on top.

    ``overrides`` is what the daemon keeps for the workspace: ``{"model": str, "review_on_save":
    bool, "test_on_save": bool}``, each optional. They win over the user and repository files; the
    environment still wins (``TROUPE_MODEL`` over ``model``, which, like it, sets the default model:
    per-role models from the files still apply to their roles). Values of the wrong type are ignored.
    """
    overrides = overrides if isinstance(overrides, dict) else {}
    model = overrides.get("model")
    if isinstance(model, str) and model.strip() and not os.environ.get("TROUPE_MODEL"):
        settings.model.default = model.strip()
    for key in ("review_on_save", "test_on_save"):
        if isinstance(overrides.get(key), bool):
            setattr(settings, key, overrides[key])
    if any(overrides.get(key) is not None for key in OVERRIDE_KEYS):
        settings.sources.append("editor overrides")
    return settings
