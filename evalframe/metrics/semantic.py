"""Model-backed generation metrics of seed 000 §4.3, offline: embedding cosine similarity and
BERTScore, one value per (sample, system).

- ``embedding_similarity`` (§4.3.2; ``compare_to: reference | query``): the cosine similarity
  ``a·b / (‖a‖ ‖b‖)`` of the response's and the reference's (or query's) embeddings. The
  embeddings come from ``embed_fn`` (any ``list[str] -> 2-D array``; Python's
  ``EmbeddingSimilarity(embed_fn=...)`` or ``ef.run_pipeline(..., embed_fn=...)``), else from the
  sentence-transformers model ``model`` (a local directory; default the bundled
  all-MiniLM-L6-v2). Each unique text of a run is encoded once, in batches
  (:mod:`evalframe.semantic.encoding`); a zero vector gives null ("zero embedding").
- ``bertscore_precision``, ``bertscore_recall``, ``bertscore_f1`` (§4.3.1): bert-score's
  ``BERTScorer(model_type=<local dir>, num_layers=…).score(responses, references)`` with the
  response as candidate; ``idf=true`` takes the idf weights from the references of the rows
  scored together, as ``bert_score.score(..., idf=True)`` does; no baseline rescaling. The three
  share one computation; each unique (response, reference) pair is scored once.

``num_layers`` is required for a model bert-score does not know; for the bundled MiniLM (6
layers) it defaults to :data:`MINILM_NUM_LAYERS` = 5, bert-score's tuned layer for the
6-layer DistilBERT. The seed's default model, ``microsoft/deberta-xlarge-mnli`` (layer 40), is
what to pass as ``model`` when it is on disk. Samples without the compared text are outside
the subset ("no reference answer" / "no query text").
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import polars as pl

from evalframe.errors import ConfigError
from evalframe.metrics import lexical
from evalframe.metrics.base import QueryMetric
from evalframe.metrics.generation_overlap import CompareTo, Compared, compare_to, rowwise
from evalframe.metrics.params import param, params_of
from evalframe.semantic import session
from evalframe.semantic.encoding import DEFAULT_BATCH_SIZE, cosine_pairs, encoder_for

#: bert-score layer of the bundled all-MiniLM-L6-v2 (bert-score's tuned layer of 6-layer DistilBERT).
MINILM_NUM_LAYERS = 5
ZERO_EMBEDDING = "zero embedding (cosine undefined)"


def _model() -> Any:
    """The declaration of ``model`` (shared: a pipeline's ``parameters: {model: …}`` reaches every model-backed metric)."""
    return param(None, "a local Hugging Face model directory (default: the bundled all-MiniLM-L6-v2)", kind=str, shared=True)


def _batch_size() -> Any:
    return param(DEFAULT_BATCH_SIZE, "texts encoded per model call", low=1)


def embedding_cosine(first: pl.Series, second: pl.Series, *, embed_fn: Callable | None = None, model: str | None = None,
                     batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
    """Cosine similarity of the two columns' embeddings row by row (NaN where a text is null):
    ``embed_fn``, else the run's (:mod:`evalframe.semantic.session`), else the model ``model``."""
    resources = session.current()
    encoder = encoder_for(embed_fn=embed_fn or resources.embed_fn, model=model,
                          cache=resources.embedding_cache, batch_size=batch_size)
    return cosine_pairs(first, second, encoder)


@dataclass(frozen=True)
class EmbeddingSimilarity(Compared, QueryMetric):
    """Cosine similarity of the response's and the reference's (or query's) embeddings (seed §4.3.2)."""

    compare_to: CompareTo = compare_to()
    model: str | None = _model()
    batch_size: int = _batch_size()
    #: ``list[str] -> 2-D array``; None: the run's, else the model's. Not part of the name.
    embed_fn: Callable[[list[str]], Any] | None = field(default=None, compare=False, repr=False)
    value_range: ClassVar[tuple[float, float] | None] = (-1.0, 1.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.embed_fn is not None and not callable(self.embed_fn):
            raise ConfigError("`embedding_similarity`: embed_fn must be callable (list[str] -> 2-D array)")

    @property
    def name(self) -> str:
        params = [f"compare_to={self.compare_to}"] if self.compare_to != "reference" else []
        params += [f"model={self.model}"] if self.model is not None else []
        params += [f"batch_size={self.batch_size}"] if self.batch_size != DEFAULT_BATCH_SIZE else []
        return "embedding_similarity" + (f"({','.join(params)})" if params else "")

    def expr(self) -> pl.Expr:
        def values(response: pl.Series, against: pl.Series) -> np.ndarray:
            return embedding_cosine(response, against, embed_fn=self.embed_fn, model=self.model, batch_size=self.batch_size)
        return rowwise(values, "response", self.against, key=(self, id(self.embed_fn or session.current().embed_fn)))

    def skip_reason(self) -> pl.Expr:
        return pl.lit(ZERO_EMBEDDING)

    def prepare(self, tables: object) -> None:
        """A model that is not on disk is an error before anything is computed."""
        if self.embed_fn is None and session.current().embed_fn is None:
            from evalframe.semantic.models import model_directory

            model_directory(self.model, what=f"`{self.name}`")


#: Held while a shared bert-score scorer is set up and scores (:func:`bertscore_triples`).
_BERTSCORE_LOCK = threading.Lock()


def bertscore_triples(candidates: pl.Series, references: pl.Series, *, model: str | None = None, num_layers: int | None = None,
                      idf: bool = False, batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
    """``(rows, 3)`` BERTScore precision, recall, F1 of each (candidate, reference) row through
    bert-score (NaN where either is null); each unique pair is scored once."""
    from evalframe.semantic.models import bert_scorer, model_directory

    directory = model_directory(model, what="BERTScore")
    layers = num_layers if num_layers is not None else _default_layers(model)
    scorer = bert_scorer(directory, layers)
    rows = candidates.len()
    result = np.full((rows, 3), np.nan)
    present = (candidates.is_not_null() & references.is_not_null()).to_numpy()
    if not present.any():
        return result
    pairs = pl.DataFrame({"candidate": candidates, "reference": references}).filter(pl.Series(present))
    unique = pairs.unique(maintain_order=True)
    # bert-score reads the idf flag and weights at score time, and one loaded model serves every
    # setting: set, weigh and score under one lock (metric groups run on two threads).
    with _BERTSCORE_LOCK, warnings.catch_warnings():
        scorer._idf = idf
        warnings.simplefilter("ignore")  # "Overwriting the previous importance weights"
        if idf:
            scorer.compute_idf(pairs["reference"].to_list())
        precision, recall, f1 = scorer.score(unique["candidate"].to_list(), unique["reference"].to_list(), batch_size=batch_size)
    scored = unique.with_columns(_p=pl.Series(precision.numpy().astype(np.float64)), _r=pl.Series(recall.numpy().astype(np.float64)),
                                 _f=pl.Series(f1.numpy().astype(np.float64)))
    joined = pairs.join(scored, on=["candidate", "reference"], how="left", maintain_order="left")
    result[present] = joined.select("_p", "_r", "_f").to_numpy()
    return result


def _default_layers(model: str | None) -> int:
    if model is None:
        return MINILM_NUM_LAYERS
    raise ConfigError(f"BERTScore with model `{model}` needs `num_layers` (bert-score's layer for that model; "
                      "e.g. 40 for microsoft/deberta-xlarge-mnli, 9 for bert-base-uncased)")


Part = Literal["precision", "recall", "f1"]
_COLUMN = {"precision": 0, "recall": 1, "f1": 2}


@dataclass(frozen=True)
class BertScore(Compared, QueryMetric):
    """BERTScore of the response against the reference (or query), through bert-score (seed §4.3.1)."""

    #: Which of the three numbers (set by the metric's name, ``bertscore_recall``; not a parameter).
    part: Part = "f1"
    compare_to: CompareTo = compare_to()
    model: str | None = _model()
    num_layers: int | None = param(None, f"the model layer used (default {MINILM_NUM_LAYERS} for the bundled MiniLM; "
                                         "required for another model)", kind=int, low=1)
    idf: bool = param(False, "idf weights from the references")
    batch_size: int = _batch_size()
    value_range: ClassVar[tuple[float, float] | None] = (-1.0, 1.0)

    def __post_init__(self) -> None:
        if self.part not in _COLUMN:
            raise ConfigError(f"BERTScore part must be precision, recall or f1, got {self.part!r}")
        super().__post_init__()

    def prepare(self, tables: object) -> None:
        """A model that is not on disk, or one without ``num_layers``, is an error before anything is computed."""
        from evalframe.semantic.models import model_directory

        model_directory(self.model, what=f"`{self.name}`")
        if self.num_layers is None:
            _default_layers(self.model)

    def _settings(self) -> tuple:
        return (self.compare_to, self.model, self.num_layers, self.idf, self.batch_size)

    @property
    def name(self) -> str:
        params = [f"compare_to={self.compare_to}"] if self.compare_to != "reference" else []
        params += [f"model={self.model}"] if self.model is not None else []
        params += [f"num_layers={self.num_layers}"] if self.num_layers is not None else []
        params += ["idf=true"] if self.idf else []
        params += [f"batch_size={self.batch_size}"] if self.batch_size != DEFAULT_BATCH_SIZE else []
        return f"bertscore_{self.part}" + (f"({','.join(params)})" if params else "")

    def expr(self) -> pl.Expr:
        column = _COLUMN[self.part]

        def values(response: pl.Series, against: pl.Series) -> np.ndarray:
            # P, R and F1 of the same settings share one bert-score call (memoised on the columns).
            triples = lexical.memoised(("bertscore", self._settings()), (response, against),
                                       lambda: bertscore_triples(response, against, model=self.model, num_layers=self.num_layers,
                                                                 idf=self.idf, batch_size=self.batch_size))
            return triples[:, column]
        return rowwise(values, "response", self.against, key=self)


def _specs():
    from evalframe.metrics.registry import MetricSpec

    meaning = "Cosine similarity of the response's and the {compare_to}'s sentence embeddings (1 = same direction)."
    return [
        MetricSpec("embedding_similarity", EmbeddingSimilarity,
                   aliases=("embedding_cosine",), meaning=meaning, kind="score"),
        *(MetricSpec(f"bertscore_{part}", lambda part=part, **kw: BertScore(part, **kw),
                     f"BERTScore {label} of the response against the reference (bert-score, local model)", params_of(BertScore),
                     meaning=f"BERTScore {label}: greedy matching of contextual token embeddings between the response and the "
                             "{compare_to} (bert-score, no baseline rescaling).", kind="score")
          for part, label in (("precision", "precision"), ("recall", "recall"), ("f1", "F1"))),
    ]


SPECS = _specs()
