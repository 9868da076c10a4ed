"""RAG metrics (issue 23) against their oracles: the official SQuAD v1.1 normalisation, rouge-score
and sacrebleu, on hand cases and random texts; BLEU's mergeable state; robustness, latency and
diversity on hand cases; weights and the cluster bootstrap."""

from __future__ import annotations

import collections
import math
import re
import string

import numpy as np
import polars as pl
import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

import evalframe as ef
from evalframe.metrics.base import WEIGHT, merge_states
from evalframe.metrics.registry import resolve


# --- the official SQuAD v1.1 evaluation functions (the oracle, written out as the script has them) ---


def official_normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def official_f1(prediction, ground_truth):
    prediction_tokens = official_normalize_answer(prediction).split()
    ground_truth_tokens = official_normalize_answer(ground_truth).split()
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def official_em(prediction, ground_truth):
    return float(official_normalize_answer(prediction) == official_normalize_answer(ground_truth))


def values(metric: str, references, responses, **columns) -> list[float | None]:
    frame = pl.DataFrame({"reference": references, "response": responses, **columns},
                         schema_overrides={"reference": pl.String, "response": pl.String})
    return frame.select(resolve(metric).expr().alias("v")).get_column("v").to_list()


SQUAD_CASES = [
    ("The Cat sat.", "cat sat"), ("an apple a day", "Apple day"), ("Denver Broncos", "The Denver Broncos!"),
    ("", "Paris"), ("Paris", ""), ("", ""), ("the", "a"), ("1,000 km", "1000 km"), ("Théâtre du Soleil", "théâtre soleil"),
    ("  spaced   out  ", "spaced out"), ("don't stop", "dont stop"), ("a a a b", "a b b"), ("ß STRASSE", "ss strasse"),
]


@pytest.mark.parametrize(("response", "reference"), SQUAD_CASES)
def test_em_and_f1_equal_the_official_squad_script(response, reference):
    assert values("answer_exact_match", [reference], [response]) == [official_em(response, reference)]
    assert values("token_f1", [reference], [response])[0] == official_f1(response, reference)


def test_normalisation_options_turn_steps_off():
    assert values("answer_exact_match(ignore_articles=false)", ["cat"], ["the cat"]) == [0.0]
    assert values("answer_exact_match(ignore_case=false)", ["Cat"], ["cat"]) == [0.0]
    assert values("answer_exact_match(ignore_punctuation=false)", ["cat"], ["cat!"]) == [0.0]
    assert values("answer_exact_match", ["cat"], ["The Cat!"]) == [1.0]


texts = st.lists(st.sampled_from(list("abc ABC.,!?'-é") + ["the", " an ", "ß", "İ", "\u0301", "\x1c", "1,5"]),
                 max_size=30).map("".join) | st.text(max_size=20)


@settings(max_examples=30, deadline=None)
@given(pairs=st.lists(st.tuples(texts, texts), min_size=1, max_size=8))
def test_squad_metrics_on_random_texts(pairs):
    references, responses = [p[0] for p in pairs], [p[1] for p in pairs]
    assert values("answer_exact_match", references, responses) == [official_em(h, r) for r, h in pairs]
    assert values("token_f1", references, responses) == [official_f1(h, r) for r, h in pairs]


# --- ROUGE against rouge-score ---------------------------------------------------------------

ROUGE_CASES = [
    ("The quick brown fox jumps over the lazy dog", "The quick brown dog jumps on the log."),
    ("running runners ran quickly", "runs running quick"), ("", "something"), ("something", ""), ("", ""),
    ("a b a b a b", "b a b a"), ("İstanbul K café naïve", "istanbul k cafe naive"), ("x y z", "z y x"),
    ("Tokens: 3.14, 2,000 & <tags>!", "tokens 3 14 2 000 tags"),
]


def rouge_oracle(reference: str, response: str, variant: str, use_stemmer: bool = True) -> float:
    return rouge_scorer.RougeScorer([variant], use_stemmer=use_stemmer).score(reference, response)[variant].fmeasure


