"""What each registered metric means for a clinician or product reader (contract §10.2).

One place for every metric's one-line interpretation and the kind of number it is; reports
(:mod:`evalframe.report.tables`) read it through :func:`describe`. An entry is keyed by the
metric's registered name (``recall``, ``ppv``, …) and its text is a template filled with the
metric's parameters (``{k}``, ``{fpr}``, ``{threshold}``, ``{bins}``), so ``recall@5`` reads
"… in the top 5".

``kind`` says how a value is printed (:func:`evalframe.report.formatting.format_number`):

- ``rate``: a proportion in [0, 1] (may be shown as a percentage);
- ``score``: any other real number (AUROC, nDCG, MCC, Brier, ECE);
- ``count``: a number of units (integer when whole).

A metric registered with ``meaning=``/``kind=`` on its spec (a user's own,
:func:`evalframe.metrics.registry.register_metric`) reads those; one without falls back to the
first line of its docstring and the kind ``score``; ``tests/metrics/test_interpretation.py`` checks that every
bundled metric has an entry.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from evalframe.metrics.base import Metric

Kind = Literal["rate", "score", "count"]


@dataclass(frozen=True)
class Interpretation:
    """A metric's meaning in words, its kind of number and its direction."""

    text: str
    kind: Kind
    higher_is_better: bool

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"

    @property
    def arrow(self) -> str:
        return "↑" if self.higher_is_better else "↓"


