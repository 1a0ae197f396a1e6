"""Earlier runs as baselines: `records` (a run as kept), `stats` (phase times, budgets, ETA), `compare` (this run
against earlier ones, in words), `store` (the SQLite run store) and `migrations` (its schema, step by step).

Import from the submodules; nothing is re-exported here. None of them runs the pipeline: they take what the
pipeline produced (spans, a Report) and give back records, numbers and words."""
