"""score.py compatibility (seed 003): whole files, scored by evalframe and by the plain-Python
reference, agree; the block is score.py's."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalframe.compat.legal import metric_names, render_block, score
from evalframe.io.legal import read_legal
from tests import legal_reference as ref

TEXT = st.lists(st.sampled_from(["The", "party", "shall", "PAY", "fee.", "non-compete", "30", " ", "days"]), max_size=4).map(" ".join)
QUERY = st.sampled_from(["q1", "q2", "q3", "q4"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(predictions=st.lists(st.fixed_dictionaries({"query": QUERY, "retrieved_passages": st.lists(TEXT, max_size=5)}), max_size=6),
       tests=st.lists(st.fixed_dictionaries({"query": QUERY, "snippets": st.lists(
           st.fixed_dictionaries({"file_path": st.sampled_from(["cuad/a.txt", "maud/b.txt"]), "answer": TEXT}),
           min_size=1, max_size=3)}), min_size=1, max_size=5),
       k=st.integers(1, 6), dedupe=st.booleans())
def test_files_score_as_the_reference(tmp_path_factory, predictions, tests, k, dedupe):
    folder = tmp_path_factory.mktemp("score")
    (folder / "p.json").write_text(json.dumps(predictions))
    (folder / "g.json").write_text(json.dumps({"tests": tests}))
    results, _ = score(read_legal(folder / "p.json", folder / "g.json"), k, dedupe=dedupe)
    expected = ref.score(predictions, {"tests": tests}, k, dedupe=dedupe)
    assert list(results) == list(expected)
    for key, value in expected.items():
        assert results[key] == pytest.approx(value, abs=1e-12), key


def test_block_and_names():
    assert render_block({"exact_match": 0.0, "span_f1": 0.2009, "recall@10": 0.37174, "ndcg@10": 0.27566,
                         "num_examples": 100.0}) == (
        "Evaluation Results:\n==========================\nexact_match: 0.0000\nspan_f1: 0.2009\n"
        "recall@10: 0.3717\nndcg@10: 0.2757\nnum_examples: 100.0000\n==========================")
    assert metric_names(5, dedupe=True)["ndcg@5"] == "legal_ndcg@5(dedupe=true)"
    assert list(metric_names(3, spans=True)) == ["exact_match", "span_f1", "recall@3", "ndcg@3", "span_precision@3", "span_recall@3"]
