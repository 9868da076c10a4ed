"""Table contracts as data: the declarative YAML files in ``schemas/`` and their pandera schemas.

A contract file names a table's columns (dtype, required, nullable, default, checks), its
composite key (``unique``), column groups of which at least one must be present
(``require_any_of``) and cross-column ``rules`` (applied by :mod:`evalframe.data.conform`).

Checks vocabulary (``checks:`` mapping of a column): ``ge``, ``gt``, ``le``, ``lt`` (bounds),
``isin`` (allowed values), ``finite`` (no NaN or infinity). Each word is defined once, as a
Polars expression (:data:`CHECKS`); pandera's Polars backend validates with it
(:func:`to_pandera`) and the conform step's screen runs the same expressions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import polars as pl
import yaml

from evalframe._resources import bundled_dir
from evalframe.errors import ConfigError

#: The kinds of cross-column rule a contract may declare (applied by :mod:`evalframe.data.conform`).
RULE_KINDS = ("determines", "non_empty_when", "same_length", "non_increasing", "items_within")

#: Contract dtype names and the Polars dtypes they stand for.
DTYPES: dict[str, pl.DataType] = {
    "string": pl.String(),
    "int": pl.Int64(),
    "float": pl.Float64(),
    "bool": pl.Boolean(),
    "list[string]": pl.List(pl.String()),
    "list[float]": pl.List(pl.Float64()),
}


@dataclass(frozen=True)
class ColumnContract:
    name: str
    dtype: str
    required: bool = True
    nullable: bool = False
    default: Any = None
    checks: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    @property
    def polars_dtype(self) -> pl.DataType:
        return DTYPES[self.dtype]


@dataclass(frozen=True)
class Contract:
    """A table contract read from ``schemas/<table>.yaml``."""

    table: str
    columns: dict[str, ColumnContract]
    unique: tuple[str, ...] = ()
    unique_message: str = "duplicate key"
    require_any_of: tuple[tuple[tuple[str, ...], str], ...] = ()
    rules: tuple[Mapping[str, Any], ...] = ()
    description: str = ""

    @classmethod
    def from_mapping(cls, spec: Mapping[str, Any], *, origin: str) -> Contract:
        if spec.get("version") != 1:
            msg = f"{origin}: unsupported contract version {spec.get('version')!r} (expected 1)"
            raise ConfigError(msg)
        columns = {}
        for name, column_spec in (spec.get("columns") or {}).items():
            column_spec = dict(column_spec or {})
            dtype = column_spec.pop("dtype", None)
            if dtype not in DTYPES:
                msg = f"{origin}: column `{name}` has unknown dtype {dtype!r}; known: {sorted(DTYPES)}"
                raise ConfigError(msg)
            unknown_checks = set(column_spec.get("checks") or {}) - set(CHECKS)
            if unknown_checks:
                msg = f"{origin}: column `{name}` has unknown checks {sorted(unknown_checks)}"
                raise ConfigError(msg)
            columns[name] = ColumnContract(
                name=name,
                dtype=dtype,
                required=column_spec.get("required", True),
                nullable=column_spec.get("nullable", False),
                default=column_spec.get("default"),
                checks=column_spec.get("checks") or {},
                description=column_spec.get("description", ""),
            )
        unique = spec.get("unique") or {}
        for rule in spec.get("rules") or ():
            if rule.get("kind") not in RULE_KINDS:
                msg = f"{origin}: unknown rule kind {rule.get('kind')!r}; known: {sorted(RULE_KINDS)}"
                raise ConfigError(msg)
        return cls(
            table=spec["table"],
            columns=columns,
            unique=tuple(unique.get("columns", ())),
            unique_message=unique.get("message", "duplicate key"),
            require_any_of=tuple(
                (tuple(group["columns"]), group.get("message", "")) for group in spec.get("require_any_of", ())
            ),
            rules=tuple(spec.get("rules") or ()),
            description=spec.get("description", ""),
        )

    def extend(self, columns: Mapping[str, ColumnContract]) -> Contract:
        """Return a copy that also knows ``columns`` (e.g. slice keys a pipeline declares)."""
        return Contract(
            table=self.table,
            columns={**self.columns, **columns},
            unique=self.unique,
            unique_message=self.unique_message,
            require_any_of=self.require_any_of,
            rules=self.rules,
            description=self.description,
        )


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` through libyaml when it is installed (several times faster).

    A document libyaml rejects is parsed again by the pure-Python loader, whose messages
    show the offending line, so errors read the same either way.
    """
    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        try:
            return yaml.load(text, Loader=fast)  # noqa: S506 (a safe loader)
        except yaml.YAMLError:
            pass
    return yaml.safe_load(text)


