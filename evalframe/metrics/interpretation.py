"""What each registered metric means for a clinician or product reader (contract §10.2).

A metric's one-line interpretation and the kind of number it is are declared with the metric,
on its registry entry (:class:`~evalframe.metrics.registry.MetricSpec` ``meaning=`` and
``kind=``, in the family module's ``SPECS``, or ``ef.register_metric`` for a metric of one's
own); this module only reads them. Reports (:mod:`evalframe.report.tables`), the terminal
summary and ``evalframe compare`` go through :func:`describe`. The text is a template filled
with the metric's parameters (``{k}``, ``{fpr}``, ``{threshold}``, ``{bins}``), so
``recall@5`` reads "… in the top 5".

``kind`` says how a value is printed (:func:`evalframe.report.formatting.format_number`):

- ``rate``: a proportion in [0, 1] (may be shown as a percentage);
- ``score``: any other real number (AUROC, nDCG, MCC, Brier, ECE);
- ``count``: a number of units (integer when whole).

A spec without ``meaning`` falls back to the first line of the metric's docstring and the kind
``score`` (``count`` for a summed metric); ``tests/report/test_report_tables.py`` checks that
every bundled metric has a meaning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
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


class _RegisteredMeanings(Mapping[str, tuple[str, Kind]]):
    """Registered metric name → ``(template, kind)``, read from the registry each time: a view of
    the specs' ``meaning`` and ``kind``, never a second list (a metric registered at run time
    with a meaning is in it too)."""

    def _table(self) -> dict[str, tuple[str, Kind]]:
        from evalframe.metrics.registry import available

        return {spec.name: (spec.meaning, spec.kind or "score") for spec in available() if spec.meaning}

    def __getitem__(self, name: str) -> tuple[str, Kind]:
        return self._table()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


#: Every registered metric's interpretation template and kind (a view of the registry).
INTERPRETATIONS: Mapping[str, tuple[str, Kind]] = _RegisteredMeanings()


def registered_name(metric: Metric) -> str | None:
    """The registry name of ``metric``'s spec (``recall`` for ``recall@5``); None if unregistered."""
    from evalframe.metrics.registry import spec_of

    spec = spec_of(metric)
    return spec.name if spec is not None else None


def describe(metric: Metric) -> Interpretation:
    """``metric``'s interpretation with its parameters filled in: its spec's ``meaning`` and
    ``kind`` (every bundled spec has them; :func:`evalframe.metrics.registry.register_metric`
    takes them too), else the first line of its docstring."""
    from evalframe.metrics.registry import spec_of

    spec = spec_of(metric)
    if spec is None or not spec.meaning:
        first_line = (type(metric).__doc__ or metric.name).strip().splitlines()[0]
        kind: Kind = "count" if metric.summary == "sum" else "score"
        return Interpretation(first_line, kind, metric.higher_is_better)
    template, kind = spec.meaning, spec.kind or "score"
    fields = dataclasses.asdict(metric) if dataclasses.is_dataclass(metric) else {}
    # A rate parameter also reads as a percentage: ``{fpr_pct}`` is "1%" for fpr = 0.01.
    fields |= {f"{name}_pct": f"{value * 100:g}%" for name, value in fields.items() if isinstance(value, float)}
    return Interpretation(template.format(**fields), kind, metric.higher_is_better)
