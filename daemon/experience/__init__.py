"""Experience: what finished jobs taught, put back into the prompts of later ones.

- ``session``: :class:`~daemon.experience.session.JobExperience`, the engine's hook for one job
  (retrieval into prompts, workflow shortcuts, dismissed findings screened, the run recorded);
- ``mining``: after a job, its record becomes shortcuts (``ecl``), per-agent examples with
  rewards (MAEL) and a workflow trajectory (``workflow``, Co-Saving);
- ``retrieve``: BM25 candidates re-ranked by TF-IDF cosine, rendered as quoted data in budget;
- ``refine``: iterative refinement (IER) batches, successive/cumulative modes, elimination;
- ``learnings``: what people said about findings (applied, dismissed, why), per repository;
- ``settings`` / ``text``: the ``[experience]`` configuration; similarity, scrubbing, quoting.

The store's side is :mod:`storage.experience`; the API's is ``/v1/experience``; the CLI's is
``troupe experience``. ``bench/experience.py`` measures the effect.
"""
