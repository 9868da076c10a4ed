"""Unmatched query ids between a run and its qrels: an error a user can act on (issue 9, part 3).

How many of how many judged queries each system lacks, that the run's topics are all unjudged,
a few ids of each side with their quotes ('0401' in the run, '401' in the qrels), a hint about
zero-padding or another id column, the run file's path, and the `-c` / `missing="zero"` way out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import evalframe as ef
from evalframe.cli import main as cli_main


def write_pair(tmp_path: Path, run_ids, qrels_ids) -> tuple[Path, Path]:
    run = tmp_path / "bm25.run"
    run.write_text("".join(f"{q} Q0 d{i} 1 1.0 bm25\n" for i, q in enumerate(run_ids)))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 d{i} 1\n" for i, q in enumerate(qrels_ids)))
    return run, qrels


def error_text(run, qrels, **options) -> str:
    with pytest.raises(ef.InputError) as caught:
        ef.evaluate(run, qrels, ["map"], **options)
    return str(caught.value)


def test_zero_padded_run_ids_say_counts_examples_padding_and_the_way_out(tmp_path):
    run, qrels = write_pair(tmp_path, [f"0{i}" for i in range(401, 451)], [str(i) for i in range(401, 451)])
    text = error_text(str(run), str(qrels))
    assert text.startswith(f"{run}: ")  # the run file by its path
    assert "50 of 50 judged queries have no ranking from system 'bm25': '401', '402', '403', …" in text
    assert "the run's 50 queries are all unjudged: none of its query ids is in the qrels ('0401', '0402', '0403', …)" in text
    assert "zero-padding ('0401' in the run, '401' in the qrels)" in text
    assert "stripping leading zeros would match 50 of them" in text
    assert "`-c`" in text and 'missing="zero"' in text


def test_most_topics_missing_counts_them_and_names_the_unjudged_run_ids(tmp_path):
    run_ids = [str(i) for i in range(401, 404)] + ["0404", "0405"]
    run, qrels = write_pair(tmp_path, run_ids, [str(i) for i in range(401, 411)])
    text = error_text(run, qrels)
    assert "7 of 10 judged queries have no ranking from system 'bm25': '404', '405', '406', …" in text
    assert "2 of the run's 5 query ids are not in the qrels: '0404', '0405'" in text
    assert "stripping leading zeros would match 2 of them" in text


def test_ids_with_nothing_in_common_hint_at_another_id_column(tmp_path):
    run, qrels = write_pair(tmp_path, ["T1", "T2"], ["401", "402"])
    text = error_text(run, qrels)
    assert "share no query id" in text and "column" in text
    assert "zero-padding" not in text


def test_a_few_missing_topics_need_no_spelling_hint(tmp_path):
    run, qrels = write_pair(tmp_path, ["1", "2"], ["1", "2", "3"])
    text = error_text(run, qrels)
    assert "1 of 3 judged queries have no ranking from system 'bm25': '3'" in text
    assert "unjudged" not in text and "zero-padding" not in text and "share no" not in text
    result = ef.evaluate(str(run), str(qrels), ["map"], missing="zero")
    assert result.summary.get_column("n").item() == 3


def test_examples_are_in_natural_order(tmp_path):
    run, qrels = write_pair(tmp_path, ["x"], [f"q{i}" for i in (10, 2, 1, 30)])
    assert "'q1', 'q2', 'q10', …" in error_text(run, qrels)


def test_trec_command_names_the_run_file_and_exits_2(tmp_path, capsys):
    run, qrels = write_pair(tmp_path, [f"0{i}" for i in range(401, 404)], [str(i) for i in range(401, 404)])
    status = cli_main(["trec", str(qrels), str(run), "-m", "map"])
    err = capsys.readouterr().err
    assert status == 2
    assert f"{run}: " in err and "'0401' in the run, '401' in the qrels" in err and "`-c`" in err
