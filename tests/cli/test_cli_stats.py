"""`evalframe power` and `evalframe compare` on a result folder (issue 11, parts 2 and 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalframe.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "data_samples" / "per_query.csv"


@pytest.fixture(scope="module")
def result_dir(bundled_sample_run):
    return bundled_sample_run[1]  # the bundled pipeline's full run, shared with test_cli_pipeline


def test_power_prints_the_paired_table(result_dir, capsys):
    assert main(["power", str(result_dir), "--metric", "ndcg@10", "--mde", "0.02", "--paired-with", "retriever_only"]) == 0
    out = capsys.readouterr().out
    assert "full_pipeline vs retriever_only (paired, 466 pairs)" in out
    assert "pairs needed" in out and "detectable now (n = 466)" in out


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
    assert "has no summary.parquet and no run.json" in capsys.readouterr().err  # the one reader's message


def test_compare_prints_the_overall_rows_and_writes_only_with_out(result_dir, tmp_path, capsys):
    before = sorted(p.name for p in result_dir.iterdir())
    assert main(["compare", str(result_dir), "--baseline", "retriever_only", "--metric", "ndcg@10", "--metric", "auroc",
                 "--family", "grouping", "--permutations", "500"]) == 0
    out = capsys.readouterr().out
    assert "full_pipeline vs retriever_only · overall · p adjusted by holm" in out
    ndcg = next(line for line in out.splitlines() if " ndcg@10 " in line)
    assert "randomization" in ndcg and ndcg.rstrip().endswith("*")
    auroc = next(line for line in out.splitlines() if " auroc " in line)
    assert "bootstrap" in auroc                                    # set metrics: the run's paired bootstrap replicates
    assert sorted(p.name for p in result_dir.iterdir()) == before  # nothing written into the result folder
    target = tmp_path / "cmp.csv"
    assert main(["compare", str(result_dir), "--baseline", "retriever_only", "--metric", "mrr", "--permutations", "200",
                 "--out", str(target)]) == 0
    import polars as pl

    table = pl.read_csv(target)
    assert set(table.get_column("grouping")) == {"overall", "fold", "criterion", "state", "has_evidence"}
    assert (table.get_column("p_randomization") > 0).all()


def test_compare_unknown_baseline_or_bad_dir_exits_2_naming_it(result_dir, tmp_path, capsys):
    assert main(["compare", str(result_dir), "--baseline", "bm25"]) == 2
    assert ("unknown baseline `bm25` (systems: `full_pipeline`, `plus_jina_reranker`, `plus_p2_dynamic_k`, "
            "`plus_p3_graph_reranker`, `plus_p4_ne_gate`, `retriever_only`)") in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "missing"), "--baseline", "x"]) == 2
    assert "missing" in capsys.readouterr().err
    assert main(["compare", str(result_dir), "--baseline", "retriever_only", "--grouping", "week"]) == 2
    assert "unknown groupings ['week']" in capsys.readouterr().err


def test_compare_rereads_the_input_for_set_metrics_and_says_when_it_changed(tmp_path, capsys, monkeypatch):
    import polars as pl

    sample = pl.read_csv(SAMPLE, infer_schema_length=0)
    posts = sample.get_column("post_id").unique(maintain_order=True).head(40)
    small = tmp_path / "small.csv"
    sample.filter(pl.col("post_id").is_in(posts.implode())).write_csv(small)
    pipeline = tmp_path / "small.yaml"
    pipeline.write_text(
        "version: 1\nname: small\ninput: {path: small.csv, format: per_query}\n"
        "metrics:\n  - {subset: all_queries, names: [f1, brier]}\nslices: {overall: [], fold: [fold]}\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["run", "small.yaml", "--out", "out"]) == 0
    capsys.readouterr()
    arguments = ["compare", "out", "--baseline", "retriever_only", "--metric", "f1", "--set-permutations", "100"]
    assert main(arguments) == 0
    f1 = next(line for line in capsys.readouterr().out.splitlines() if " f1 " in line)
    assert "randomization" in f1
    small.write_text(small.read_text().replace("0.", "0.1", 1))
    assert main(arguments) == 0
    assert "changed since the run (its sha256 differs from run.json's)" in capsys.readouterr().out


def test_pipeline_compare_block_adds_the_comparison_table(tmp_path):
    import evalframe as ef

    spec = {
        "version": 1, "name": "cmp",
        "subsets": {"has_evidence": {"description": "queries with evidence", "where": "label = 1"}},
        "metrics": [{"subset": "has_evidence", "names": ["mrr"]}],
        "slices": {"overall": [], "fold": ["fold"]},
        "compare": {"baseline": "retriever_only", "correction": "bh", "permutations": 300, "tests": ["t", "randomization"]},
    }
    ev = ef.Pipeline.from_mapping(spec).run(SAMPLE)
    table = ev.tables["comparison"]
    # 5 systems against the baseline × (overall + 5 folds)
    assert table.height == 5 * 6 and set(table.get_column("test")) == {"t"}
    ev.write(tmp_path / "out")
    assert (tmp_path / "out" / "comparison.csv").is_file()
    assert "## Comparison" in (tmp_path / "out" / "summary.md").read_text()


def test_pipeline_compare_block_is_checked_strictly():
    import evalframe as ef

    spec = {
        "version": 1, "metrics": [{"names": ["mrr"]}],
        "compare": {"baseline": "a", "corection": "bh", "metrics": ["ndcg@10"], "groupings": ["fold"], "alpha": 1.5},
    }
    with pytest.raises(ef.ConfigError) as error:
        ef.Pipeline.from_mapping(spec)
    message = str(error.value)
    assert "compare.corection: unknown key; did you mean `correction`?" in message
    assert "compare.metrics[0]: is not a metric of the pipeline" in message
    assert "compare.groupings[0]: is not a slice of the pipeline" in message
    assert "compare.alpha: must be between 0 and 1" in message


def test_compare_prints_counts_as_integers_and_rates_with_four_decimals():
    from evalframe.cli.compare import _cell, _is_count

    assert _is_count("tp") and _is_count("n_queries") and not _is_count("recall@10") and not _is_count("auroc")
    assert _cell(147.0, count=True) == "147" and _cell(4373.0, count=True) == "4,373"
    assert _cell(85.0, count=True, sign="+") == "+85" and _cell(-48.0, count=True, sign="+") == "-48"
    assert _cell(101.5, count=True) == "101.5000"  # a weighted count that is not whole keeps its decimals
    assert _cell(0.72213, count=False) == "0.7221" and _cell(None) == "–"


def test_compare_finds_a_relative_input_from_another_directory_and_says_when_it_cannot(tmp_path, capsys, monkeypatch):
    """run.json keeps the input's path as given (relative to where the run started): compare looks
    it up from the result folder's parents too, so the set metrics keep their bootstrap test from
    any working directory; where it is found nowhere, the note names the input."""
    import polars as pl

    sample = pl.read_csv(SAMPLE, infer_schema_length=0)
    posts = sample.get_column("post_id").unique(maintain_order=True).head(40)
    project = tmp_path / "project"
    project.mkdir()
    sample.filter(pl.col("post_id").is_in(posts.implode())).write_csv(project / "small.csv")
    (project / "small.yaml").write_text(
        "version: 1\nname: small\ninput: {path: small.csv, format: per_query}\n"
        "metrics:\n  - {subset: all_queries, names: [f1, brier]}\nslices: {overall: []}\n"
        "bootstrap: {resamples: 50, unit: [post_id], seed: 3}\n"
    )
    monkeypatch.chdir(project)
    assert main(["run", "small.yaml", "--out", "reports/small"]) == 0
    capsys.readouterr()
    arguments = ["compare", str(project / "reports" / "small"), "--baseline", "retriever_only", "--metric", "f1"]
    assert main(arguments) == 0
    from_project = capsys.readouterr().out
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(arguments) == 0
    from_elsewhere = capsys.readouterr().out
    f1 = [line for line in from_elsewhere.splitlines() if " f1 " in line]
    assert len(f1) == 5 and all("bootstrap" in line and "[" in line for line in f1)  # a test and an interval
    assert from_elsewhere == from_project
    # The folder moved away from its input: no test, and the note says which input is missing.
    (project / "reports" / "small").rename(elsewhere / "small")
    assert main(["compare", "small", "--baseline", "retriever_only", "--metric", "f1"]) == 0
    out = capsys.readouterr().out
    assert "no bootstrap replicates (the run's input rows cannot be re-read: run.json's input `small.csv` is not found" in out
    assert all("bootstrap" not in line for line in out.splitlines() if " f1 " in line)
