"""Result folders: the one room that reads and writes what ``evalframe run`` leaves on disk.

- :mod:`~evalframe.results.reader`: :func:`read_result` (``ef.load``), the one reader of a result
  folder, used by ``compare``, ``power``, ``report``, ``gate`` and notebooks;
- :mod:`~evalframe.results.writer`: the one atomic writer (a temporary folder, then rename) and
  the folder's manifest of the files evalframe wrote there (nothing else is ever replaced);
- :mod:`~evalframe.results.data`: :class:`ResultData`, a result as the statistics read it;
- :mod:`~evalframe.results.run_info`: ``run.json``'s content.

It sits above the engine (it reads an :class:`~evalframe.engine.result.Evaluation`) and below
every stage that reads results (stats, analyses, pipeline, report, gates, cli).
"""

from __future__ import annotations

from evalframe.results.reader import ResultFolder, read_result

load = read_result

__all__ = ["ResultFolder", "load", "read_result"]
