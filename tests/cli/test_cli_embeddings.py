"""`evalframe embeddings quality|retrieve` and `evalframe run embeddings`: outputs on the sample and on
files made here, values equal to the Python API, bad input → exit 2 with nothing written."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import evalframe as ef
from evalframe.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "data_samples" / "embeddings"


@pytest.fixture
def own_files(tmp_path) -> dict[str, Path]:
    """A small corpus (one model, no label column), its queries and qrels, made here."""
    rng = np.random.default_rng(5)
    corpus = rng.normal(size=(120, 6)).astype(np.float32)
    queries = corpus[:30] + rng.normal(scale=0.1, size=(30, 6)).astype(np.float32)
    pl.DataFrame({"doc": [f"d{i}" for i in range(120)], "emb": corpus}).with_columns(pl.col("emb").arr.to_list()) \
        .write_parquet(tmp_path / "corpus.parquet")
    pl.DataFrame({"doc": [f"q{i}" for i in range(30)], "emb": queries.tolist()}).write_parquet(tmp_path / "queries.parquet")
    (tmp_path / "qrels.txt").write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(30)))
    return {"corpus": tmp_path / "corpus.parquet", "queries": tmp_path / "queries.parquet", "qrels": tmp_path / "qrels.txt",
            "corpus_vectors": corpus, "query_vectors": queries}


def fails(capsys, args, *fragments) -> str:
    code = main(args)
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert captured.out == "" and captured.err.startswith("evalframe: error:") and "Traceback" not in captured.err
    for fragment in fragments:
        assert fragment in captured.err, captured.err
    return captured.err


def test_quality_on_the_sample_writes_tables_and_plots(tmp_path, capsys):
    out = tmp_path / "q"
    assert main(["embeddings", "quality", str(SAMPLE / "corpus.parquet"), "--labels", "label", "--resamples", "50",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "healthy" in text and "collapsed" in text and "partition_isotropy" in text
    table = pl.read_parquet(out / "embedding_quality.parquet")
    assert sorted(table["model"].unique()) == ["collapsed", "healthy"]
    verdict = dict(table.filter(pl.col("metric") == "dead_ratio").select("model", "verdict").iter_rows())
    assert verdict == {"healthy": "good", "collapsed": "warning"}
    assert {p.name for p in (out / "plots").iterdir()} >= {"embedding_spectrum.png", "embedding_dimension_variance.png"}
    expected = ef.embedding_quality(str(SAMPLE / "corpus.parquet"), labels="label", bootstrap=ef.Bootstrap(resamples=50))
    assert table.drop("se", "ci_low", "ci_high").equals(expected.drop("se", "ci_low", "ci_high"))


def test_retrieve_equals_knn_run_through_evaluate(own_files, tmp_path, capsys):
    out = tmp_path / "r"
    args = ["embeddings", "retrieve", "--queries", str(own_files["queries"]), "--corpus", str(own_files["corpus"]),
            "--qrels", str(own_files["qrels"]), "--id", "doc", "--vector", "emb", "-m", "recall@1", "-m", "recall@10",
            "-m", "mrr", "-k", "10", "--out", str(out)]
    assert main(args) == 0
    capsys.readouterr()
    summary = pl.read_parquet(out / "summary.parquet")
    run = ef.knn_run(own_files["query_vectors"], own_files["corpus_vectors"], k=10)
    run = run.with_columns(query_id="q" + pl.col("query_id"), doc_id="d" + pl.col("doc_id"), system=pl.lit("corpus"))
    expected = ef.evaluate(run, ef.read_qrels(own_files["qrels"]), metrics=["recall@1", "recall@10", "mrr"]).summary
    assert dict(zip(summary["metric"], summary["value"])) == dict(zip(expected["metric"], expected["value"]))
    assert (out / "plots" / "recall_at_k.png").is_file()


def test_run_embeddings_pipeline_on_the_sample(tmp_path):
    """The bundled pipeline (fewer replicates, to keep the suite quick) writes what `evalframe run
    embeddings` writes."""
    out = tmp_path / "p"
    ef.run_pipeline("embeddings", out=out, bootstrap=ef.Bootstrap(resamples=100))
    summary = pl.read_parquet(out / "summary.parquet")
    corpus = ef.read_embeddings(SAMPLE / "corpus.parquet")
    queries = ef.read_embeddings(SAMPLE / "queries.parquet", min_vectors=1)
    run = ef.knn_run(dict(queries), dict(corpus), k=100)
    expected = ef.evaluate(run, ef.read_qrels(SAMPLE / "qrels.txt"), metrics=["recall@10", "ndcg@10", "mrr"], missing="zero").summary
    got = {(s, m): v for s, m, v in summary.select("system", "metric", "value").iter_rows()}
    for system, metric, value in expected.select("system", "metric", "value").iter_rows():
        assert got[(system, metric)] == pytest.approx(value, abs=1e-12)
    assert got[("healthy", "recall@100")] > got[("collapsed", "recall@100")]
    quality = pl.read_csv(out / "embedding_quality.csv")
    assert quality.filter(pl.col("metric") == "alignment")["value"].null_count() == 0
    assert {p.name for p in (out / "plots").iterdir()} >= {"embedding_spectrum.png", "recall_at_k.png"}


def test_run_embeddings_on_own_files_without_labels(own_files, tmp_path, capsys):
    """`--input` finds queries.parquet beside it; the missing label column is a note, not an error."""
    spec = tmp_path / "mine.yaml"
    text = (Path(ef.__file__).resolve().parents[1] / "pipelines" / "embeddings.yaml").read_text()
    spec.write_text(text.replace("columns: {}", "columns: {id: doc, vector: emb}").replace("resamples: 1000", "resamples: 50"))
    out = tmp_path / "o"
    code = main(["run", str(spec), "--input", str(own_files["corpus"]), "--gold", str(own_files["qrels"]), "--out", str(out), "-q"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "no label column `label`" in captured.err
    quality = pl.read_csv(out / "embedding_quality.csv")
    assert quality.filter(pl.col("metric") == "alignment")["value"].to_list() == [None]
    assert set(quality["model"]) == {"corpus"}


def test_bad_inputs_exit_2_and_write_nothing(own_files, tmp_path, capsys):
    bad = tmp_path / "bad.parquet"
    pl.DataFrame({"id": ["a", "b", "c"], "vector": [[1.0, 2.0], [1.0, float("nan")], [3.0]]}).write_parquet(bad)
    out = tmp_path / "never"
    fails(capsys, ["embeddings", "quality", str(bad), "--out", str(out)], str(bad), "row 3", "another length")
    assert not out.exists()
    fails(capsys, ["embeddings", "quality", str(own_files["corpus"])], "`id`", "is not a column")
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("first,second\nd1,d2\n")
    fails(capsys, ["embeddings", "quality", str(own_files["corpus"]), "--id", "doc", "--vector", "emb", "--pairs",
                   str(pairs)], "`id_a`", "is not a column of the pairs file")
    wrong_qrels = tmp_path / "wrong.txt"
    wrong_qrels.write_text("x1 0 d1 1\n")
    fails(capsys, ["embeddings", "retrieve", "--queries", str(own_files["queries"]), "--corpus", str(own_files["corpus"]),
                   "--qrels", str(wrong_qrels), "--id", "doc", "--vector", "emb", "--out", str(out)],
          "judge none of the queries")
    assert not out.exists()
    zero = tmp_path / "zero.npy"
    np.save(zero, np.array([[1.0, 0.0], [0.0, 0.0]]))
    fails(capsys, ["embeddings", "quality", str(zero)], "row 2", "zero vector")
    moved = tmp_path / "alone"
    moved.mkdir()
    shutil.copy(own_files["corpus"], moved / "corpus.parquet")
    spec = tmp_path / "p.yaml"
    text = (Path(ef.__file__).resolve().parents[1] / "pipelines" / "embeddings.yaml").read_text()
    spec.write_text(text.replace("queries: data_samples/embeddings/queries.parquet", "queries: nowhere.parquet")
                    .replace("columns: {}", "columns: {id: doc, vector: emb}"))
    fails(capsys, ["run", str(spec), "--input", str(moved / "corpus.parquet"), "--gold", str(own_files["qrels"]),
                   "--out", str(out)], "nowhere.parquet", "query embeddings not found")
    assert not out.exists()


def test_query_labels_are_slice_keys_of_the_retrieval_metrics():
    """The query file's label column slices the engine's metrics (per-topic recall)."""
    import yaml

    spec = yaml.safe_load((Path(ef.__file__).resolve().parents[1] / "pipelines" / "embeddings.yaml").read_text())
    spec |= {"slices": {"overall": [], "topic": ["query_label"]}, "bootstrap": None, "embedding_quality": None}
    spec = {key: value for key, value in spec.items() if value is not None}
    evaluation = ef.Pipeline.from_mapping(spec).run(SAMPLE / "corpus.parquet")
    rows = evaluation.summary.filter((pl.col("metric") == "recall@10") & (pl.col("grouping") == "topic"))
    queries = pl.read_parquet(SAMPLE / "queries.parquet").filter(pl.col("model") == "healthy")
    per_query = evaluation.per_query.filter((pl.col("metric") == "recall@10") & (pl.col("system") == "healthy"))
    joined = per_query.join(queries.select(query_id="id", label="label"), on="query_id")
    expected = dict(joined.group_by("label").agg(pl.col("value").mean()).iter_rows())
    got = dict(rows.filter(pl.col("system") == "healthy").select("query_label", "value").iter_rows())
    assert got.keys() == expected.keys() and len(got) == 20
    for label, value in expected.items():
        assert got[label] == pytest.approx(value)
