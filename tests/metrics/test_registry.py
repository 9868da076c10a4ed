"""The metric registry: the name grammar, aliases, canonical names and its errors."""

from __future__ import annotations

import re

import pytest

import evalframe as ef
from evalframe.cli import main
from evalframe.metrics import available, resolve_all
from evalframe.metrics.registry import MetricSpec


@pytest.mark.parametrize(
    ("text", "expected", "canonical"),
    [
        ("recall@5", ef.RecallAtK(5), "recall@5"),
        ("P@5", ef.PrecisionAtK(5), "precision@5"),
        ("p@5", ef.PrecisionAtK(5), "precision@5"),
        ("Precision@5", ef.PrecisionAtK(5), "precision@5"),
        ("precision@5(denominator=retrieved)", ef.PrecisionAtK(5, denominator="retrieved"),
         "precision@5(denominator=retrieved)"),
        ("ndcg@10(gain=linear)", ef.NDCGAtK(10, gain="linear"), "ndcg@10(gain=linear)"),
        ("ndcg@10( gain = linear )", ef.NDCGAtK(10, gain="linear"), "ndcg@10(gain=linear)"),
        ("ndcg@10(gain=exponential)", ef.NDCGAtK(10), "ndcg@10"),
        ("ndcg@k=10", ef.NDCGAtK(10), "ndcg@10"),
        ("ndcg", ef.NDCGAtK(), "ndcg"),
        ("map@100", ef.MeanAveragePrecision(100), "map@100"),
        ("map", ef.MeanAveragePrecision(), "map"),
        ("map(denominator=retrieved)", ef.MeanAveragePrecision(denominator="retrieved"), "map(denominator=retrieved)"),
        ("mrr", ef.MRRAtK(), "mrr"),
        ("mrr@10", ef.MRRAtK(10), "mrr@10"),
        ("recip_rank", ef.MRRAtK(), "mrr"),
        ("hit_rate@3", ef.HitRateAtK(3), "hit_rate@3"),
        ("success@3", ef.HitRateAtK(3), "hit_rate@3"),
        ("r_precision", ef.RPrecision(), "r_precision"),
        ("Rprec", ef.RPrecision(), "r_precision"),
        ("num_ret", ef.NumRetrieved(), "num_ret"),
        ("num_rel", ef.NumRelevant(), "num_rel"),
        ("num_rel_ret", ef.NumRelevantRetrieved(), "num_rel_ret"),
        ("  recall@20  ", ef.RecallAtK(20), "recall@20"),
    ],
)
def test_parse(text, expected, canonical):
    metric = ef.resolve_metric(text)
    assert metric == expected
    assert type(metric) is type(expected)
    assert metric.name == canonical
    assert str(metric) == canonical


def test_resolving_a_metric_object_returns_it():
    metric = ef.NDCGAtK(5, gain="linear")
    assert ef.resolve_metric(metric) is metric


#: Sample values for parameters without a list of choices, by type.
SAMPLES = {int: (7, 13), float: (0.25, 0.1), str: ()}


def _instances(spec: MetricSpec) -> list[ef.Metric]:
    """The spec's metric with defaults and with sample values / every choice of every parameter."""
    at_param = spec.param(spec.at) if spec.at is not None else None
    at_values = (at_param.choices or SAMPLES[at_param.kind]) if at_param is not None else ()
    base = {spec.at: at_values[0]} if at_param is not None and spec.at_required else {}
    variants = [base]
    for param in spec.params:
        for value in param.choices or SAMPLES[param.kind]:
            variants.append({**base, param.name: value})
    # Parameters that only come together (the gate's tau_neg and tau_pos): all of them at once.
    free = [param for param in spec.params if param.choices is None and SAMPLES[param.kind]]
    together = [{**base, **{param.name: SAMPLES[param.kind][i] for param in free}} for i in (0, 1)] if len(free) > 1 else []
    built = []
    for options in variants:
        try:
            built.append(spec.build(**options))
        except ef.ConfigError:
            assert together, f"`{spec.name}` rejects {options}"
    for options in together:
        try:
            built.append(spec.build(**options))
        except ef.ConfigError:
            pass
    return list(dict.fromkeys(built))


def _upper_name(text: str) -> str:
    """Upper-case the metric's name only (parameter names and values are case-sensitive)."""
    name, rest = re.match(r"([A-Za-z0-9_]+)(.*)", text).groups()
    return name.upper() + rest


@pytest.mark.parametrize("spec", available(), ids=lambda spec: spec.name)
def test_canonical_name_round_trip(spec):
    instances = _instances(spec)
    assert len({metric.name for metric in instances}) == len(instances), "different metrics need different names"
    for metric in instances:
        again = ef.resolve_metric(metric.name)
        assert again == metric, metric.name
        assert type(again) is type(metric)
        assert again.name == metric.name
        assert ef.resolve_metric(_upper_name(metric.name)) == metric
        for alias in spec.aliases:
            aliased = alias + metric.name[len(spec.name):]
            assert ef.resolve_metric(aliased) == metric, aliased


