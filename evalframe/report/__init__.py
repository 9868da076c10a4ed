"""Renderers and writers of pipeline results: terminal overview, Markdown tables, output files."""