@pytest.mark.parametrize(("reference", "response"), ROUGE_CASES)
@pytest.mark.parametrize("variant", ["rouge1", "rouge2", "rougeL"])
def test_rouge_equals_rouge_score(reference, response, variant):
    got = values(f"{variant}_answer", [reference], [response])[0]
    assert got == pytest.approx(rouge_oracle(reference, response, variant), abs=1e-12)
    unstemmed = values(f"{variant}_answer(use_stemmer=false)", [reference], [response])[0]
    assert unstemmed == pytest.approx(rouge_oracle(reference, response, variant, use_stemmer=False), abs=1e-12)


words = st.sampled_from(["the", "cat", "cats", "running", "ran", "Runs", "a", "dog", "dogs!", "Ünïcode", "x1", "İ",
                         "...", "", "42", "the,", "fish-bone"])
sentences = st.lists(words, max_size=25).map(" ".join)


@settings(max_examples=30, deadline=None)
@given(pairs=st.lists(st.tuples(sentences, sentences), min_size=1, max_size=10))
def test_rouge_on_random_texts(pairs):
    references, responses = [p[0] for p in pairs], [p[1] for p in pairs]
    for variant in ("rouge1", "rouge2", "rougeL"):
        got = values(f"{variant}_answer", references, responses)
        expected = [rouge_oracle(r, h, variant) for r, h in pairs]
        assert got == pytest.approx(expected, abs=1e-12)


def test_rouge_query_compares_with_the_query():
    frame = pl.DataFrame({"query_text": ["what is the refund window"], "response": ["the refund window is 30 days"]})
    got = frame.select(resolve("rougeL_query").expr()).item()
    assert got == pytest.approx(rouge_oracle("what is the refund window", "the refund window is 30 days", "rougeL"), abs=1e-12)
    assert resolve("rougeL_query").target.value == "generation_relevance"


# --- BLEU against sacrebleu ------------------------------------------------------------------

BLEU_REFS = ["The cat sat on the mat.", "It is 3.5 euros, free above 50!", "A completely different sentence here",
             "short", "Don't panic - 42 is the answer (probably)."]
BLEU_HYPS = ["The cat sat on a mat.", "It is 3.5 euros.", "Nothing in common", "", "don't panic: 42 is the answer"]


def bleu_of(references, responses, metric="bleu", weights=None) -> float | None:
    frame = pl.DataFrame({"reference": references, "response": responses}, schema={"reference": pl.String, "response": pl.String})
    if weights is not None:
        frame = frame.with_columns(pl.Series(WEIGHT, weights, dtype=pl.Float64))
    return resolve(metric).compute(frame.lazy(), []).collect().get_column("value").item()


def test_corpus_bleu_equals_sacrebleu():
    assert bleu_of(BLEU_REFS, BLEU_HYPS) == pytest.approx(sacrebleu.corpus_bleu(BLEU_HYPS, [BLEU_REFS]).score, abs=1e-12)
    for method in ("floor", "add-k", "none"):
        expected = sacrebleu.corpus_bleu(BLEU_HYPS, [BLEU_REFS], smooth_method=method).score
        assert bleu_of(BLEU_REFS, BLEU_HYPS, f"bleu(smooth_method={method})") == pytest.approx(expected, abs=1e-12)
    expected = sacrebleu.metrics.BLEU(max_ngram_order=2).corpus_score(BLEU_HYPS, [BLEU_REFS]).score
    assert bleu_of(BLEU_REFS, BLEU_HYPS, "bleu(max_order=2)") == pytest.approx(expected, abs=1e-12)


def test_sentence_bleu_equals_sacrebleu():
    got = values("sentence_bleu", BLEU_REFS, BLEU_HYPS)
    expected = [sacrebleu.sentence_bleu(h, [r]).score for r, h in zip(BLEU_REFS, BLEU_HYPS, strict=True)]
    assert got == pytest.approx(expected, abs=1e-12)


bleu_words = st.sampled_from(["the", "cat", "sat", "on", "mat", ".", ",", "3.5", "euros", "(x)", "don't", "-", "Ünï", "&amp;",
                              "a-b", "1,000", "!", "the"])
bleu_sentences = st.lists(bleu_words, max_size=20).map(" ".join)


