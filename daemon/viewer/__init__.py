"""The run viewer: a small web page the daemon serves on its loopback TCP listener.

A list of jobs and, per job, the conversation by role, the phases as a timeline, questions and
answers, test runs, the proposed diff and tokens/cost over time. A running job updates live
(SSE with resume); a finished one replays from the store at 1×, 4× or instantly. The page is
plain HTML/CSS/ES modules in ``static/`` (package data): no build step, no network.

:mod:`daemon.viewer.routes` serves it; :mod:`daemon.viewer.auth` decides who may open it.
"""

from daemon.viewer.routes import is_viewer_path, mount_viewer, viewer_credential, viewer_gate

__all__ = ["is_viewer_path", "mount_viewer", "viewer_credential", "viewer_gate"]
