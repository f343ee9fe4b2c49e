"""Reviews per file, newest wins.

A save-triggered review supersedes the save-triggered reviews of the same files that are still
queued or running: they are cancelled (their model calls with them), and the files they had to
themselves join the new review, so nothing goes unreviewed. A review notes the text of each file
as it starts (:func:`read_content`) and its findings are stored only when the file still holds
that text when it ends; the store refuses findings of older text than the file's newest
(``storage.errors.StaleReview``).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from daemon.job_options import stored_options
from daemon.messages import SubmitJob

if TYPE_CHECKING:
    from daemon.json_types import JsonObject
    from storage import Job

MAX_MERGED_FILES = 20  # a superseding review takes over at most this many files in all

Content = dict[str, tuple[str, float]]
"""file -> (sha256 of its text, when it was read)."""


def is_save_review(kind: str, request: JsonObject) -> bool:
    return kind == "review" and stored_options(request).trigger == "save"


def superseding(request: SubmitJob, active: list[Job]) -> tuple[SubmitJob, list[Job]]:
    """The request, taking over the files of the active save reviews it supersedes, and those jobs."""
    if not is_save_review(request.kind, request.to_json()):
        return request, []
    mine = set(request.files)
    older = [job for job in active if is_save_review(job.kind.value, job.request)
             and mine & set(job.request.get("files") or [])]
    files = list(request.files)
    for job in older:
        files += [f for f in job.request.get("files") or [] if f not in files]
    if len(files) > MAX_MERGED_FILES:
        return request, []  # too much to take over: the store still keeps only the newest findings
    if files == request.files:
        return request, older
    options = replace(request.options, diff=None)  # the hunks covered only its own files
    return replace(request, files=files, options=options), older


def read_content(root: Path, files: list[str]) -> Content:
    """The hash of each file's text now (files that cannot be read are left out)."""
    content: Content = {}
    for rel in files:
        try:
            data = (root / rel).read_bytes()
        except OSError:
            continue
        content[rel] = (hashlib.sha256(data).hexdigest(), time.time())
    return content


def changed_since(root: Path, content: Content) -> list[str]:
    """The files whose text is no longer the one noted in ``content``."""
    now = read_content(root, list(content))
    return [rel for rel, (digest, _) in content.items() if now.get(rel, ("", 0.0))[0] != digest]
