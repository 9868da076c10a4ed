"""The engine: ranking, per-unit values, set metrics, aggregation and merging, the evaluation
stage list and its one result type (DESIGN §3)."""
