"""Teams at scale: several teams on one task, networks of agents, and an orchestrator that learns.

- ``config``: the chain-file and command-line keys (``teams``, ``topology``, ``agents``,
  ``orchestrator``, ...); imports nothing from the engine;
- ``run``: :class:`~daemon.teams.run.TeamsRunner`, the entry point the daemon uses in place of
  ``ChainRunner``; it picks what the configuration asks for;
- ``croto`` / ``pool`` / ``merge`` / ``scoring`` / ``solution``: cross-team orchestration —
  teams in parallel, their solutions scored, pruned, grouped and merged;
- ``topology`` / ``macnet`` / ``network_phase``: MacNet — generated DAGs of agents run in
  topological order, only solutions travelling along edges;
- ``policy`` / ``puppeteer``: the orchestrator that picks the next agent, heuristic or learned
  by REINFORCE, its parameters versioned in the store (``storage.verbs.policies``);
- ``team_gateway``: one team's view of the shared gateway (its temperature and model).
"""
