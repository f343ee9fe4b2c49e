"""Who may open the run viewer over loopback TCP: the bearer token, a one-time link, or its cookie.

The daemon's long-lived token never goes into a URL. ``troupe jobs --open`` asks the daemon
(over its 0600 Unix socket) for a one-time code; the first request that brings it as
``?token=`` at the viewer's root gets a session cookie (HttpOnly, SameSite=Strict, no Path: the
browser scopes it to the viewer's root as it sees it, ``/viewer`` or a proxy's
``/proxy/<port>/viewer``) and a relative redirect to the page without the code, so the code is
spent and leaves the address bar. The cookie
opens only the viewer's read-only routes, never ``/v1``: a page on another localhost port (the
same "site" to a browser) cannot use it to submit jobs or apply changes.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable

COOKIE = "troupe_viewer"
LINK_TTL_S = 600.0  # long enough to click a link `troupe ask` printed a while ago
_MAX_CODES = 256  # unspent codes kept; the oldest go first


class ViewerAuth:
    """The viewer's credentials, derived from the TCP token (empty: no TCP listener, nothing passes)."""

    def __init__(self, token: str, *, link_ttl: float = LINK_TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._token = token
        self._ttl = link_ttl
        self._clock = clock
        self._codes: dict[str, float] = {}  # code -> expiry (clock time)
        # Derived, not stored: stable across daemon restarts (a live page reconnects), void when the token changes.
        self.session = hmac.new(token.encode(), b"troupe viewer session v1", hashlib.sha256).hexdigest()

    @property
    def enabled(self) -> bool:
        return bool(self._token)

    def new_code(self) -> str:
        """A one-time code for a link; it expires after ``link_ttl`` seconds or at first use."""
        if not self.enabled:
            raise RuntimeError("the viewer has no token: the daemon's TCP listener is off")
        self._prune()
        while len(self._codes) >= _MAX_CODES:
            self._codes.pop(next(iter(self._codes)))
        code = secrets.token_hex(24)  # hex: no '-', so no secret-shaped run (sk-…) a redactor would mask
        self._codes[code] = self._clock() + self._ttl
        return code

    def redeem(self, code: str) -> bool:
        """True once for a valid unexpired code; it is spent either way."""
        self._prune()
        expiry = None
        for known in list(self._codes):
            if hmac.compare_digest(known.encode(), code.encode()):
                expiry = self._codes.pop(known)
        return expiry is not None and self.enabled

    def bearer_ok(self, header: str) -> bool:
        return self.enabled and hmac.compare_digest(header.encode(), f"Bearer {self._token}".encode())

    def cookie_ok(self, value: str | None) -> bool:
        return self.enabled and value is not None and hmac.compare_digest(value.encode(), self.session.encode())

    def _prune(self) -> None:
        now = self._clock()
        for code, expiry in list(self._codes.items()):
            if expiry <= now:
                del self._codes[code]
