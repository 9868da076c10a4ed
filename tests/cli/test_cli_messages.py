"""Messages that point at the fix (issue 20, part 5): YAML syntax errors as file:line:col, Ctrl-C,
a missing column's mapping hint, `validate --map`, identical per-line errors said once, swapped
run and qrels, one message per bad parameter, a misspelt fold column."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from evalframe.cli import main

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data_samples" / "per_query.csv"
QRELS = REPO / "data_samples" / "trec" / "qrels.txt"
RUN = REPO / "data_samples" / "trec" / "run_bm25.txt"
PIPELINE = yaml.safe_load((REPO / "pipelines" / "evidence_contract.yaml").read_text())


def _error(capsys) -> str:
    return capsys.readouterr().err


def test_a_yaml_syntax_error_is_file_line_column_without_pyyaml_internals(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nname: x\nmetrics:\n  - names: [auroc\n  - subset: b\n")
    assert main(["check-pipeline", str(bad)]) == 2
    err = _error(capsys)
    assert err.startswith(f"evalframe: error: {bad}:5:11: YAML syntax error: expected ',' or ']', but got ':'")
    assert "<unicode string>" not in err and "^" not in err and len(err.splitlines()) == 1


def test_ctrl_c_prints_one_line_exits_130_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    spec = {"version": 1, "name": "tiny", "input": {"path": str(SAMPLE)},
            "metrics": [{"names": ["auroc"]}], "outputs": ["summary.csv", "summary.md"]}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(spec))
    import evalframe.report.outputs as outputs

    def interrupted(evaluation):
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs, "render_markdown", interrupted)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "-q"]) == 130
    assert _error(capsys).splitlines() == ["evalframe: interrupted (Ctrl-C); nothing written"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.yaml"]  # no output, no staging folder


def test_a_missing_column_says_how_to_map_it(tmp_path, capsys):
    renamed = tmp_path / "renamed.csv"
    renamed.write_text(SAMPLE.read_text().replace("p_has_evidence", "prob", 1))
    assert main(["validate", "--schema", "per_query", str(renamed)]) == 2
    err = _error(capsys)
    assert "column `p_has_evidence`: required column is missing" in err
    assert ("hint: if your file names it differently, map it: `input: {columns: {p_has_evidence: prob}}` in a pipeline, "
            "`--set input.columns.p_has_evidence=prob` for `evalframe run`, `--map p_has_evidence=prob` for "
            "`evalframe validate`") in err
    assert main(["validate", "--schema", "per_query", str(renamed), "--map", "p_has_evidence=prob"]) == 0
    assert main(["validate", "--schema", "per_query", str(renamed), "--map", "p_has_evidence"]) == 2
    assert "expected CONTRACT=YOURS" in _error(capsys)


def test_identical_per_line_errors_are_said_once_with_a_count(tmp_path, capsys):
    five = tmp_path / "run5.txt"
    five.write_text("".join(" ".join(line.split()[:5]) + "\n" for line in RUN.read_text().splitlines()[:40]))
    assert main(["trec", str(QRELS), str(five)]) == 2
    lines = _error(capsys).splitlines()
    assert lines == [
        f"evalframe: error: {five}: 40 problems",
        "  lines 1, 2, 3, 4, 5, … (40 lines): expected 6 fields (query_id q0 doc_id trec_rank score system), found 5 "
        "(first value: '401 Q0 FT944-38939 1 20.401')",
    ]


def test_swapped_run_and_qrels_get_a_hint(capsys):
    assert main(["trec", str(RUN), str(QRELS)]) == 2
    err = _error(capsys)
    assert "hint: its lines have the 4 fields of a qrels file" in err and "are the qrels and the run swapped?" in err
    assert len(err.splitlines()) == 3


def test_a_bad_parameter_is_one_message_listing_the_metrics_it_affects(tmp_path, capsys):
    spec = {**PIPELINE, "parameters": {**PIPELINE["parameters"], "threshold": 1.5}}
    path = tmp_path / "threshold.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    assert main(["check-pipeline", str(path)]) == 2
    assert _error(capsys).splitlines() == [
        f"evalframe: error: {path}: 1 problem",
        "  parameters.threshold: needs a threshold in [0, 1], got 1.5 (read by `tp`, `tn`, `fp`, `fn`, `sensitivity`, "
        "`specificity`, … (19 in all))",
    ]


def test_a_misspelt_fold_column_is_named(tmp_path, capsys):
    spec = {**PIPELINE, "slices": {**PIPELINE["slices"], "fold": ["folds"]}}
    path = tmp_path / "folds.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    assert main(["check-pipeline", str(path)]) == 2
    err = _error(capsys)
    assert "across_folds: needs a slice that groups by [fold] alone (slice `fold` groups by `folds`" in err
    assert "write `across_folds: folds`; else group that slice by `fold`" in err


@pytest.mark.parametrize("pairs", [["a=b", "c = d"]])
def test_map_pairs(pairs):
    from evalframe.cli.validate import _mapping

    assert _mapping(pairs) == {"a": "b", "c": "d"}
