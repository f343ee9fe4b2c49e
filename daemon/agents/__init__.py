"""The agent engine: roles, phases and chat chains as data, run as dialogues over a scratch copy.

- ``model`` / ``loader``: the data model and the TOML chains (``chains/*.toml``, and a repository's
  ``.troupe/chains/``), with file:line errors;
- ``dialogue`` / ``markers``: one phase as an instructor/assistant dialogue, with the ``<INFO>``
  marker, reflection and communicative dehallucination (``QUESTION:`` / ``ASK_HUMAN:``);
- ``runner``: :class:`~daemon.agents.runner.ChainRunner`, which runs a chain for a
  :class:`~daemon.agents.job.JobSpec` and returns a :class:`~daemon.agents.job.JobOutcome`;
- ``produce``, ``findings``, ``placeholders``, ``tools``, ``workbench``: what phases make
  (edits, documents, findings, answers), the checks loops run, and the prompts' fields;
- ``accounting`` / ``checkpoint``: tokens, cost and time per phase; resuming a job.
"""