def test_registry_lists_the_ranking_metrics_once():
    names = [spec.name for spec in available()]
    assert len(names) == len(set(names))
    expected = {"recall", "precision", "hit_rate", "mrr", "map", "ndcg", "r_precision", "num_ret", "num_rel",
                "num_rel_ret"}
    assert expected <= set(names)
    aliases = [alias.lower() for spec in available() for alias in spec.aliases]
    assert len(aliases) == len(set(aliases))
    assert not set(aliases) & {name.lower() for name in names}


def test_resolve_all_drops_repeats_and_keeps_order():
    metrics = resolve_all(["P@5", "mrr", "precision@5", ef.PrecisionAtK(5), "recip_rank", "ndcg@3"])
    assert [m.name for m in metrics] == ["precision@5", "mrr", "ndcg@3"]


@pytest.mark.parametrize(
    ("text", "suggestion"),
    [
        ("ndgc@10", "`ndcg`"),
        ("recal@5", "`recall`"),
        ("precison@5", "`precision`"),
        ("mrr_at", "`mrr`"),
        ("hit_rat@5", "`hit_rate`"),
    ],
)
def test_unknown_name_suggests_a_close_one(text, suggestion):
    with pytest.raises(ef.ConfigError) as error:
        ef.resolve_metric(text)
    message = str(error.value)
    assert "unknown metric" in message
    assert "did you mean" in message
    assert suggestion in message


def test_unknown_name_without_close_match():
    with pytest.raises(ef.ConfigError, match="unknown metric `zzzzqqq`"):
        ef.resolve_metric("zzzzqqq@5")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("recall", "needs a cutoff"),
        ("recall@x", "must be int"),
        ("recall@0", ">= 1"),
        ("recall@-3", ">= 1"),
        ("P@2.5", "must be int"),
        ("ndcg@10(gain=cubic)", "must be one of"),
        ("precision@5(denominator=all)", "must be one of"),
        ("map@5(denominator=k)", "must be one of"),
        ("ndcg@10(foo=1)", "no parameter `foo`"),
        ("ndcg@10(gain)", "key=value"),
        ("num_ret@5", "takes no `@` cutoff"),
        ("r_precision@5", "takes no `@` cutoff"),
        ("ndcg@10(gain=linear", "cannot parse"),
        ("recall@5 extra", "cannot parse"),
        ("", "cannot parse"),
    ],
)
def test_bad_metric_strings_are_config_errors(text, fragment):
    with pytest.raises(ef.ConfigError) as error:
        ef.resolve_metric(text)
    assert fragment in str(error.value)


def test_metrics_command_lists_every_registered_metric(capsys):
    assert main(["metrics"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    lines = captured.out.splitlines()
    listed = {line.split()[0] for line in lines if line and not line[0].isspace() and not line.startswith("#")}
    assert listed == {spec.name for spec in available()}
    # Grouped by target category (seed 000 §2.1), each heading once, in the taxonomy's order.
    headings = [line[2:] for line in lines if line.startswith("# ")]
    assert headings[:2] == ["retrieval_relevance", "retrieval_accuracy"] and len(headings) == len(set(headings))
    assert {"generation_correctness", "noise_robustness", "latency", "diversity"} <= set(headings)
    assert "gain=exponential" in captured.out and "linear" in captured.out


# --- looking a name up without importing every family (issue 22, start-up) -----------------------


def test_a_name_looked_up_before_the_table_is_built_is_the_tables_spec():
    from evalframe.metrics import registry

    table = dict(registry._specs())  # every family imported
    registry._specs.cache_clear()
    try:
        found = {key: registry._lookup(key.upper()) for key in table}  # from the imported families' SPECS
        assert registry._specs.cache_info().currsize == 0  # none of them needed the table
        assert all(found[key] is spec for key, spec in table.items())
        assert registry._lookup("no_such_metric") is None  # an unknown name builds the table, which says no
        assert registry._specs.cache_info().currsize == 1
    finally:
        registry._specs.cache_clear()


def test_with_a_plugin_family_installed_a_clash_is_still_reported(monkeypatch):
    import sys
    import types

    from evalframe.errors import ConfigError
    from evalframe.metrics import registry
    from evalframe.metrics.retrieval_basic import RecallAtK

    plugin = types.ModuleType("evalframe_test_plugin_family")
    plugin.SPECS = [MetricSpec("recall", RecallAtK, at="k", at_required=True)]
    monkeypatch.setitem(sys.modules, plugin.__name__, plugin)
    monkeypatch.setattr(registry, "_plugin_modules", lambda: (plugin.__name__,))
    registry._specs.cache_clear()
    try:
        with pytest.raises(ConfigError, match="metric name `recall` is registered twice"):
            ef.resolve_metric("recall@5")  # `recall` is in an imported family, yet the whole table is read
    finally:
        registry._specs.cache_clear()


def test_the_ranking_metrics_resolve_without_the_other_families_or_numpy():
    import subprocess
    import sys

    code = ("import sys, evalframe as ef\n"
            "[ef.resolve_metric(m) for m in ('recall@5', 'P@5', 'ndcg@10(gain=linear)', 'map@100', 'mrr', 'hit_rate@10')]\n"
            "print(','.join(sorted(m for m in sys.modules if m.startswith('evalframe.metrics.') or m == 'numpy')))")
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert "numpy" not in imported.split(",") and "evalframe.metrics.lexical" not in imported
    assert "evalframe.metrics.retrieval_ranking" in imported
