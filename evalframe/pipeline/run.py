"""Running a pipeline: find it, read its input, run its plan through the engine.

The stages themselves are the engine's (:mod:`evalframe.engine.evaluation`); a pipeline adds
only where the input comes from and which outputs are written.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from evalframe.engine.evaluation import run
from evalframe.errors import NO_VALUE, ConfigError, InputError, Problem, path_argument
from evalframe.io import early
from evalframe.io.readers import ROW_READERS, registered_reader
from evalframe.pipeline.early import bundled_or_relative, begin_reading_input, pipeline_path, read_mapping
from evalframe.pipeline.overrides import apply_overrides
from evalframe.pipeline.preflight import preflight
from evalframe.pipeline.spec import InputSpec, PipelineSpec
from evalframe.results.run_info import sha256_of
from evalframe.semantic import session
from evalframe.engine.bootstrap import Bootstrap

if TYPE_CHECKING:
    from evalframe.data.tables import Tables
    from evalframe.engine.result import Evaluation


def read_input(spec: InputSpec, source: str | Path | pl.DataFrame, gold: str | Path | None = None,
               samples: str | Path | pl.DataFrame | None = None) -> Tables:
    """Read the pipeline input into the long tables with the reader its ``format`` names (and,
    for the ``legal`` format, its ``gold`` file; for the ``rag`` format's two-file form, the
    ``samples`` file, the input being the outputs file). A format added by
    :func:`~evalframe.io.readers.register_reader` gives a table that its contract's reader takes."""
    format = spec.format
    if format == "rag":
        from evalframe.io.rag import read_rag

        if samples is not None:
            return read_rag(samples, outputs=source)
        return read_rag(source)
    if samples is not None:
        raise ConfigError(f"a samples file goes with the `rag` format (its two-file form), not `{format}`")
    custom = registered_reader(format)
    if custom is not None:
        source = source if isinstance(source, pl.DataFrame) else custom.table(source)
        format = custom.schema
    if format == "legal":
        from evalframe.io.legal import read_legal

        if isinstance(source, pl.DataFrame):
            raise ConfigError("the `legal` format reads a predictions JSON file, not a table")
        if gold is None:
            raise ConfigError("the `legal` format needs the gold file: pass `--gold FILE` (or `gold=` in Python, "
                              "or `input.gold` in the pipeline)")
        return read_legal(source, gold)
    if spec.format == "recommendations":
        from evalframe.io.recommendations import read_recommendations

        return read_recommendations(source, **{name: path for name, path in spec.tables.items()})
    if spec.format == "embeddings":
        from evalframe.pipeline.embeddings import read_embedding_input

        return read_embedding_input(spec, source, gold)
    # per_query, retrieval_results, scores; begun early by `evalframe run` (begin_reading_input)
    return early.take(ROW_READERS[format].read, source, spec)


class Pipeline(PipelineSpec):
    """A validated pipeline (:class:`~evalframe.pipeline.spec.PipelineSpec`) that runs."""

    def run(self, input: str | Path | pl.DataFrame | None = None, *, gold: str | Path | None = None,
            samples: str | Path | pl.DataFrame | None = None,
            on_engine: Callable[[Evaluation], None] | None = None) -> Evaluation:
        """Run the pipeline on ``input`` (default: the pipeline's own input path) and, for formats
        that need one, ``gold`` (default: the pipeline's ``input.gold``); ``samples``: the samples
        file of the ``rag`` format's two-file form (``input`` is then the outputs file);
        ``on_engine``: see :func:`run_loaded`."""
        return run_loaded(self, input, gold=gold, samples=samples, on_engine=on_engine)


def default_input(pipeline: PipelineSpec) -> Path | None:
    """The pipeline's own input path: relative to the current folder, or, for a bundled pipeline
    whose input is not found there, to the bundle (so `evalframe run evidence_contract` finds its
    sample from any folder)."""
    return bundled_or_relative(pipeline.source, pipeline.input.path)


def default_gold(pipeline: PipelineSpec) -> Path | None:
    """The pipeline's own gold path (``input.gold``), found as :func:`default_input` finds the input."""
    return bundled_or_relative(pipeline.source, pipeline.input.gold)


