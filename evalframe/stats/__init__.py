"""Uncertainty and comparisons: bootstrap replicates, paired tests, corrections, power, sampling."""