@cache
def load_contract(table: str) -> Contract:
    """Load the bundled contract of ``table`` (``ranking``, ``judgments``, ``queries``, ...)."""
    path = bundled_dir("schemas") / f"{table}.yaml"
    spec = load_yaml(path.read_text()) if path.is_file() else None
    if not isinstance(spec, Mapping) or "table" not in spec:  # e.g. schemas/pipeline.yaml is a format
        msg = f"no table contract named `{table}` in {path.parent}"
        raise ConfigError(msg)
    return Contract.from_mapping(spec, origin=str(path))



#: Each check word of a contract: the Polars expression that holds for a passing value (None: the
#: check is off) and the message of a failing one. The one definition of each rule: pandera
#: validates with it (:func:`to_pandera`, a check of its Polars backend) and the screen runs the
#: same expressions in one pass (:func:`passes_screen`). A null passes (pandera's ``ignore_na``).
CHECKS: dict[str, tuple[Callable[[pl.Expr, Any], pl.Expr | None], Callable[[Any], str]]] = {
    "ge": (lambda column, v: column >= v, lambda v: f"is below the minimum {v}"),
    "gt": (lambda column, v: column > v, lambda v: f"must be greater than {v}"),
    "le": (lambda column, v: column <= v, lambda v: f"is above the maximum {v}"),
    "lt": (lambda column, v: column < v, lambda v: f"must be less than {v}"),
    "isin": (lambda column, v: column.is_in(list(v)), lambda v: f"is not one of {list(v)}"),
    "finite": (lambda column, enabled: column.is_finite() if enabled else None, lambda _: "is not a finite number"),
}


def check_passes(word: str, column: pl.Expr, argument: Any) -> pl.Expr | None:
    """Where the value of ``column`` passes the check ``word`` (nulls pass); None: check off."""
    passes = CHECKS[word][0](column, argument)
    return None if passes is None else passes.fill_null(True)


def _pandera_check(pa, word: str, argument: Any):
    """The pandera check of ``word``: :func:`check_passes` run by pandera's Polars backend."""
    if check_passes(word, pl.col("_"), argument) is None:
        return None
    return pa.Check(
        lambda data: data.lazyframe.select(check_passes(word, pl.col(data.key), argument)),
        name=word,
        error=CHECKS[word][1](argument),
    )


def to_pandera(contract: Contract, present: set[str]):
    """Build the pandera ``DataFrameSchema`` of ``contract`` for the columns present."""
    import warnings

    with warnings.catch_warnings():
        # pandera's first import tries `pyspark.pandas` when pyspark is installed (the `spark`
        # extra), which warns about pandas >= 3; evalframe validates Polars frames only.
        warnings.filterwarnings("ignore", message=".*PySpark does not yet fully support pandas", category=FutureWarning)
        import pandera.polars as pa

    columns = {}
    for name, column in contract.columns.items():
        if name not in present:
            continue
        checks = [
            check
            for word, argument in column.checks.items()
            if (check := _pandera_check(pa, word, argument)) is not None
        ]
        columns[name] = pa.Column(column.polars_dtype, checks=checks, nullable=column.nullable)
    unique = [name for name in contract.unique if name in present] or None
    return pa.DataFrameSchema(columns, unique=unique, strict=False, name=contract.table)


