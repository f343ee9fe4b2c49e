"""Secrets never reach a log line."""

from __future__ import annotations

import logging

from daemon.redact import RedactingFilter, redact, register_environment_secrets, register_secret


def test_registered_secret_is_replaced_everywhere() -> None:
    register_secret("hunter2-very-secret")
    assert redact("key=hunter2-very-secret; again hunter2-very-secret") == "key=***; again ***"


def test_known_key_shapes_are_redacted_without_registration() -> None:
    text = "auth with sk-abcdefghijklmnop and xoxb-1234-5678-abcdef and Bearer abcdefghijklmnopqrstu"
    assert redact(text) == "auth with *** and *** and ***"


def test_environment_variables_named_like_secrets_are_registered() -> None:
    register_environment_secrets({"MY_SERVICE_TOKEN": "plain-looking-value-42", "PATH": "/usr/bin"})
    assert redact("token plain-looking-value-42 in /usr/bin") == "token *** in /usr/bin"


def test_log_records_and_tracebacks_are_redacted(caplog) -> None:
    register_secret("planted-secret-xyz")
    logger = logging.getLogger("troupe.test.redact")
    handler = logging.Handler()
    records: list[logging.LogRecord] = []
    handler.emit = records.append  # type: ignore[method-assign]
    handler.addFilter(RedactingFilter())
    logger.addHandler(handler)
    try:
        logger.warning("calling with %s", "planted-secret-xyz")
        try:
            raise RuntimeError("failed with planted-secret-xyz")
        except RuntimeError:
            logger.exception("boom")
    finally:
        logger.removeHandler(handler)
    assert records[0].getMessage() == "calling with ***"
    assert "planted-secret-xyz" not in (records[1].exc_text or "")
    assert "***" in (records[1].exc_text or "")