#: Registered metric name → (template, kind). Templates use the metric's dataclass fields.
INTERPRETATIONS: dict[str, tuple[str, Kind]] = {
    # ranking (contract §3): queries with evidence
    "recall": ("Share of a query's gold evidence sentences that appear in the top {k}.", "rate"),
    "precision": ("Share of the top {k} sentences shown that are gold evidence.", "rate"),
    "hit_rate": ("Of 100 queries with evidence, how many have a gold sentence in the top {k}.", "rate"),
    "num_ret": ("Sentences retrieved per query.", "count"),
    "num_rel": ("Gold evidence sentences per query.", "count"),
    "num_rel_ret": ("Gold evidence sentences retrieved per query.", "count"),
    "mrr": ("How high the first gold sentence ranks: 1 at rank 1, 1/2 at rank 2, … (0 beyond the cut).", "score"),
    "map": ("Precision at each gold sentence's rank, averaged: rewards putting all evidence early.", "score"),
    "ndcg": ("Quality of the top {k} order against the ideal one (1 = all evidence first).", "score"),
    "r_precision": ("Share of gold sentences in the top R, R being the query's number of gold sentences.", "rate"),
    # NE gate (contract §2.1, §2.2)
    "auroc": ("Chance that a query with evidence scores higher than one without (0.5 = random, 1 = perfect).", "score"),
    "auprc": ("Precision of the evidence alarm averaged over all sensitivities (random = the positive rate).", "score"),
    "tpr": ("Share of evidence cases caught when false alarms are held at {fpr_pct} of no-evidence queries.", "rate"),
    # confusion family (contract §2.3), at the operating threshold
    "tp": ("Queries with evidence that the gate flags (p ≥ {threshold}).", "count"),
    "tn": ("Queries without evidence that the gate clears (p < {threshold}).", "count"),
    "fp": ("False alarms: queries without evidence that the gate flags (p ≥ {threshold}).", "count"),
    "fn": ("Missed evidence: queries with evidence that the gate clears (p < {threshold}).", "count"),
    "sensitivity": ("Of 100 queries with evidence, how many the gate flags (p ≥ {threshold}).", "rate"),
    "specificity": ("Of 100 queries without evidence, how many the gate correctly clears.", "rate"),
    "fpr": ("Of 100 queries without evidence, how many raise a false alarm.", "rate"),
    "ppv": ("Of 100 flagged queries, how many truly have evidence.", "rate"),
    "npv": ("Of 100 cleared queries, how many truly have no evidence.", "rate"),
    "f1": ("Balance of catching evidence and avoiding false alarms (harmonic mean of precision and sensitivity).", "score"),
    "mcc": ("Agreement of flags with the truth: −1 always wrong, 0 chance, 1 perfect; fair when evidence is rare.", "score"),
    "balanced_accuracy": ("Mean of the share of evidence flagged and the share of no-evidence cleared (0.5 = chance).", "rate"),
    # calibration (contract §2.4)
    "brier": ("Mean squared gap between the predicted probability and the outcome (0 = perfect).", "score"),
    "ece": ("Gap between predicted probabilities and observed frequencies, over {bins} bins (0 = calibrated).", "score"),
    # per-post multi-label (contract §6)
    "exact_match": ("Share of posts whose every criterion is decided right.", "rate"),
    "hamming_score": ("Share of a post's criteria decided right, averaged over posts.", "rate"),
    "hamming_loss": ("Share of a post's criteria decided wrong, averaged over posts.", "rate"),
    "macro_f1": ("F1 of each post's flagged criteria, averaged over posts.", "score"),
    "micro_f1": ("F1 of all (post, criterion) decisions pooled.", "score"),
    "weighted_f1": ("F1 per criterion, averaged with each criterion's share of evidence.", "score"),
    "label_macro_f1": ("F1 per criterion, averaged with every criterion counting equally.", "score"),
    # dynamic-K extraction (contract §4)
    "selected_k": ("Sentences the system chose to extract per query (dynamic K).", "score"),
    "n_extracted": ("Sentences extracted, summed over the queries: the reading workload.", "count"),
    "evidence_recall": ("Share of a query's gold evidence sentences that the system extracted.", "rate"),
    "evidence_precision": ("Share of the extracted sentences that are gold evidence.", "rate"),
    # three-state gate (contract §5)
    "neg_rate": ("Share of queries the gate skips (NEG): workload saved.", "rate"),
    "uncertain_rate": ("Share of queries sent to conservative review (UNCERTAIN).", "rate"),
    "pos_rate": ("Share of queries raised as high-confidence alerts (POS).", "rate"),
    "alert_rate_per_1000": ("Alerts (POS) per 1000 queries: how many a reviewer must look at.", "score"),
    "screening_sensitivity": ("Of 100 queries with evidence, how many the gate does not skip.", "rate"),
    "screening_fn_per_1000": ("Queries with evidence the gate skips, per 1000 queries: missed evidence.", "score"),
    "alert_precision": ("Of 100 alerts (POS), how many truly have evidence.", "rate"),
    # per-criterion counts (contract §7.1)
    "n_queries": ("Queries in the slice.", "count"),
    "n_positive": ("Queries with evidence in the slice.", "count"),
    "positive_rate": ("Share of the slice's queries that have evidence (a random ranker's precision).", "rate"),
    # legal passage retrieval (seed 003)
    "legal_exact_match": ("Share of questions whose answer text matches the gold answer exactly.", "rate"),
    "legal_span_f1": ("Word overlap (F1) between the answer span and the gold span.", "score"),
    "legal_recall": ("Share of a question's gold passages found in the top {k}.", "rate"),
    "legal_ndcg": ("Quality of the top {k} order of passages against the ideal one (1 = gold first).", "score"),
    "span_precision": ("Share of the text of the top {k} passages that lies inside gold spans.", "rate"),
    "span_recall": ("Share of the gold spans' text covered by the top {k} passages.", "rate"),
    # RAG generation (seed 000 §4): answers against the reference (or the query)
    "answer_exact_match": ("Share of answers equal to the reference after SQuAD normalisation.", "rate"),
    "token_f1": ("Word overlap (SQuAD F1) between the answer and the reference.", "score"),
    "rouge1_answer": ("Shared words between the answer and the reference (ROUGE-1 F).", "score"),
    "rouge2_answer": ("Shared word pairs between the answer and the reference (ROUGE-2 F).", "score"),
    "rougeL_answer": ("Longest shared word sequence between the answer and the reference (ROUGE-L F).", "score"),
    "rouge1_query": ("Shared words between the answer and the question (ROUGE-1 F): does it address it?", "score"),
    "rouge2_query": ("Shared word pairs between the answer and the question (ROUGE-2 F).", "score"),
    "rougeL_query": ("Longest shared word sequence between the answer and the question (ROUGE-L F).", "score"),
    "bleu": ("Corpus BLEU (0-100) of the answers against the references, as sacrebleu.", "score"),
    "sentence_bleu": ("BLEU (0-100) of each answer against its reference, averaged.", "score"),
    "evidence_overlap_faithfulness": ("Share of the answer's words ({n}-grams) found in the {evidence_source} documents: "
                                      "a lexical proxy for being supported by evidence.", "rate"),
    # RAG robustness (seed 000 §6)
    "noise_robustness": ("Quality on paraphrased or misspelt questions relative to the originals (1 = no loss).", "score"),
    "noise_robustness_paired": ("As noise robustness, on originals that have a noisy variant and those variants only.", "score"),
    "negative_rejection_rate": ("Of 100 unanswerable questions, how many the system declines to answer.", "rate"),
    "false_rejection_rate": ("Of 100 answerable questions, how many the system wrongly declines.", "rate"),
    "counterfactual_consistency": ("Similarity ({similarity}) between answers to a question and to its counterfactual variant.", "score"),
    # Model-backed metrics (issue 26): the texts of their specs (meaning=) win; these keep this table complete.
    "embedding_similarity": ("Cosine similarity of the response's and the {compare_to}'s sentence embeddings (1 = same direction).", "score"),
    "bertscore_precision": ("BERTScore precision: the response's tokens matched in the {compare_to} by contextual embeddings.", "score"),
    "bertscore_recall": ("BERTScore recall: the {compare_to}'s tokens matched in the response by contextual embeddings.", "score"),
    "bertscore_f1": ("BERTScore F1 of the response against the {compare_to} (contextual token embeddings).", "score"),
    "llm_faithfulness": ("How much of the answer an LLM judge finds supported by the evidence (0 none, 1 all).", "score"),
    "llm_answer_quality": ("An LLM judge's rating of the answer (relevance, helpfulness, clarity), 1–5 scaled to [0, 1].", "score"),
    # RAG latency and diversity (seed 000 §7)
    "mean_latency": ("Mean {timing_key} time per question, in seconds.", "score"),
    "p50_latency": ("Median {timing_key} time, in seconds (half the questions are faster).", "score"),
    "p90_latency": ("90th percentile of the {timing_key} time, in seconds.", "score"),
    "p95_latency": ("95th percentile of the {timing_key} time, in seconds (1 in 20 questions is slower).", "score"),
    "p99_latency": ("99th percentile of the {timing_key} time, in seconds (1 in 100 questions is slower).", "score"),
    "distinct_1": ("Unique words over all words of the answers: low means repetitive answers.", "rate"),
    "distinct_2": ("Unique word pairs over all word pairs of the answers.", "rate"),
    "intra_list_diversity": ("How different the top {k} retrieved documents are from each other (1 − mean cosine).", "score"),
    # Recommendation beyond accuracy (seed 004 §21.4.2) and detection with costs (§21.4.3).
    "unique_items": ("Distinct items recommended in the users' top lists.", "count"),
    "catalog_coverage": ("Share of the catalog that appears in at least one user's top list.", "rate"),
    "category_coverage": ("Share of the catalog's categories that appear in the users' top lists.", "rate"),
    "gini": ("Concentration of recommendations on few items (0 = spread evenly, 1 = all on one item).", "score"),
    "popularity_bias": ("Mean popularity of recommended items relative to the catalog mean (1 = no bias).", "score"),
    "novelty": ("Mean self-information of recommended items (−log2 popularity share): higher is less obvious.", "score"),
    "serendipity": ("How unlike the user's history the recommended items are (1 − closest similarity).", "score"),
    "detection_rate": ("Share of anomalies caught at the target false-positive rate (the chapter's walk down the scores).", "rate"),
    "actual_fpr": ("False-positive rate actually reached by the detection-rate walk.", "rate"),
    "threshold_index": ("Position in the score order where the detection-rate walk stopped.", "count"),
    "total_cost": ("Cost of the errors at the threshold: false positives × fp_cost + false negatives × fn_cost.", "count"),
    "cost_per_prediction": ("Cost of the errors per scored case at the threshold.", "score"),
    "cost_reduction_vs_baseline": ("Share of the flag-nothing baseline's cost saved by the detector.", "rate"),
    "min_cost": ("Lowest cost over every threshold (the cost-minimising operating point).", "count"),
    "min_cost_threshold": ("Score threshold with the lowest cost.", "score"),
    "time_to_detection": ("Time from an anomaly's onset to its first detection.", "score"),
    "detected": ("Share of anomalies detected at all.", "rate"),

}


