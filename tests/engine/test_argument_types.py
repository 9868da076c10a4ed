"""Wrong argument types at the engine's door are ConfigErrors naming the argument (issue 21 part 5),
never a TypeError or AttributeError from deep inside."""

from __future__ import annotations

import polars as pl
import pytest

import evalframe as ef

QUERIES = pl.DataFrame({"query_id": ["a", "b"], "label": [1, 0], "prob": [0.9, 0.2]})
TABLES = ef.Tables(queries=QUERIES, judgments=pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String,
                                                                    "relevance": pl.Int64}))


@pytest.mark.parametrize(("arguments", "fragment"), [
    ({"metrics": 5}, "`metrics` must be a list of metric names"),
    ({"metrics": "brier"}, "`metrics` must be a list of metric names"),
    ({"metrics": [5]}, "`metrics` lists 5"),
    ({"metrics": {"all_queries": [None]}}, "`metrics['all_queries']` lists None"),
    ({"metrics": ["brier"], "slices": 5}, "`slices` must be a mapping"),
    ({"metrics": ["brier"], "slices": {"g": 5}}, "`slices['g']` must be a list of column names"),
    ({"metrics": ["brier"], "slices": {"g": "label"}}, "`slices['g']` must be a list of column names"),
    ({"metrics": ["brier"], "slices": {"g": ["label", "label"]}}, "`slices['g']` must name each column once and not `system`"),
    ({"metrics": ["brier"], "slices": {"g": ["system", "label"]}}, "`slices['g']` must name each column once and not `system`"),
    ({"metrics": ["brier"], "slices": {"g": ["n_units"]}}, "`slices['g']` names 'n_units', a column the summary or its partials make"),
    ({"metrics": ["brier"], "grouping_sets": {"g": ["fold", "flagged"]}}, "`slices['g']` names 'flagged', a column the summary or its partials make"),
    # The summary's interval and label columns (a slice `se` was an internal DuplicateError with a
    # bootstrap; a slice `target` was overwritten by the metrics' categories, exit 0).
    ({"metrics": ["brier"], "slices": {"g": ["se"]}}, "`slices['g']` names 'se', a column the summary or its partials make"),
    ({"metrics": ["brier"], "slices": {"g": ["target"]}}, "`slices['g']` names 'target', a column the summary or its partials make"),
    ({"metrics": ["brier"], "subsets": ["x"]}, "`subsets` must be a mapping"),
    ({"metrics": ["brier"], "units": 5}, "`units` must be a mapping"),
    ({"metrics": ["brier"], "parameters": 0.5}, "`parameters` must be a mapping"),
])
def test_evaluate_names_the_argument_of_a_wrong_type(arguments, fragment):
    with pytest.raises(ef.ConfigError, match=None) as error:
        ef.evaluate(TABLES, **arguments)
    assert fragment in str(error.value)


@pytest.mark.parametrize("value", [3, None, 1.5])
def test_resolving_a_non_string_is_a_config_error(value):
    with pytest.raises(ef.ConfigError, match="a metric is a name such as"):
        ef.resolve_metric(value)


@pytest.mark.parametrize(("call", "fragment"), [
    (lambda: ef.run_pipeline(5), "the pipeline (a YAML file or a bundled pipeline's name) must be a path"),
    (lambda: ef.load_pipeline(None), "the pipeline (a YAML file or a bundled pipeline's name) must be a path"),
    (lambda: ef.run_pipeline("evidence_contract", input=5), "`input` must be a path"),
    (lambda: ef.load(5), "the result folder must be a path"),
    (lambda: ef.check(5), "check() takes an evaluation"),
])
def test_the_other_doors_name_a_wrong_type_too(call, fragment):
    with pytest.raises(ef.ConfigError) as error:
        call()
    assert fragment in str(error.value)


def test_a_plan_built_without_evaluate_checks_its_slice_keys_too():
    """A pipeline file builds its :class:`Plan` itself: a slice key named like a column the summary
    makes is the same configuration error there (it was an internal DuplicateError, exit 3)."""
    from evalframe.engine.plan import Plan, build_groups

    with pytest.raises(ef.ConfigError, match="`slices\\['s'\\]` names 'n_units', a column the summary"):
        Plan(groups=build_groups(["brier"], None), slices={"overall": (), "s": ("fold", "n_units")})