def run_loaded(
    pipeline: PipelineSpec, input: str | Path | pl.DataFrame | None = None, *, gold: str | Path | None = None,
    samples: str | Path | pl.DataFrame | None = None, on_engine: Callable[[Evaluation], None] | None = None,
) -> Evaluation:
    """Run ``pipeline`` on ``input`` (default: the pipeline's own input path, :func:`default_input`)
    and ``gold`` (formats with a gold file; default :func:`default_gold`). ``on_engine`` is called
    with the engine's result before the stages after it (the command line starts drawing the
    report plots there: :func:`evalframe.report.outputs.start_plots`)."""
    from evalframe.analyses.domain_tables import with_plot_tables
    from evalframe.pipeline.scanned import run_scanned, scans_input

    source = input if input is not None else default_input(pipeline)
    if source is None:
        raise ConfigError(f"pipeline `{pipeline.name}` names no input; pass one (`--input FILE`, or `input=` in Python)")
    scanned = scans_input(pipeline, source, samples)  # out of core: read bucket by bucket (pipeline/scanned.py)
    if isinstance(source, (str, Path)) and not scanned and not Path(source).exists():
        hint = "" if input is not None else " (the pipeline's `input.path`; pass another with `--input FILE`, or `input=` in Python)"
        raise InputError(str(source), Problem(None, None, NO_VALUE, f"file not found{hint}"))
    gold_source = gold_file(pipeline, gold)
    if samples is None and pipeline.input.samples is not None and input is None:
        samples = bundled_or_relative(pipeline.source, pipeline.input.samples)
    if isinstance(samples, (str, Path)) and not Path(samples).exists():
        raise InputError(str(samples), Problem(None, None, NO_VALUE, "file not found (the samples file)"))
    with ThreadPoolExecutor(max_workers=1) as background:
        # The input's sha256 (run.json) is computed beside the reading; hashlib releases the GIL.
        digest = background.submit(sha256_of, Path(source)) if isinstance(source, (str, Path)) and Path(source).is_file() else None
        if scanned:
            pipeline, evaluation, n_rows = run_scanned(pipeline, source)
        else:
            side_tables = {name: str(bundled_or_relative(pipeline.source, path)) for name, path in pipeline.input.tables.items()}
            tables = read_input(replace(pipeline.input, tables=side_tables), source, gold_source, samples)
            pipeline = preflight(pipeline, tables)  # every config-against-data check, before computing
            evaluation = run(tables, replace(pipeline.plan, about={**pipeline.plan.about, "outputs": pipeline.outputs}),
                             **(pipeline.execution or {}))
            n_rows = tables.n_rows
        if on_engine is not None:
            on_engine(evaluation)
        evaluation = with_plot_tables(after_engine(evaluation, pipeline, source=source))
        evaluation = replace(evaluation, notes=(*(s.note() for s in pipeline.skipped), *evaluation.notes))
        sha256 = digest.result() if digest is not None else None
    if isinstance(source, (str, Path)):
        described = {"path": str(source), "sha256": sha256, "format": pipeline.input.format}
    else:
        described = {"path": None, "sha256": None, "format": "in-memory table"}
    if isinstance(samples, (str, Path)):
        described |= {"samples": {"path": str(samples), "sha256": sha256_of(Path(samples))}}
    if gold_source is not None:
        described |= {"gold": {"path": str(gold_source), "sha256": sha256_of(Path(gold_source))}}
    described |= {"rows": n_rows, "columns": dict(pipeline.input.columns)}
    return replace(evaluation, source=described)


def gold_file(pipeline: PipelineSpec, gold: str | Path | None) -> Path | None:
    """The gold file of the run: ``gold``, else the pipeline's own; an error when the format
    reads none or the file is missing."""
    from evalframe.pipeline.spec import GOLD_FORMATS

    if gold is not None and pipeline.input.format not in GOLD_FORMATS:
        raise ConfigError(f"pipeline `{pipeline.name}` reads format `{pipeline.input.format}`, which has no gold file "
                          f"(`--gold` goes with {', '.join(f'`{f}`' for f in GOLD_FORMATS)})")
    if pipeline.input.format not in GOLD_FORMATS:
        return None
    found = Path(gold) if gold is not None else default_gold(pipeline)
    if found is None:
        raise ConfigError(f"pipeline `{pipeline.name}` needs a gold file: pass `--gold FILE` (or `gold=` in Python)")
    if not found.exists():
        hint = "" if gold is not None else " (the pipeline's `input.gold`; pass another with `--gold FILE`, or `gold=` in Python)"
        raise InputError(str(found), Problem(None, None, NO_VALUE, f"file not found{hint}"))
    return found


