"""Beginning a pipeline's input read before the engine is imported (``evalframe run``).

:func:`begin_reading_input` finds the pipeline file (:func:`pipeline_path`), its mapping with
the overrides, and the input it names, and begins reading it on a thread of its own
(:mod:`evalframe.io.early`). This module imports only what that takes (the YAML, the overrides,
the readers; not :mod:`evalframe.pipeline.spec`, which imports the engine and every metric
family), so the command line calls it first and the rest of its imports run beside the read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalframe._resources import bundled_dir
from evalframe.errors import ConfigError, path_argument
from evalframe.io import early
from evalframe.io.readers import ROW_READERS
from evalframe.pipeline.input_spec import InputSpec, normalized
from evalframe.pipeline.overrides import apply_overrides


def bundled_or_relative(pipeline_file: str | None, given: str | None) -> Path | None:
    """``given`` (a path of the pipeline's ``input:`` block) as found from the current folder, or
    from the bundle when the pipeline file ``pipeline_file`` is a bundled one (:func:`default_input`)."""
    if given is None:
        return None
    path = Path(given)
    if path.is_absolute() or path.exists() or pipeline_file is None:
        return path
    bundle = bundled_dir("pipelines")
    if Path(pipeline_file).resolve().parent == bundle.resolve():
        bundled = bundle.parent / path
        if bundled.exists():
            return bundled
    return path


def pipeline_path(pipeline: str | Path) -> Path:
    """The YAML file of a pipeline path, or of a bundled pipeline's name (``evidence_contract``)."""
    path = path_argument(pipeline, "the pipeline (a YAML file or a bundled pipeline's name)")
    if path.is_file():
        return path
    bundled = bundled_dir("pipelines") / f"{path.stem}.yaml"
    if path.suffix in ("", ".yaml", ".yml") and bundled.is_file() and path.parent == Path("."):
        return bundled
    names = sorted(p.stem for p in bundled_dir("pipelines").glob("*.yaml"))
    raise ConfigError(f"pipeline `{pipeline}` not found (bundled pipelines: {', '.join(names)})")


def begin_reading_input(
    pipeline: str | Path,
    *,
    input: str | Path | None = None,
    config: str | Path | list[str | Path] | tuple = (),
    set: Mapping[str, Any] | list[str] | None = None,  # noqa: A002 (the CLI's word)
    bootstrap: bool | None = None,
    outputs: list[str] | tuple[str, ...] | None = None,
    baseline: str | None = None,
) -> None:
    """Begin reading the input that a run of ``pipeline`` (with these overrides, on ``input``)
    will read, on a thread of its own (:mod:`evalframe.io.early`): ``evalframe run`` calls it
    first, so checking the pipeline and importing the engine happen beside the read, and
    :func:`read_input` takes the result.

    The pipeline's mapping is found as :func:`load_pipeline` finds it (its file, then the
    overrides), and nothing is checked or reported here. A pipeline that cannot be read, an input
    that is not one file read whole by a bundled row reader (``per_query``, ``retrieval_results``,
    ``scores``; no samples file, no ``execution.buckets``), or anything unexpected begins nothing:
    :func:`load_pipeline` and the run then read and report as they always do."""
    try:
        path = pipeline_path(pipeline)
        configs = [config] if isinstance(config, (str, Path)) else list(config)
        raw, _ = apply_overrides(read_mapping(path), configs=configs, set=set, bootstrap=bootstrap, outputs=outputs,
                                 baseline=baseline)
        spec = InputSpec(**(normalized(raw).get("input") or {}))
        if (spec.format not in ROW_READERS or spec.samples is not None or spec.tables
                or (raw.get("execution") or {}).get("buckets") is not None):
            return
        source = input if input is not None else bundled_or_relative(str(path), spec.path)
        if not isinstance(source, (str, Path)) or not Path(source).is_file():
            return
    except Exception:  # noqa: BLE001  (a pipeline that does not read is load_pipeline's to report)
        return
    early.begin(ROW_READERS[spec.format].read, source, spec)


def read_mapping(path: Path) -> Any:
    import yaml

    from evalframe.data.contracts import load_yaml

    try:
        return load_yaml(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: cannot read the pipeline: {error}") from None
