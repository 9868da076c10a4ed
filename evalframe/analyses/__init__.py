"""Analyses built on the engine: tables that evaluate a policy or a grid, not one metric."""
