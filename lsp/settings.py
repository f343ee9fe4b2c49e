"""The editor's settings, as ``initializationOptions`` and ``workspace/didChangeConfiguration``
bring them (both in the shape of the VS Code extension's ``troupe`` section)::

    {"questions": "both" | "notification",   # also ask with window/showMessageRequest (default both)
     "changes":   "both" | "notification",   # also offer Apply/Discard with showMessageRequest
     "model": "openai/gpt-4o-mini" | "" | null,   # the team's model for these workspaces
     "reviewOnSave": true, "testOnSave": false,   # what a save starts (the daemon's watcher)
     "minimumSeverity": "critical" | "major" | "minor" | "info"}   # the least severe diagnostic shown

``model``, ``reviewOnSave`` and ``testOnSave`` are sent to the daemon for every workspace folder
(:class:`daemon.api.protocol.WorkspaceSettings`): they win over the repository and user files,
``TROUPE_MODEL`` still wins over ``model``. A value of the wrong type is ignored with a log line.
"""

from __future__ import annotations

from typing import Any

from daemon.api.protocol import ProtocolError, WorkspaceSettings

CHOICES = {"questions": ("both", "notification"), "changes": ("both", "notification"),
           "minimumSeverity": ("info", "minor", "major", "critical")}  # the first is the default
SEVERITY_RANK = {name: rank for rank, name in enumerate(CHOICES["minimumSeverity"])}
OVERRIDES = {"model": "model", "reviewOnSave": "review_on_save", "testOnSave": "test_on_save"}


def section(params_settings: object) -> dict[str, Any]:
    """The ``troupe`` section of ``didChangeConfiguration``'s settings (or the settings themselves)."""
    if not isinstance(params_settings, dict):
        return {}
    troupe = params_settings.get("troupe")
    return troupe if isinstance(troupe, dict) else params_settings


def read_choices(options: dict[str, Any], current: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    """``questions``, ``changes`` and ``minimumSeverity``; absent ones keep their current value."""
    chosen = {name: current.get(name, allowed[0]) for name, allowed in CHOICES.items()}
    for name, allowed in CHOICES.items():
        if name not in options:
            continue
        if options[name] in allowed:
            chosen[name] = options[name]
        else:
            problems.append(f"{name} must be one of {', '.join(allowed)}, got {options[name]!r}; ignored")
    return chosen


def read_overrides(options: dict[str, Any], problems: list[str]) -> WorkspaceSettings | None:
    """The workspace overrides the editor sent, or None when it sent none of them."""
    if not any(key in options for key in OVERRIDES):
        return None
    values: dict[str, Any] = {}
    for key, field in OVERRIDES.items():
        value = options.get(key)
        if value is None:
            continue
        if (key == "model" and not isinstance(value, str)) or (key != "model" and not isinstance(value, bool)):
            kind = "a string" if key == "model" else "true or false"
            problems.append(f"{key} must be {kind}, got {value!r}; ignored")
            continue
        values[field] = value
    try:
        return WorkspaceSettings.from_json(values)
    except ProtocolError as exc:
        problems.append(f"{exc.message}; ignored")
        values.pop("model", None)
        return WorkspaceSettings.from_json(values)


def shown(severity: str, minimum: str) -> bool:
    """Whether a finding of ``severity`` is shown when the editor wants ``minimum`` and above."""
    return SEVERITY_RANK.get(severity, len(SEVERITY_RANK)) >= SEVERITY_RANK.get(minimum, 0)