def after_engine(evaluation: Evaluation, pipeline: PipelineSpec, *, source: str | Path | pl.DataFrame | None = None) -> Evaluation:
    """The stages after the engine, in order: the analyses (dynamic-K sweep, ablation, tuning,
    embedding quality of the ``source`` vectors), the comparison of systems, then the checks.

    Each is the function Python calls (``ef.dynamic_k_sweep``, ``ef.ablation``,
    ``ef.tune_thresholds``, ``ef.compare``, ``ef.check``), given the keyword arguments of the
    pipeline's block; a block that is absent is not run.
    """
    from evalframe.analyses import ablation, tune_thresholds
    from evalframe.checks import check

    if pipeline.dynamic_k_sweep is not None:
        evaluation = _with_sweep(pipeline, evaluation)
    if pipeline.ablation is not None:
        evaluation = ablation(evaluation, **pipeline.ablation)
    if pipeline.tuning is not None:
        evaluation = tune_thresholds(evaluation, **pipeline.tuning)
    if pipeline.embedding_quality is not None and source is not None:
        from evalframe.pipeline.embeddings import with_embedding_quality

        evaluation = with_embedding_quality(evaluation, pipeline, source)
    if pipeline.compare:
        from evalframe.stats.compare import compare

        evaluation = evaluation.with_tables(comparison=compare(evaluation, **pipeline.compare))
    if pipeline.checks is not None:
        evaluation = check(evaluation, **pipeline.checks)
    return evaluation


def _with_sweep(pipeline: PipelineSpec, evaluation: Evaluation) -> Evaluation:
    """The evaluation with the dynamic-K γ sweep table of the pipeline's ``dynamic_k_sweep:`` block."""
    from evalframe.analyses.dynamic_k_sweep import dynamic_k_sweep

    arguments = pipeline.sweep_arguments()
    slices = arguments.pop("slices")
    table = evaluation.tables.get("dynamic_k_sweep")  # the bucket path's, built bucket by bucket (pipeline/scanned.py)
    if table is None:
        table = dynamic_k_sweep(evaluation, slices=slices, **arguments)
    evaluation = evaluation.with_tables(dynamic_k_sweep=table)
    # run.json records the analysis' parameters (the table shows γ, not k_min or k_max).
    groupings = table.get_column("grouping").unique(maintain_order=True).to_list()
    analyses = {**evaluation.plan.about.get("analyses", {}),
                "dynamic_k_sweep": {**arguments, "normalize": arguments["normalize"] or "none", "slices": groupings}}
    evaluation = replace(evaluation, plan=replace(evaluation.plan, about={**evaluation.plan.about, "analyses": analyses}))
    return evaluation


def load_pipeline(
    pipeline: str | Path | Pipeline,
    *,
    config: str | Path | list[str | Path] | tuple = (),
    set: Mapping[str, Any] | list[str] | None = None,  # noqa: A002 (the CLI's word)
    bootstrap: bool | None = None,
    outputs: list[str] | tuple[str, ...] | None = None,
    baseline: str | None = None,
) -> Pipeline:
    """A pipeline from a YAML path, or by the name of a bundled pipeline (``evidence_contract``),
    with overrides (:mod:`evalframe.pipeline.overrides`): overlay files (``config``), dotted
    keys (``set={"slices.domain": ["domain"]}``), ``bootstrap=False``, ``outputs``, ``baseline``.
    Everything is validated together, as one file."""
    configs = [config] if isinstance(config, (str, Path)) else list(config)
    overridden = bool(configs or set or bootstrap is False or outputs is not None or baseline is not None)
    if isinstance(pipeline, Pipeline):
        if not overridden:
            return pipeline
        raw, origin = pipeline.raw or {}, pipeline.source or "pipeline"
    else:
        path = pipeline_path(pipeline)
        if not overridden:
            return Pipeline.from_yaml(path)
        raw, origin = read_mapping(path), str(path)
    merged, record = apply_overrides(raw, configs=configs, set=set, bootstrap=bootstrap, outputs=outputs, baseline=baseline)
    described = origin + " with " + ", ".join(_described(key, value) for key, value in record.items())
    loaded = Pipeline.from_mapping(merged, origin=described)
    return replace(loaded, source=origin, plan=replace(loaded.plan, about={**loaded.plan.about, "source": origin}),
                   overrides=record)


def _described(key: str, value: Any) -> str:
    if key == "set":
        return ", ".join(f"--set {k}={v!r}" for k, v in value.items())
    if key == "config":
        return ", ".join(f"--config {v}" for v in value)
    if key == "bootstrap":
        return "--no-bootstrap"
    if key == "outputs":
        return f"--outputs {','.join(value)}"
    return f"--{key} {value}"