@settings(max_examples=30, deadline=None)
@given(pairs=st.lists(st.tuples(bleu_sentences, bleu_sentences), min_size=1, max_size=12), cut=st.integers(0, 12))
def test_bleu_on_random_texts_and_merged_parts(pairs, cut):
    references, responses = [p[0] for p in pairs], [p[1] for p in pairs]
    expected = sacrebleu.corpus_bleu(responses, [references]).score
    assert bleu_of(references, responses) == pytest.approx(expected, abs=1e-9)
    # The state of two random parts, merged, finalizes to the corpus score.
    metric = resolve("bleu")
    frame = pl.DataFrame({"reference": references, "response": responses, WEIGHT: [1.0] * len(pairs)},
                         schema={"reference": pl.String, "response": pl.String, WEIGHT: pl.Float64})
    parts = [frame.head(cut), frame.slice(cut)]
    merged = merge_states([metric.state(part.lazy(), []) for part in parts], [], metric.state_keys)
    assert metric.finalize(merged, []).collect().get_column("value").item() == pytest.approx(expected, abs=1e-9)
    sentence = values("sentence_bleu", references, responses)
    assert sentence == pytest.approx([sacrebleu.sentence_bleu(h, [r]).score for r, h in pairs], abs=1e-9)


def test_bleu_integer_weights_equal_repeated_segments():
    weights = [2.0, 0.0, 1.0, 3.0, 1.0]
    repeated_refs = [r for r, w in zip(BLEU_REFS, weights, strict=True) for _ in range(int(w))]
    repeated_hyps = [h for h, w in zip(BLEU_HYPS, weights, strict=True) for _ in range(int(w))]
    expected = sacrebleu.corpus_bleu(repeated_hyps, [repeated_refs]).score
    assert bleu_of(BLEU_REFS, BLEU_HYPS, weights=weights) == pytest.approx(expected, abs=1e-12)
    # values_under (the bootstrap's path) gives the same value for that weight column.
    frame = pl.DataFrame({"reference": BLEU_REFS, "response": BLEU_HYPS})
    under = resolve("bleu").values_under(frame, np.array([weights, [1.0] * 5]).T)
    assert under == pytest.approx([expected, sacrebleu.corpus_bleu(BLEU_HYPS, [BLEU_REFS]).score], abs=1e-12)


def test_bleu_skips_samples_without_reference():
    got = bleu_of([BLEU_REFS[0], None], [BLEU_HYPS[0], "anything"])
    assert got == pytest.approx(sacrebleu.corpus_bleu([BLEU_HYPS[0]], [[BLEU_REFS[0]]]).score, abs=1e-12)
    assert bleu_of([None], ["x"]) is None


# --- faithfulness ------------------------------------------------------------------------------


def test_evidence_overlap_faithfulness_counts_with_multiplicity():
    frame = pl.DataFrame({
        "response": ["the cat sat sat", "", "dog"],
        "retrieved_texts": [["A cat sat here.", "unrelated"], ["x"], ["cat"]],
        "relevant_texts": [["cat"], ["x"], ["dog!"]],
    })
    got = frame.select(resolve("evidence_overlap_faithfulness").expr()).to_series().to_list()
    assert got == [1.0, None, 0.0]  # "the" is dropped by the normalisation; "" has no n-gram
    relevant = frame.select(resolve("evidence_overlap_faithfulness(evidence_source=relevant)").expr()).to_series().to_list()
    assert relevant == [pytest.approx(1 / 3), None, 1.0]
    top1 = frame.select(resolve("evidence_overlap_faithfulness(k=1,n=2)").expr()).to_series().to_list()
    assert top1 == [pytest.approx(1 / 2), None, None]  # bigrams "cat sat", "sat sat": one found


# --- robustness, latency, diversity on an evaluated table -------------------------------------


def rag_frame() -> pl.DataFrame:
    return pl.DataFrame({
        "sample_id": ["p1", "p1t", "p2", "p2p", "p3", "u1", "c1"],
        "system": ["s"] * 7,
        "reference_answer": ["red apple", "red apple", "blue sky", "blue sky", "green", None, "red apple"],
        "response": ["red apple", "red", "blue sky", "grey sky", "green", "I don't know.", "red pear"],
        "labels": [{"scenario": "original", "variant_of": None}, {"scenario": "typo", "variant_of": "p1"},
                   {"scenario": "original", "variant_of": None}, {"scenario": "paraphrase", "variant_of": "p2"},
                   {"scenario": "original", "variant_of": None}, {"scenario": "unanswerable", "variant_of": None},
                   {"scenario": "counterfactual", "variant_of": "p1"}],
        "timings": [{"end_to_end": t} for t in (1.0, 5.0, 2.0, 4.0, 3.0, 6.0, 7.0)],
    })


