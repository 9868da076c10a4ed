"""Writing result folders: the one atomic writer, and the manifest that keeps users' files safe.

Every command that writes into a folder (``evalframe run --out``, ``ev.write()``,
``evalframe report``, ``evalframe gate``) writes through :func:`write_result` or
:func:`update_result`; a single file (``score --output``, ``compare --out``) through
:func:`write_file`.

**Atomic.** Every entry (a file, or a folder such as ``plots/``) is first written into a
temporary folder. Only when all are complete do they move into place (one ``rename`` of the
whole folder when the target does not exist yet; otherwise one ``rename`` per entry). A run that
fails while writing leaves no partial folder and the earlier result intact.

**Nothing of the user's is ever deleted.** The folder's manifest (:data:`MANIFEST`, a small
JSON file) lists the entries evalframe wrote there. :func:`write_result` replaces exactly those:
the earlier result's entries go, the new ones come, everything else stays. A folder that holds
other entries ("strangers": an input file, notes, a YAML) is refused with a
:class:`~evalframe.errors.ConfigError` (exit 2) naming a few of them, unless ``force=True``
(``--force``), which writes beside them and still deletes only evalframe's own entries. A
stranger with the name of an entry to write is refused even with ``force``: replacing it would
delete it. ``--out .`` follows the same rule.

A folder without a manifest whose ``run.json`` says an earlier evalframe wrote it (it has
``versions.evalframe``) is adopted: its entries with the names of a result folder's files
(:data:`RESULT_NAMES`, and the ``<table>.csv`` files its ``run.json`` lists) count as
evalframe's; any other entry is a stranger.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from evalframe.errors import ConfigError

#: The manifest file of a result folder: the entries evalframe wrote there.
MANIFEST = ".evalframe-manifest.json"
#: Prefix of the temporary entries the writer makes inside a folder (left over only by a killed run).
_TEMPORARY = ".evalframe-tmp-"
#: Names of the entries a result folder may hold (used to adopt a folder written before manifests).
RESULT_NAMES = frozenset({
    "per_query.parquet", "per_unit.parquet", "summary.parquet", "summary.csv", "summary.md", "run.json",
    "replicates.parquet", "curves.parquet", "report.md", "report.html", "report.tex", "report_tables.csv", "plots",
    "gate",
})
#: How many strangers an error names.
_SHOWN = 5

#: Writes one entry at the path it is given (a file, or a folder it creates).
Writer = Callable[[Path], None]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _temporary_folder(parent: Path, prefix: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    folder.chmod(0o777 & ~_umask())  # mkdtemp makes it private; outputs are ordinary files
    return folder


def read_manifest(folder: Path) -> set[str]:
    """The entries evalframe wrote in ``folder`` (the manifest's, else those of an adopted earlier
    result; module docstring); empty when neither."""
    manifest = folder / MANIFEST
    if manifest.is_file():
        try:
            return set(json.loads(manifest.read_text())["entries"])
        except (OSError, ValueError, KeyError, TypeError):
            raise ConfigError(f"{manifest}: not a manifest evalframe can read; remove it or choose another folder") from None
    try:
        info = json.loads((folder / "run.json").read_text())
    except (OSError, ValueError):
        return set()
    if not isinstance(info, dict) or "evalframe" not in (info.get("versions") or {}):
        return set()
    names = RESULT_NAMES | {f"{name}.csv" for name in info.get("result_tables") or []}
    return {entry.name for entry in folder.iterdir() if entry.name in names}


def _write_manifest(folder: Path, entries: Iterable[str]) -> None:
    text = json.dumps({"written_by": "evalframe", "entries": sorted(set(entries))}, indent=2) + "\n"
    write_file(folder / MANIFEST, lambda path: path.write_text(text))


def strangers(folder: Path) -> list[str]:
    """The entries of ``folder`` evalframe did not write (sorted); empty for a missing folder."""
    if not folder.is_dir():
        return []
    ours = read_manifest(folder)
    return sorted(entry.name for entry in folder.iterdir()
                  if entry.name != MANIFEST and entry.name not in ours and not entry.name.startswith(_TEMPORARY))


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def check_out_dir(out_dir: str | Path, *, force: bool = False, names: Iterable[str] = ()) -> None:
    """Refuse ``out_dir`` before anything is computed or written (module docstring): a file, a
    folder holding entries evalframe did not write (unless ``force``), or one whose stranger
    bears the name of an entry in ``names``. Raises :class:`~evalframe.errors.ConfigError`."""
    folder = Path(out_dir)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--out {out_dir}: is a file, not a folder")
    others = strangers(folder)
    clashing = sorted(set(others) & set(names))
    if clashing:
        raise ConfigError(f"--out {out_dir}: holds {_listed(clashing)}, which evalframe did not write and would have to "
                          "replace; move it away or choose another folder (even --force never deletes your files)")
    if others and not force:
        raise ConfigError(f"--out {out_dir}: the folder holds files evalframe did not write ({_listed(others)}); "
                          "choose a new or empty folder, or pass --force to write beside them "
                          "(only files an earlier evalframe run wrote there are ever replaced)")


def write_result(out_dir: str | Path, writers: Mapping[str, Writer], *, force: bool = False) -> Path:
    """Write a complete result into ``out_dir``: each ``name → writer`` entry, replacing the earlier
    result's entries (the manifest's) and nothing else (module docstring). Returns ``out_dir``."""
    folder = Path(out_dir)
    check_out_dir(folder, force=force, names=writers)
    if not folder.exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = _temporary_folder(folder.parent, f".{folder.name}{_TEMPORARY}")
        try:
            for name, write in writers.items():
                write(staging / name)
            _write_manifest(staging, writers)
            staging.rename(folder)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return folder
    _clear_leftovers(folder)
    _swap(folder, writers, retire=read_manifest(folder), keep=())
    return folder


def update_result(out_dir: str | Path, writers: Mapping[str, Writer]) -> Path:
    """Add or replace some entries of a folder (re-rendered report files, the gate's folder),
    keeping the others; an existing entry evalframe did not write is refused, never replaced."""
    folder = Path(out_dir)
    check_out_dir(folder, force=True, names=writers)
    folder.mkdir(parents=True, exist_ok=True)
    _clear_leftovers(folder)
    ours = read_manifest(folder)
    _swap(folder, writers, retire=ours & set(writers), keep=ours - set(writers))
    return folder


def _clear_leftovers(folder: Path) -> None:
    """Remove the temporary entries a killed run of evalframe left behind."""
    for entry in folder.iterdir():
        if entry.name.startswith(_TEMPORARY):
            shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)


def _swap(folder: Path, writers: Mapping[str, Writer], *, retire: set[str], keep: Iterable[str]) -> None:
    """Write ``writers`` into a temporary folder inside ``folder``; then move the ``retire`` entries
    aside, move the new ones in and write the manifest (``keep`` + the new entries). A failure
    while moving puts the earlier entries back."""
    staging = _temporary_folder(folder, _TEMPORARY)
    retired = _temporary_folder(folder, _TEMPORARY)
    moved_out: list[str] = []
    moved_in: list[str] = []
    try:
        for name, write in writers.items():
            write(staging / name)
        for name in sorted(retire):
            if (folder / name).exists() or (folder / name).is_symlink():
                (folder / name).rename(retired / name)
                moved_out.append(name)
        for name in writers:
            (staging / name).rename(folder / name)
            moved_in.append(name)
        _write_manifest(folder, [*keep, *writers])
    except BaseException:
        for name in moved_in:
            target = folder / name
            shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(missing_ok=True)
        for name in moved_out:
            (retired / name).rename(folder / name)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(retired, ignore_errors=True)


def write_file(path: str | Path, write: Writer) -> Path:
    """Write one file atomically: ``write`` fills a temporary file beside ``path``, which then
    replaces ``path`` in one rename (a failure leaves the earlier file whole)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    try:
        write(Path(temporary))
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
