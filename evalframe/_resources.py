"""Where the bundled declarative files (table contracts, pipelines) live.

In a wheel they are copied into ``evalframe/_bundled/``; in a checkout (editable install)
they are the top-level ``schemas/`` and ``pipelines/`` folders next to the package.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def bundled_dir(name: str) -> Path:
    """Return the folder of bundled files called ``name`` ("schemas", "pipelines", "data_samples")."""
    for candidate in (_PACKAGE_DIR / "_bundled" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    msg = f"bundled folder `{name}` not found next to the evalframe package ({_PACKAGE_DIR})"
    raise FileNotFoundError(msg)


def bundled_pipelines() -> dict[str, Path]:
    """Name → path of every bundled pipeline (``evidence_contract`` → ``…/evidence_contract.yaml``), by name."""
    return {path.stem: path for path in sorted(bundled_dir("pipelines").glob("*.yaml"))}
