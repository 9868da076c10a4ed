"""Compatibility with the tools users come from: trec_eval's measures and output, the legal score.py."""
