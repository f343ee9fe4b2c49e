"""Where a store lives: a SQLite file (a path) or a PostgreSQL database (a ``postgresql://`` URL).

A URL may carry a password; nothing Troupe prints (errors, logs, ``troupe doctor``) shows it::

    is_url("postgresql://ada:s3cret@db.internal/troupe")     # True
    redacted("postgresql://ada:s3cret@db.internal/troupe")   # 'postgresql://ada:***@db.internal/troupe'
    describe("postgresql://ada:s3cret@db.internal/troupe")   # 'PostgreSQL database troupe on db.internal:5432 as ada'
    describe("/home/ada/troupe.db")                          # 'SQLite file /home/ada/troupe.db'
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

SCHEMES = ("postgresql://", "postgres://")

Target = str | os.PathLike[str]


def is_url(target: Target) -> bool:
    return isinstance(target, str) and target.strip().lower().startswith(SCHEMES)


def password(url: str) -> str | None:
    """The password in ``url`` (user info or ``?password=``), to scrub from messages."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    return parts.password or query.get("password") or None


def redacted(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``."""
    if password(url) is None:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        user_info, _, host = netloc.rpartition("@")
        netloc = f"{user_info.split(':', 1)[0]}:***@{host}"
    query = urlencode([(k, "***" if k == "password" else v) for k, v in parse_qsl(parts.query)], safe="/*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def scrub(text: str, url: str) -> str:
    """``text`` (an error message from the driver, say) without ``url``'s password in it."""
    secret = password(url)
    text = text.replace(url, redacted(url))
    for form in {secret, unquote(secret)} if secret else ():  # as written in the URL, and decoded
        text = text.replace(form, "***")
    return text


def describe(target: Target) -> str:
    """What ``troupe doctor`` says about a store: the file, or the database, host and user (never the password)."""
    if not is_url(target):
        return f"SQLite file {os.fspath(target)}"
    parts = urlsplit(str(target))
    query = dict(parse_qsl(parts.query))
    host = parts.hostname or query.get("host") or "localhost (Unix socket)"
    port = parts.port or query.get("port") or 5432
    where = host if host.startswith("/") else f"{host}:{port}"
    database = parts.path.lstrip("/") or query.get("dbname") or "(the user's default)"
    user = parts.username or query.get("user")
    return f"PostgreSQL database {database} on {where}" + (f" as {user}" if user else "")
