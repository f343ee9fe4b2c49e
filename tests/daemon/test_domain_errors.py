"""The core refuses with domain errors (daemon.errors); only the API edge turns them into HTTP."""

import ast
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



# The HTTP edge and what sits above it: they may import daemon.api; nothing else under daemon/ may.
EDGE = ("api/", "cli/", "viewer/",  # the edge and the adapters the daemon ships
        "client.py", "doctor.py",  # the API's own client and `troupe doctor`, which asks nodes for /health
        "service/daemon.py", "service/team.py")  # the processes that start a server


def _imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module, *(f"daemon.{a.name}" for a in node.names if node.module == "daemon")}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return names


def test_nothing_below_the_api_edge_imports_it() -> None:
    root = Path(daemon.__file__).parent
    offenders = sorted(f"{name}: {module}" for path in root.rglob("*.py")
                       if not (name := path.relative_to(root).as_posix()).startswith(EDGE)
                       and "eval/data/" not in name
                       for module in _imports_of(path) if module == "daemon.api" or module.startswith("daemon.api."))
    assert offenders == [], "import the values from daemon.messages / daemon.payloads, not the HTTP edge"


def _daemon_imports(folder: str) -> dict[str, set[str]]:
    root = Path(daemon.__file__).parent
    return {path.relative_to(root).as_posix(): _imports_of(path) for path in (root / folder).rglob("*.py")}


def test_the_domain_and_the_api_never_reach_into_the_process_layer() -> None:
    """``daemon/service/`` starts processes and wires the parts; what they do (applying a change,
    queueing a job) lives below it, so the routes and the domain can be tested without a daemon."""
    offenders = sorted(f"{name}: {module}" for folder in (*(f for f in CORE if f != "service"), "api", "lint", "review")
                       for name, modules in _daemon_imports(folder).items()
                       for module in modules if module == "daemon.service" or module.startswith("daemon.service."))
    assert offenders == []


def test_the_workspace_never_imports_the_lint_package() -> None:
    """daemon.lint builds on the workspace (its files, its confinement), never the other way round."""
    offenders = sorted(f"{name}: {module}" for name, modules in _daemon_imports("workspace").items()
                       for module in modules if module == "daemon.lint" or module.startswith("daemon.lint."))
    assert offenders == []