def summary_of(metrics, **kwargs) -> dict[str, tuple]:
    ev = ef.evaluate(ef.read_rag(rag_frame()), metrics=metrics, **kwargs)
    overall = ev.summary.filter(pl.col("grouping") == "overall")
    return {row["metric"]: (row["value"], row["n"], row["note"]) for row in overall.iter_rows(named=True)}


def test_robustness_metrics_on_hand_cases():
    found = summary_of(["noise_robustness", "noise_robustness_paired", "negative_rejection_rate",
                        "false_rejection_rate", "counterfactual_consistency(similarity=token_f1)"])
    base = (1.0 + 1.0 + 1.0) / 3  # p1, p2, p3 (u1 has no reference; c1 is a variant)
    noisy = (official_f1("red", "red apple") + official_f1("grey sky", "blue sky")) / 2
    assert found["noise_robustness"][0] == pytest.approx(noisy / base)
    assert "noisy_score 0.5833 (n=2)" in found["noise_robustness"][2]
    assert found["noise_robustness_paired"][0] == pytest.approx(noisy / 1.0)  # parents p1, p2 only
    assert "(n=2)" in found["noise_robustness_paired"][2]
    assert found["negative_rejection_rate"][:2] == (1.0, 1)
    assert found["false_rejection_rate"][:2] == (0.0, 6)
    assert found["counterfactual_consistency(similarity=token_f1)"][:2] == (pytest.approx(official_f1("red pear", "red apple")), 1)


def test_noise_robustness_is_null_when_the_base_score_is_zero():
    frame = rag_frame().with_columns(response=pl.lit("zzz"))
    ev = ef.evaluate(ef.read_rag(frame), metrics=["noise_robustness"])
    row = ev.summary.row(0, named=True)
    assert row["value"] is None and row["note"].startswith("base score is 0")


def test_latency_quantiles_are_nearest_rank():
    times = sorted([1.0, 5.0, 2.0, 4.0, 3.0, 6.0, 7.0])
    found = summary_of(["mean_latency", "p50_latency", "p90_latency", "p95_latency", "p99_latency"])
    assert found["mean_latency"][0] == pytest.approx(4.0)
    for q in (50, 90, 95, 99):
        assert found[f"p{q}_latency"][0] == times[math.ceil(q / 100 * len(times)) - 1]