def registered_name(metric: Metric) -> str | None:
    """The registry name of ``metric``'s spec (``recall`` for ``recall@5``); None if unregistered."""
    from evalframe.metrics.registry import spec_of

    spec = spec_of(metric)
    return spec.name if spec is not None else None


def describe(metric: Metric) -> Interpretation:
    """``metric``'s interpretation with its parameters filled in: its spec's ``meaning`` and
    ``kind`` (:func:`evalframe.metrics.registry.register_metric`), else the bundled entry, else the
    first line of its docstring."""
    from evalframe.metrics.registry import spec_of

    spec = spec_of(metric)
    entry = (spec.meaning, spec.kind or "score") if spec is not None and spec.meaning else None
    entry = entry or INTERPRETATIONS.get(spec.name if spec is not None else "")
    if entry is None:
        first_line = (type(metric).__doc__ or metric.name).strip().splitlines()[0]
        kind: Kind = "count" if metric.summary == "sum" else "score"
        return Interpretation(first_line, kind, metric.higher_is_better)
    template, kind = entry
    fields = dataclasses.asdict(metric) if dataclasses.is_dataclass(metric) else {}
    # A rate parameter also reads as a percentage: ``{fpr_pct}`` is "1%" for fpr = 0.01.
    fields |= {f"{name}_pct": f"{value * 100:g}%" for name, value in fields.items() if isinstance(value, float)}
    return Interpretation(template.format(**fields), kind, metric.higher_is_better)
