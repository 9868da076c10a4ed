"""Scores as trec_eval compares them: 32-bit floats in `evalframe trec`, 64 bits by default in Python.

trec_eval keeps a run's scores in a C ``float``: 20.401 and 20.401000001 tie there, and its tie
rule (doc_id descending) puts ``b`` before ``a``.
"""

from __future__ import annotations

import polars as pl
import pytest
import pytrec_eval

import evalframe as ef
from evalframe.cli import main

NEAR_TIE = {"q1": {"a": 20.401000001, "b": 20.401}}
QRELS = {"q1": {"a": 1, "b": 0}}


def frames(run: dict, qrels: dict) -> tuple[pl.DataFrame, pl.DataFrame]:
    run_frame = pl.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs.items()],
                             schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64}, orient="row")
    qrels_frame = pl.DataFrame([(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
                               schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}, orient="row")
    return ef.read_run(run_frame), ef.read_qrels(qrels_frame)


def test_python_keeps_64_bits_by_default_and_32_on_request():
    run, qrels = frames(NEAR_TIE, QRELS)
    assert ef.evaluate(run, qrels, ["mrr"]).summary.item(0, "value") == 1.0
    assert ef.evaluate(run, qrels, ["mrr"], score_precision="float32").summary.item(0, "value") == 0.5
    oracle = pytrec_eval.RelevanceEvaluator(QRELS, {"recip_rank"}).evaluate(NEAR_TIE)
    assert oracle["q1"]["recip_rank"] == 0.5


def test_the_trec_command_ranks_as_trec_eval(tmp_path, capsys):
    (tmp_path / "run").write_text("q1 Q0 a 1 20.401000001 r\nq1 Q0 b 2 20.401 r\n")
    (tmp_path / "qrels").write_text("q1 0 a 1\nq1 0 b 0\n")
    assert main(["trec", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "recip_rank"]) == 0
    assert capsys.readouterr().out.split() == ["recip_rank", "all", "0.5000"]


def test_a_score_beyond_float32_is_an_error_naming_the_file(tmp_path, capsys):
    (tmp_path / "run").write_text("q1 Q0 a 1 1e308 r\nq1 Q0 b 2 20.4 r\n")
    (tmp_path / "qrels").write_text("q1 0 a 1\n")
    assert main(["trec", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "map"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'run'}: 1 problem" in err and "beyond the range of a 32-bit float" in err and "1e+308" in err
    run, qrels = frames({"q1": {"a": 1e308, "b": 20.4}}, {"q1": {"a": 1}})
    assert ef.evaluate(run, qrels, ["map"]).summary.item(0, "value") == 1.0  # 64 bits: no limit
    with pytest.raises(ef.InputError, match="beyond the range of a 32-bit float"):
        ef.evaluate(run, qrels, ["map"], score_precision="float32")


def test_an_unknown_precision_is_a_config_error():
    run, qrels = frames(NEAR_TIE, QRELS)
    with pytest.raises(ef.ConfigError, match="score_precision"):
        ef.evaluate(run, qrels, ["mrr"], score_precision="float16")
