"""The team's workspace: a scratch copy of the user's repository, and what the team does in it.

- ``paths``: every path confined to the workspace (``confine``).
- ``files``: which files of a repository count (``.gitignore``, no binaries, no build output).
- ``scratch``: the scratch copy, its code states, the proposed change; ``change``: applying it.
- ``edits``: edits parsed from model replies (``reply_parser``) and applied (``patching``).
- ``repomap``: the repository map and the token-budgeted context for a prompt.
- ``testing``: the project's tests and ruff, run for real (tests in the sandbox); ``reports``: their results.
"""
