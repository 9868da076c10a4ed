"""Table contracts (DESIGN §2): the public face of three modules of one job each.

- :mod:`evalframe.data.schema`: contracts as data (``schemas/*.yaml``) and their pandera schemas;
- :mod:`evalframe.data.conform`: applying a contract to a frame (casts, screen, pandera, rules);
- :mod:`evalframe.data.messages`: how each problem is worded (location, column, value).
"""

from __future__ import annotations

from evalframe.data.conform import cast_if_clean, conform, conform_with, passes_screen
from evalframe.data.messages import Locate, locate_rows
from evalframe.data.schema import CHECKS, DTYPES, RULE_KINDS, ColumnContract, Contract, load_contract, load_yaml, to_pandera

__all__ = [
    "CHECKS", "DTYPES", "RULE_KINDS", "ColumnContract", "Contract", "Locate", "cast_if_clean", "conform", "conform_with",
    "load_contract", "load_yaml",
    "locate_rows", "passes_screen", "to_pandera",
]
