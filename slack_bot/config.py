"""The Slack bot's settings: the fixed Slack variables, and a ``[slack]`` table in the user config.

Environment (fixed names, see DESIGN.md): ``SLACK_BOT_TOKEN``, ``SLACK_APP_TOKEN`` (Socket Mode),
``SLACK_SIGNING_SECRET`` (HTTP mode), ``SLACK_API_URL`` (the Web API base URL, for tests).

``~/.config/troupe/config.toml`` (``XDG_CONFIG_HOME`` honoured)::

    [slack]
    channels = { C0123 = "/home/ann/src/shop", C0456 = "/home/ann/src/api" }   # channel -> repository
    allowed_users = ["U01ANN", "U02BOB"]     # empty or missing: everyone in the workspace
    allowed_channels = ["C0123"]             # empty or missing: every channel the bot is in
    admins = ["U01ANN"]                      # may press Apply/Discard and cancel any job
    update_interval = 1.5                    # seconds between two edits of a status message
    snippet_max_chars = 2500                 # longer diffs are uploaded as a file

Environment variables override the file: ``TROUPE_SLACK_CHANNELS`` (``C0123=/path,C0456=/other``),
``TROUPE_SLACK_ALLOWED_USERS``, ``TROUPE_SLACK_ALLOWED_CHANNELS``, ``TROUPE_SLACK_ADMINS`` (comma
separated), ``TROUPE_SLACK_UPDATE_INTERVAL``, ``TROUPE_SLACK_SNIPPET_MAX``.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from daemon.paths import troupe_home, user_config_path
from daemon.redact import register_secret


class SlackConfigError(ValueError):
    """A setting is missing or wrong; the message says which and what to do."""


@dataclass
class SlackConfig:
    bot_token: str = field(default="", repr=False)
    app_token: str = field(default="", repr=False)
    signing_secret: str = field(default="", repr=False)
    api_url: str | None = None
    channels: dict[str, str] = field(default_factory=dict)
    allowed_users: frozenset[str] = frozenset()
    allowed_channels: frozenset[str] = frozenset()
    admins: frozenset[str] = frozenset()
    update_interval: float = 1.5
    snippet_max_chars: int = 2500
    state_path: Path | None = None

    def user_allowed(self, user: str | None) -> bool:
        return bool(user) and (not self.allowed_users or user in self.allowed_users or user in self.admins)

    def channel_allowed(self, channel: str | None) -> bool:
        return bool(channel) and (not self.allowed_channels or channel in self.allowed_channels)

    def may_control(self, user: str | None, requester: str | None) -> bool:
        """May ``user`` apply, discard or cancel the work ``requester`` asked for?"""
        if not user:
            return False
        if user in self.admins or (requester is not None and user == requester):
            return True
        return requester is None and not self.admins and self.user_allowed(user)

    def require(self, *, http: bool) -> None:
        if not self.bot_token:
            raise SlackConfigError("SLACK_BOT_TOKEN is not set: the bot token (xoxb-...) of your Slack app")
        if http and not self.signing_secret:
            raise SlackConfigError("HTTP mode needs SLACK_SIGNING_SECRET (Basic Information > Signing Secret)")
        if not http and not self.app_token:
            raise SlackConfigError("Socket Mode needs SLACK_APP_TOKEN (an xapp- token with connections:write); "
                                   "or run `troupe slack --http --port N` with SLACK_SIGNING_SECRET")

    def register_secrets(self) -> None:
        for secret in (self.bot_token, self.app_token, self.signing_secret):
            register_secret(secret)


def _ids(value: Any, where: str) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return frozenset(v.strip() for v in value if v.strip())
    raise SlackConfigError(f"{where}: expected a list of Slack ids, got {value!r}")


def _channels(value: Any, where: str) -> dict[str, str]:
    if isinstance(value, str):
        pairs = [p.split("=", 1) for p in value.split(",") if p.strip()]
        if any(len(p) != 2 for p in pairs):
            raise SlackConfigError(f"{where}: expected CHANNEL=/path pairs separated by commas, got {value!r}")
        value = {k.strip(): v.strip() for k, v in pairs}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise SlackConfigError(f"{where}: expected a table of channel id = repository path, got {value!r}")
    for channel, root in value.items():
        if not root.startswith("/"):
            raise SlackConfigError(f"{where}: the repository of {channel} must be an absolute path, got {root!r}")
    return dict(value)


def _number(value: Any, kind: type, where: str) -> Any:
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise SlackConfigError(f"{where}: expected a number, got {value!r}") from None
    if number < 0:
        raise SlackConfigError(f"{where}: must not be negative, got {value!r}")
    return number


def load_config(environ: dict[str, str] | None = None, config_file: Path | None = None) -> SlackConfig:
    env = os.environ if environ is None else environ
    path = config_file or user_config_path()
    table: dict[str, Any] = {}
    if path.is_file():
        try:
            table = tomllib.loads(path.read_text()).get("slack", {})
        except (tomllib.TOMLDecodeError, OSError) as exc:
            raise SlackConfigError(f"{path}: cannot read the [slack] table: {exc}") from exc
        if not isinstance(table, dict):
            raise SlackConfigError(f"{path}: [slack] must be a table")
    config = SlackConfig(bot_token=env.get("SLACK_BOT_TOKEN", ""), app_token=env.get("SLACK_APP_TOKEN", ""),
                         signing_secret=env.get("SLACK_SIGNING_SECRET", ""), api_url=env.get("SLACK_API_URL") or None)
    sources = {  # key: (env name, parser)
        "channels": ("TROUPE_SLACK_CHANNELS", _channels),
        "allowed_users": ("TROUPE_SLACK_ALLOWED_USERS", _ids),
        "allowed_channels": ("TROUPE_SLACK_ALLOWED_CHANNELS", _ids),
        "admins": ("TROUPE_SLACK_ADMINS", _ids),
        "update_interval": ("TROUPE_SLACK_UPDATE_INTERVAL", lambda v, w: _number(v, float, w)),
        "snippet_max_chars": ("TROUPE_SLACK_SNIPPET_MAX", lambda v, w: _number(v, int, w)),
    }
    for key, (name, parse) in sources.items():
        if env.get(name):
            setattr(config, key, parse(env[name], f"environment variable {name}"))
        elif key in table:
            setattr(config, key, parse(table[key], f"{path}: slack.{key}"))
    unknown = sorted(set(table) - set(sources))
    if unknown:
        raise SlackConfigError(f"{path}: unknown key(s) in [slack]: {', '.join(unknown)}; "
                               f"known keys are {', '.join(sorted(sources))}")
    config.state_path = Path(env["TROUPE_SLACK_STATE"]) if env.get("TROUPE_SLACK_STATE") else (
        troupe_home() / "slack.db")
    return config
