"""Review of what changed since a base, for CI and pre-commit (``troupe review --diff BASE`` / ``--staged``).

:mod:`daemon.review.gitdiff` decides what is under review: the files and the lines a ``git diff``
adds or changes, and what is skipped and why (deleted, binary, a symlink…).
:mod:`daemon.review.scoped` turns the static lane's diagnostics (ruff, in-process: no daemon, no
model) and a model review job's findings into :class:`~daemon.review.scoped.DiffFinding` records
kept only where they touch a changed line, each with a fingerprint that survives line moves.
The CLI renders them (text, JSON, SARIF 2.1.0: :mod:`daemon.cli.sarif`).
"""
