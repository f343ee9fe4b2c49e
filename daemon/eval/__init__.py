"""`troupe eval`: the team measured on outside benchmarks beside the bare model (see suite.py)."""
