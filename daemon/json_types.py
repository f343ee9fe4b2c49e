"""The names the daemon gives JSON that has no record of its own.

Most data crossing the daemon has a type (:mod:`daemon.payloads`, :mod:`daemon.messages`,
:mod:`daemon.job_options`). What is left is JSON of two kinds, named here so that no module
spells a bare ``Any``:

- :data:`Json` and :data:`JsonObject`: JSON *read from outside* before anything checked it (a
  stored job's request, result or checkpoint, a model's reply, a TOML or JSON file, ruff's
  output, a protocol type's free-form field as its receiver gets it). ``Any`` on purpose: the code
  that reads it narrows it (``isinstance``, ``msgspec.convert``, ``from_json``, ``.get`` with a
  default) where it reads it, and that is where a wrong shape is refused. A few free-form records
  the daemon writes and reads back itself are JsonObject too, each named and commented where it is
  declared (``agents.job.Checkpoint``, ``teams.pool.Note``, ``teams.policy.PolicyParams``,
  ``eval.suite.ItemResult.detail``); the alias is ``Any`` itself, so msgspec and the TypeScript
  generator see a protocol field typed with it exactly as before.
- :data:`JsonValue` and :data:`JsonDict`: JSON the daemon *writes* (reports, SARIF, checkpoints,
  summaries). A real type: mypy checks that only JSON goes in. Read back, such JSON is outside
  JSON again (a :data:`JsonObject`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

Json: TypeAlias = Any
"""JSON from outside, not yet checked: narrowed where it is read (the one ``Any`` of the daemon's JSON)."""

JsonObject: TypeAlias = dict[str, Json]
"""A JSON object from outside (a stored request, result or checkpoint, a parsed file), not yet checked."""

JsonValue: TypeAlias = "str | int | float | bool | Sequence[JsonValue] | Mapping[str, JsonValue] | None"
"""JSON the daemon writes; ``Sequence`` and ``Mapping`` so that a ``list[dict[str, str]]`` is one."""

JsonDict: TypeAlias = dict[str, JsonValue]
"""A JSON object the daemon writes."""
