"""Keep secrets out of logs, errors, the store and chat.

Every secret Troupe knows (API keys, Slack tokens) is registered here; :func:`redact` replaces
them, and anything that looks like a provider key, in any text before it is logged or stored.
:class:`RedactingFilter` applies the same to every log record.
"""

from __future__ import annotations

import logging
import os
import re
import threading

_lock = threading.Lock()
_secrets: set[str] = set()

# Shapes of well-known credentials, redacted even when they were never registered.
_PATTERNS = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|xox[abpr]-[A-Za-z0-9\-]{8,}|xapp-[A-Za-z0-9\-]{8,}|"
    r"(?i:bearer)\s+[A-Za-z0-9._\-]{12,}|AKIA[0-9A-Z]{16})"
)
_SECRET_ENV_HINTS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def register_secret(value: str | None) -> None:
    """Remember a secret so that it is redacted wherever it appears later."""
    if value and len(value) >= 4:
        with _lock:
            _secrets.add(value)


def register_environment_secrets(environ: dict[str, str] | None = None) -> None:
    """Register the values of every environment variable whose name says it is a secret."""
    for name, value in (environ if environ is not None else os.environ).items():
        if any(hint in name.upper() for hint in _SECRET_ENV_HINTS):
            register_secret(value)


def redact(text: str) -> str:
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, "***")
    return _PATTERNS.sub("***", text)


class RedactingFilter(logging.Filter):
    """A logging filter that formats the message, redacts it, and drops the arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string must not lose the record
            message = str(record.msg)
        record.msg, record.args = redact(message), None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Attach the filter to every handler of ``logger`` (root by default), now and idempotently."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
