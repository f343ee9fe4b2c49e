"""How experience is used, from the ``[experience]`` table of the user's and the repository's
configuration files (see :mod:`daemon.config` for where they live); ``TROUPE_EXPERIENCE=off``
turns it off and ``TROUPE_EXPERIENCE_MODE`` picks the refinement mode::

    [experience]
    enabled = true
    mode = "cumulative"      # or "successive": use only the latest batches' experience (IER)
    batch_size = 10          # jobs per refinement batch; elimination runs after each batch
    top_k = 2                # few-shot examples per phase
    prompt_tokens = 1200     # what experience may add to one prompt
    workflow = true          # Co-Saving: skip or shorten steps that were redundant on similar tasks
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from daemon.config import ConfigError, repo_config
from daemon.paths import user_config_path

MODES = ("cumulative", "successive")
JOB_MODES = ("on", "off", "read", "learn")
"""What a job's ``options.experience`` may say: read and add (mined after the job), neither, read only,
or read and add before the job ends (so the next job finds it: ``troupe eval --experience-split``)."""


@dataclass
class ExperienceSettings:
    enabled: bool = True
    mode: str = "cumulative"
    batch_size: int = 10
    top_k: int = 2
    prompt_tokens: int = 1200
    min_relevance: float = 0.12     # TF-IDF cosine below which an experience is not relevant
    shortcut_gain: float = 0.25     # value gain (relative to the final state) a shortcut needs
    instruction_calls: int = 3      # model calls per job to write shortcut instructions
    workflow: bool = True
    task_similarity: float = 0.3    # how alike a past task must be for its workflow to count
    min_support: int = 2            # similar successful runs needed before a step is skipped
    urgency: float = 4.0            # how much more cost weighs when the budget is spent
    coverage: float = 0.95          # elimination keeps the most used covering this share of retrievals
    keep_gain: float = 0.95         # ... and new experiences with at least this gain

    def check(self, where: str) -> ExperienceSettings:
        if self.mode not in MODES:
            raise ConfigError(f"{where}: experience.mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.batch_size < 1 or self.top_k < 0 or self.prompt_tokens < 0 or self.instruction_calls < 0:
            raise ConfigError(f"{where}: experience.batch_size must be >= 1 and top_k, prompt_tokens and "
                              "instruction_calls >= 0")
        return self


def _apply(settings: ExperienceSettings, table: object, where: str) -> None:  # TOML, checked here
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [experience] must be a table")
    known = {f.name for f in fields(ExperienceSettings)}
    for key, value in table.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown setting experience.{key}; known: {', '.join(sorted(known))}")
        default = getattr(ExperienceSettings(), key)
        allowed = (int, float) if isinstance(default, float) else type(default)
        if isinstance(default, bool) != isinstance(value, bool) or not isinstance(value, allowed):
            raise ConfigError(f"{where}: experience.{key} must be {type(default).__name__}, got {value!r}")
        setattr(settings, key, type(default)(value))


def load_experience_settings(root: Path | None = None, *, env: bool = True) -> ExperienceSettings:
    """Defaults < user file < repository file < environment."""
    settings = ExperienceSettings()
    user = user_config_path()
    if user.is_file():
        try:
            data = tomllib.loads(user.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{user}: {exc}") from exc
        if "experience" in data:
            _apply(settings, data["experience"], str(user))
    if root is not None:
        data, source = repo_config(Path(root))
        if source and "experience" in data:
            _apply(settings, data["experience"], source)
    if env:
        if os.environ.get("TROUPE_EXPERIENCE", "").lower() in ("0", "off", "false", "no"):
            settings.enabled = False
        settings.mode = os.environ.get("TROUPE_EXPERIENCE_MODE") or settings.mode
    return settings.check("experience settings")
