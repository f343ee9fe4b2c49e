"""The core refuses with domain errors (daemon.errors); only the API edge turns them into HTTP."""

from pathlib import Path

import daemon
from daemon.api.server import DOMAIN_STATUS, http_status
from daemon.errors import DomainError, Unavailable

CORE = ("jobs", "watch", "service", "agents", "teams", "experience", "workspace", "llm")


def test_every_kind_of_refusal_has_its_http_status_and_code() -> None:
    assert set(DomainError.__subclasses__()) == set(DOMAIN_STATUS)
    answers = {kind.__name__: (http_status(kind("why")), kind("why").code) for kind in DOMAIN_STATUS}
    assert answers == {"Invalid": (400, "bad_request"), "NotFound": (404, "not_found"),
                       "Conflict": (409, "conflict"), "TooLarge": (413, "too_large"),
                       "Unavailable": (503, "unavailable")}
    assert Unavailable("the daemon is stopping", code="stopping").code == "stopping"


def test_the_core_speaks_no_http() -> None:
    root = Path(daemon.__file__).parent
    offenders = [str(path.relative_to(root)) for folder in CORE for path in (root / folder).rglob("*.py")
                 if "ProtocolError" in path.read_text(encoding="utf-8")]
    assert offenders == [], "raise a daemon.errors kind instead; the API edge maps it to HTTP"

