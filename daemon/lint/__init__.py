"""The static lane: lint on the editor's text, answered in milliseconds, beside the job queue.

``ruff`` runs as its own binary on the text it is given (``--stdin-filename``, so the project's
ruff configuration applies as it would on disk), never waiting for a job slot or a model. The
same configuration rule (the project's, else ruff's conservative defaults) serves the review
job's static check (:mod:`daemon.lint.check`), and :func:`summary` is what a review
prompt gets to know about lint.
"""

import hashlib
import re

LINT_RULE = re.compile(r"[A-Z]{1,4}[0-9]{1,4}|invalid-syntax")


def text_hash(text: str) -> str:
    """The content hash of a text as it is on disk (UTF-8): the same as the watcher's of the file."""
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def is_lint_rule(rule: str | None) -> bool:
    """A ruff rule code (``F401``, ``UP007``, ``invalid-syntax``): a finding the static lane also computes."""
    return bool(rule) and LINT_RULE.fullmatch(rule or "") is not None
