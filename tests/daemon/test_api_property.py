"""A property of the whole API edge, against one real daemon: random paths, ids and bodies never get
a 5xx, every refusal is the API's JSON error, and nothing accepted reaches outside the workspace."""

from __future__ import annotations

import http.client
import json
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon.workspace.paths import is_inside

SECRET = "outside-the-workspace-7f3a"
LOOSE = "surrogatepass"  # a lone surrogate goes out as the invalid UTF-8 bytes it stands for
RUNS = settings(max_examples=int(os.environ.get("TROUPE_PROPERTY_EXAMPLES", "120")), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("troupe", timeout=20)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(20)
        self.sock.connect(self._path)


def call(sock: Path, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
    conn = UnixConnection(str(sock))
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
        resp = conn.getresponse()
        streaming = resp.status == 200 and resp.getheader("Content-Type", "").startswith("text/event-stream")
        raw = b"" if streaming else resp.read()  # an accepted event stream never ends: its answer is the status
    finally:
        conn.close()
    assert resp.status < 500, f"{method} {path[:200]} -> {resp.status}: {raw[:500]!r}"
    if streaming:
        return resp.status, None
    assert SECRET not in raw.decode("utf-8", "replace"), f"{method} {path[:200]} leaked a file from outside"
    data = json.loads(raw)
    if resp.status >= 400:
        assert set(data) == {"error"} and {"code", "message"} <= set(data["error"]), data
    return resp.status, data


# Paths as people, editors and attackers write them: traversal, absolute, home, Windows, NUL, links.
segment = st.one_of(st.sampled_from(["..", ".", "~", "app.py", "link", "linkdir", "secret.txt", "", "C:",
                                     "\\\\server", "a\x00b", "\ud800", "%2e%2e", "\u202e"]),
                    st.text(min_size=1, max_size=12))
paths = st.lists(segment, min_size=1, max_size=6).flatmap(
    lambda parts: st.sampled_from(["/", "\\"]).map(lambda sep: sep.join(parts)))
ids = st.one_of(st.integers(min_value=-(10 ** 40), max_value=10 ** 40).map(str), st.text(max_size=40),
                st.sampled_from(["1" + "0" * 29, "²", "١٢", "0x10", "1e9", " 1", "-0"]))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children,
                                                                               max_size=4)),
    max_leaves=30)
bodies = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"kind": st.sampled_from(["review", "ask", "test", "change", "nope"])},
                          optional={"prompt": st.text(max_size=50), "files": st.lists(paths, max_size=3),
                                    "options": st.dictionaries(st.text(max_size=10), json_values, max_size=3),
                                    "priority": st.text(max_size=10)}).map(lambda v: json.dumps(v).encode()),
    st.integers(min_value=1, max_value=3000).map(lambda n: b"[" * n + b"]" * n),
    st.binary(max_size=200))
routes = st.sampled_from([("POST", "/v1/findings/{}"), ("DELETE", "/v1/workspaces/{}"), ("GET", "/v1/experience/{}"),
                          ("DELETE", "/v1/experience/{}"), ("POST", "/v1/experience/{}"), ("GET", "/v1/jobs/{}"),
                          ("POST", "/v1/jobs/{}/cancel"), ("POST", "/v1/jobs/{}/answer"), ("GET", "/v1/changes/{}"),
                          ("POST", "/v1/changes/{}/apply"), ("GET", "/v1/jobs/{}/events")])


def test_random_paths_ids_and_bodies_never_get_a_5xx_nor_reach_outside_the_workspace(
        make_daemon: Any, repo: Path, home: Path) -> None:
    daemon = make_daemon().start()
    outside = home / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    (repo / "link").symlink_to(outside / "secret.txt")
    (repo / "linkdir").symlink_to(outside)
    sock = daemon.socket

    @RUNS
    @given(st.lists(paths, min_size=1, max_size=3), st.sampled_from(["review", "test", "ask"]))
    def submit_files(files: list[str], kind: str) -> None:
        body = {"kind": kind, "workspace": str(repo), "files": files, **({"prompt": "x"} if kind == "ask" else {})}
        status, data = call(sock, "POST", "/v1/jobs", json.dumps(body).encode())
        if status == 201:  # accepted: every file it names is a real file inside the workspace
            assert all(is_inside(repo, repo / f) and (repo / f).exists() for f in data["request"]["files"]), data

    @RUNS
    @given(paths)
    def findings_of(path: str) -> None:
        call(sock, "GET", "/v1/findings?" + urlencode({"workspace": str(repo), "file": path}, errors=LOOSE))
        call(sock, "GET", "/v1/findings?" + urlencode({"file": path}, errors=LOOSE))
        call(sock, "GET", "/v1/events?" + urlencode({"workspace": path}, errors=LOOSE) + "&after=x")

    @RUNS
    @given(routes, ids, bodies)
    def ids_and_bodies(route: tuple[str, str], raw_id: str, body: bytes) -> None:
        method, template = route
        path = template.format(quote(raw_id, safe="", errors=LOOSE))
        call(sock, method, path, body if method == "POST" else None)
        call(sock, "POST", "/v1/jobs", body)

    submit_files()
    findings_of()
    ids_and_bodies()
    _, listed = call(sock, "GET", "/v1/workspaces")
    assert [w["root"] for w in listed["workspaces"]] == [str(repo)]  # nothing outside was registered
    daemon.stop()
    assert "unexpected error" not in daemon.stderr()