def test_distinct_n_and_intra_list_diversity():
    responses = ["red apple", "red apple red", ""]
    frame = pl.DataFrame({"response": responses})
    assert resolve("distinct_1").compute(frame.lazy(), []).collect()["value"].item() == pytest.approx(2 / 5)
    assert resolve("distinct_2").compute(frame.lazy(), []).collect()["value"].item() == pytest.approx(2 / 3)
    vectors = [[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [[1.0, 0.0]], None, [[2.0, 0.0], [1.0, 0.0], [0.0, 3.0]]]
    got = pl.DataFrame({"retrieved_embeddings": vectors}).select(resolve("intra_list_diversity@2").expr()).to_series().to_list()

    def naive(rows):
        unit = [np.asarray(v) / np.linalg.norm(v) for v in rows[:2]]
        sims = [unit[i] @ unit[j] for i in range(len(unit)) for j in range(i + 1, len(unit))]
        return 1 - np.mean(sims)

    assert got[0] == pytest.approx(naive(vectors[0]), abs=1e-12)
    assert got[1] is None and got[2] is None
    assert got[3] == pytest.approx(naive(vectors[3]), abs=1e-12)


def test_the_bootstrap_resamples_a_parent_with_its_variants():
    tables = ef.read_rag(rag_frame())
    boot = ef.Bootstrap(resamples=50, unit="cluster_id", seed=3)
    ev = ef.evaluate(tables, metrics=["noise_robustness", "token_f1"], bootstrap=boot)
    replicates = ev.replicates
    assert replicates is not None and replicates.height > 0
    # A cluster's rows share one weight in each replicate: p1's cluster is p1, p1t, c1.
    queries = ev.queries.select("query_id", "cluster_id").sort("query_id")
    assert dict(queries.iter_rows())["p1t"] == "p1" and dict(queries.iter_rows())["c1"] == "p1"
    row = ev.summary.filter(pl.col("metric") == "noise_robustness").row(0, named=True)
    assert row["ci_low"] <= row["value"] <= row["ci_high"] or row["ci_low"] is None


# --- every RAG set metric: values under weight matrices (the bootstrap's path) = the weighted compute ---


def weighted_frame() -> pl.DataFrame:
    tables = ef.read_rag(rag_frame())
    return tables.queries.with_columns(latency_end_to_end=pl.Series([1.0, 5.0, 2.0, 4.0, 3.0, 6.0, 7.0]))


@pytest.mark.parametrize("name", ["bleu", "bleu(smooth_method=floor)", "noise_robustness", "noise_robustness_paired",
                                  "p50_latency", "p95_latency", "distinct_1", "distinct_2"])
@settings(max_examples=25, deadline=None)
@given(weights=st.lists(st.lists(st.integers(0, 3).map(float), min_size=7, max_size=7), min_size=1, max_size=4))
def test_values_under_weights_equal_the_weighted_compute(name, weights):
    metric = resolve(name)
    frame = weighted_frame().sort("query_id")
    matrix = np.array(weights).T
    under = metric.values_under(frame, matrix)
    for column, got in zip(matrix.T, under, strict=True):
        expected = metric.compute(frame.with_columns(pl.Series(WEIGHT, column)).lazy(), []).collect().get_column("value")
        value = expected.item() if expected.len() else None
        if value is None:
            assert np.isnan(got)
        else:
            assert got == pytest.approx(value, abs=1e-12)


def test_the_porter_stemmer_loaded_from_its_file_is_nltks():
    """ROUGE's stemmer is loaded from ``nltk/stem/porter.py`` without NLTK's package init (speed):
    the same stems as ``nltk.stem.porter.PorterStemmer()`` on the sample's words and on suffix
    cases of every step, and ``sys.modules`` is left as it was."""
    import sys

    from nltk.stem.porter import PorterStemmer

    from evalframe.metrics.lexical import _porter_module

    before = {name: module for name, module in sys.modules.items() if name.startswith("nltk")}
    standalone = _porter_module().PorterStemmer()
    assert {name: module for name, module in sys.modules.items() if name.startswith("nltk")} == before
    texts = pl.read_ndjson("data_samples/rag/rag_outputs.jsonl").select("query", "response").to_series(0).to_list()
    words = {w for text in texts for w in re.findall(r"[a-z0-9]+", text.lower())}
    words |= {"caresses", "ponies", "ties", "skies", "dying", "lying", "news", "feed", "agreed", "plastered", "motoring",
              "conflated", "troubled", "sized", "hopping", "filing", "happy", "sky", "relational", "conditional", "rational",
              "valenci", "hesitanci", "digitizer", "conformabli", "radicalli", "differentli", "vileli", "analogousli",
              "vietnamization", "predication", "operator", "feudalism", "decisiveness", "hopefulness", "callousness",
              "formaliti", "sensitiviti", "sensibiliti", "triplicate", "formative", "formalize", "electriciti", "electrical",
              "hopeful", "goodness", "revival", "allowance", "inference", "airliner", "gyroscopic", "adjustable", "defensible",
              "irritant", "replacement", "adjustment", "dependent", "adoption", "homologou", "communism", "activate",
              "angulariti", "homologous", "effective", "bowdlerize", "probate", "rate", "cease", "controll", "roll",
              "generously", "fluently", "innings", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed"}
    reference = PorterStemmer()
    assert [standalone.stem(w) for w in sorted(words)] == [reference.stem(w) for w in sorted(words)]


PIECES = st.sampled_from(list("ab1 9.,-&;:!?\"()[]{}~`@/\n\t") + ["&quot;", "&amp;", "&lt;", "&gt;", "<skipped>", "-\n", "\x1c",
                                                                  "\x1f", "\xa0", "\u2003", "\u3000", "é", "ß", "\x85", "0", "-1", "1,5", "a.b"])


@settings(max_examples=30)
@given(st.lists(st.lists(PIECES, max_size=12).map("".join), min_size=1, max_size=40))
def test_tokenize_13a_equals_sacrebleu(texts):
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    from evalframe.metrics.lexical import tokenize_13a

    tokenizer = Tokenizer13a()
    assert tokenize_13a(pl.Series(texts, dtype=pl.String)).to_list() == [tokenizer(text.rstrip()) for text in texts]