def run_pipeline(
    pipeline: str | Path | Pipeline,
    *,
    input: str | Path | pl.DataFrame | None = None,
    gold: str | Path | None = None,
    samples: str | Path | pl.DataFrame | None = None,
    out: str | Path | None = None,
    bootstrap: Bootstrap | None | Literal[False] = None,
    config: str | Path | list[str | Path] | tuple = (),
    set: Mapping[str, Any] | None = None,  # noqa: A002 (the CLI's word)
    outputs: list[str] | tuple[str, ...] | None = None,
    baseline: str | None = None,
    embed_fn: Callable[[list[str]], Any] | None = None,
    judge: Any = None,
    judge_cache: str | Path | None = None,
    embedding_cache: str | Path | None = None,
) -> Evaluation:
    """Load and run a pipeline (``gold``: the gold file of formats that read one); write its
    outputs when ``out`` is given.

    The model-backed metrics (:func:`run_resources`): ``embed_fn`` (``list[str] -> 2-D array``)
    encodes for ``embedding_similarity``; ``judge`` is an :class:`~evalframe.LLMCritic` or a mode
    (``"record"``, ``"replay"``, ``"live"``) for an :class:`~evalframe.OpenAICompatibleCritic`
    configured by the environment, its answers cached in ``judge_cache``; ``embedding_cache``: a
    Parquet file of embeddings kept between runs.

    The overrides are the command line's (:func:`load_pipeline`): ``config`` overlay files,
    ``set={"parameters.tau_neg": 0.2, ...}``, ``outputs=[...]``, ``baseline="bm25"``;
    ``bootstrap`` replaces the pipeline's ``bootstrap:`` settings (:class:`~evalframe.Bootstrap`;
    ``False`` turns intervals off; None keeps the pipeline's).

    >>> ev = ef.run_pipeline("evidence_contract", input="my.csv", set={"slices.domain": ["domain"]},
    ...                      bootstrap=False, outputs=["summary.csv"], baseline="bm25")  # doctest: +SKIP
    """
    if input is not None and not isinstance(input, pl.DataFrame):
        path_argument(input, "`input`")
    overrides = {"config": config, "set": set, "bootstrap": False if bootstrap is False else None,
                 "outputs": outputs, "baseline": baseline}
    try:
        if isinstance(pipeline, (str, Path)) and not isinstance(input, pl.DataFrame) and samples is None:
            begin_reading_input(pipeline, input=input, **overrides)  # read beside the checks below
        loaded = load_pipeline(pipeline, **overrides)
        if bootstrap:
            loaded = with_bootstrap(loaded, bootstrap)
        resources = run_resources(embed_fn=embed_fn, judge=judge, judge_cache=judge_cache, embedding_cache=embedding_cache, out=out)
        with session.use(resources):
            evaluation = loaded.run(input, gold=gold, samples=samples)
    finally:
        early.forget()  # a read begun for a run that failed first is not kept
    if out is not None:
        evaluation.write(out)
    return evaluation


def run_resources(*, embed_fn: Callable[[list[str]], Any] | None = None, judge: Any = None,
                  judge_cache: str | Path | None = None, embedding_cache: str | Path | None = None,
                  out: str | Path | None = None) -> session.Resources:
    """What a run gives the model-backed metrics (:mod:`evalframe.semantic.session`).

    ``judge``: an :class:`~evalframe.LLMCritic`, or a mode (``live``, ``record``, ``replay``) for an
    :class:`~evalframe.OpenAICompatibleCritic` from ``OPENAI_BASE_URL``, ``EVALFRAME_JUDGE_MODEL``
    and the key variables, whose cache is ``judge_cache`` (default ``judge_cache.parquet`` beside
    the ``out`` folder, else in the current folder)."""
    from evalframe.semantic.critic import LLMCritic, OpenAICompatibleCritic
    from evalframe.semantic.judge_cache import DEFAULT_CACHE_NAME, check_mode

    if embed_fn is not None and not callable(embed_fn):
        raise ConfigError(f"embed_fn must be callable (list[str] -> 2-D array), got {type(embed_fn).__name__}")
    beside = Path(out).resolve().parent if out is not None else Path(".")
    critic = judge
    if isinstance(judge, str):
        critic = OpenAICompatibleCritic(mode=check_mode(judge), cache=Path(judge_cache) if judge_cache else beside / DEFAULT_CACHE_NAME)
    elif judge is not None and not isinstance(judge, LLMCritic):
        raise ConfigError(f"judge must be an LLMCritic or a mode (live, record, replay), got {type(judge).__name__}")
    return session.Resources(embed_fn=embed_fn, critic=critic,
                             embedding_cache=str(embedding_cache) if embedding_cache is not None else None)


def with_bootstrap(pipeline: Pipeline, bootstrap: Bootstrap | None) -> Pipeline:
    """A copy of ``pipeline`` with other bootstrap settings (None: no intervals)."""
    return replace(pipeline, plan=replace(pipeline.plan, bootstrap=bootstrap))


def with_input(pipeline: Pipeline, path: str | Path) -> Pipeline:
    """A copy of ``pipeline`` reading from ``path``."""
    return replace(pipeline, input=replace(pipeline.input, path=str(path)))
