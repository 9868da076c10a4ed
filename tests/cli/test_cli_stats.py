"""`evalframe power` and `evalframe compare` on a result folder (issue 11, parts 2 and 3)."""

from __future__ import annotations

import pytest

from evalframe.cli import main


@pytest.fixture(scope="module")
def result_dir(tmp_path_factory):
    import evalframe as ef

    out = tmp_path_factory.mktemp("result") / "evidence"
    ef.run_pipeline("evidence_contract", out=out)
    return out


def test_power_prints_the_paired_table(result_dir, capsys):
    assert main(["power", str(result_dir), "--metric", "ndcg@10", "--mde", "0.02", "--paired-with", "retriever_only"]) == 0
    out = capsys.readouterr().out
    assert "full_pipeline vs retriever_only (paired, 1,379 pairs)" in out
    assert "pairs needed" in out and "detectable now (n = 1,379)" in out


def test_power_two_sample_lists_every_system(result_dir, capsys):
    assert main(["power", str(result_dir), "--metric", "mrr", "--mde", "0.05", "--relative"]) == 0
    out = capsys.readouterr().out
    assert "full_pipeline (two samples" in out and "retriever_only (two samples" in out


@pytest.mark.parametrize("arguments, message", [
    (["--metric", "ndcg@10", "--mde", "0.02", "--paired-with", "bm25"], "unknown paired_with system `bm25`"),
    (["--metric", "ndcg@11", "--mde", "0.02"], "unknown metric `ndcg@11`"),
    (["--metric", "auroc", "--mde", "0.02"], "set-level metric"),
])
def test_power_bad_arguments_exit_2(result_dir, capsys, arguments, message):
    assert main(["power", str(result_dir), *arguments]) == 2
    assert message in capsys.readouterr().err


def test_power_bad_result_dir_exits_2_naming_it(tmp_path, capsys):
    missing = tmp_path / "nope"
    assert main(["power", str(missing), "--metric", "mrr", "--mde", "0.1"]) == 2
    assert str(missing) in capsys.readouterr().err
    assert main(["power", str(tmp_path), "--metric", "mrr", "--mde", "0.1"]) == 2
    assert "summary.parquet, run.json missing" in capsys.readouterr().err
