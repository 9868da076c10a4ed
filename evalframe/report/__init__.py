"""Renderers and writers of a result: terminal overview, Markdown tables, output files, run.json.

Each takes an :class:`evalframe.engine.result.Evaluation` (read through its attributes; nothing
here imports the engine, so the result's shortcuts ``ev.write()`` and ``ev.overview()`` call
these functions without an import cycle).
"""
