"""The local model's server process: llama.cpp's own OpenAI-compatible server, embedded by xllamacpp.

Run by :class:`daemon.llm.local.LocalModelServer` as ``python -m daemon.llm.local_server`` with its
settings as JSON in ``TROUPE_LOCAL_SERVER`` (the environment, not the command line: other users can
read a command line, not an environment). It serves on loopback with the given API key, and exits
when told to (SIGTERM) or as soon as the daemon that started it is gone — even one killed with
SIGKILL: the kernel kills it on the parent's death (``PR_SET_PDEATHSIG`` with SIGKILL, which needs
no Python code to run: while llama.cpp loads a model it holds the interpreter, and a SIGTERM
handler or a thread would wait for the load to end — over 30 s on two busy cores), and a watch on
the parent's pid catches the rest (a parent gone before that was set, a non-Linux system). Nothing
is lost: the server keeps no state, and the OS frees the model.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from daemon.json_types import JsonObject

SETTINGS_ENV = "TROUPE_LOCAL_SERVER"
PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the watch below still ends the process, within a second
    if os.getppid() != parent:
        os._exit(0)  # the daemon died before the signal was armed

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def serve(settings: JsonObject) -> object:  # JSON the daemon passed in SETTINGS_ENV
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = settings["model"]
    params.model_alias = {settings["alias"]}  # a set of names the server answers to
    params.hostnames = ["127.0.0.1"]
    params.port = int(settings["port"])
    params.api_keys = [settings["key"]]
    params.n_ctx = int(settings["context"])
    params.n_parallel = 1  # one call at a time: the CPU is the limit
    batch_threads = int(settings.get("batch_threads") or settings["threads"])  # prompt processing
    params.cpuparams.n_threads = int(settings["threads"])
    params.cpuparams_batch.n_threads = batch_threads
    params.endpoint_metrics = True
    if settings.get("draft"):  # speculative decoding; the draft model's path alone does not turn it on
        params.speculative.types = [xllamacpp.common_speculative_type.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
        params.speculative.draft.mparams.path = settings["draft"]
        params.speculative.draft.cpuparams.n_threads = int(settings["threads"])
        params.speculative.draft.cpuparams_batch.n_threads = batch_threads
    server = xllamacpp.Server(params)  # serves on its own threads while this object lives
    print(f"troupe local server: {settings['alias']} on 127.0.0.1:{params.port}, "
          f"{settings['threads']} threads ({batch_threads} for prompts), xllamacpp {xllamacpp.__version__}"
          + (f", draft model {settings['draft']}" if settings.get("draft") else ""), flush=True)
    return server


def main() -> None:
    settings = json.loads(os.environ.pop(SETTINGS_ENV))
    die_with_parent(int(settings["parent"]))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server = serve(settings)
    while not stop.wait(3600):
        pass
    del server
    os._exit(0)  # llama.cpp's threads need no orderly shutdown; the OS frees the model


if __name__ == "__main__":
    main()
