"""Work on the machine's cores (``evalframe._threads``) and progress on stderr (``evalframe._progress``):
a caller's quiet flag holds on every thread its work runs on."""

from __future__ import annotations

import io
import threading

import pytest

from evalframe import _progress, _threads


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal(monkeypatch) -> Terminal:
    """A terminal for stderr (set in the test's body: pytest's capture takes stderr back after the
    fixtures), bars shown at once, two cores (whatever the runner has), not quiet."""
    found = Terminal()
    monkeypatch.setattr(_progress, "DELAY", -1.0)  # shown at once, whatever the clock's resolution
    monkeypatch.setattr(_progress, "_QUIET", False)  # restored after the test (set_quiet below writes it)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    return found


def _draw(label: str) -> None:
    with _progress.step(f"step of {label}"), _progress.Progress(2, f"bar of {label}") as progress:
        progress.advance(2)


def _drawn_on_two_threads() -> None:
    """Two tasks of ``in_order`` and the two parts of ``in_parts``, each drawing a step line and
    a bar; each pair met at a barrier, so they ran at once, on two threads (one of ``in_parts``'
    parts on the caller's own)."""
    seen: dict[str, set[int]] = {"in_order": set(), "in_parts": set()}
    both = threading.Barrier(2, timeout=30)

    def task(name: str) -> int:
        both.wait()
        seen["in_order"].add(threading.get_ident())
        _draw(name)
        return len(name)

    assert list(_threads.in_order([lambda: task("task 1"), lambda: task("task 22")])) == [6, 7]

    def part(start: int, stop: int) -> int:
        both.wait()
        seen["in_parts"].add(threading.get_ident())
        _draw(f"part {start}")
        return stop - start

    assert _threads.in_parts(4, part, min_rows=2) == [2, 2]
    assert len(seen["in_order"]) == 2 and threading.get_ident() not in seen["in_order"]
    assert len(seen["in_parts"]) == 2 and threading.get_ident() in seen["in_parts"]


def test_worker_threads_draw_when_nothing_silences_them(terminal, monkeypatch):
    monkeypatch.setattr("sys.stderr", terminal)
    _drawn_on_two_threads()
    shown = terminal.getvalue()
    for label in ("task 1", "task 22", "part 0", "part 2"):
        assert f"bar of {label} [" in shown and f"step of {label}" in shown


def test_quiet_here_silences_the_callers_worker_threads(terminal, monkeypatch):
    """compare recomputes replicates under ``quiet_here`` on a helper thread; the engine hands
    that work to ``_threads``, whose threads must stay quiet too."""
    monkeypatch.setattr("sys.stderr", terminal)
    with _progress.quiet_here():
        _drawn_on_two_threads()
    assert terminal.getvalue() == ""
    _draw("main")  # the block's end gives the caller its bars back
    assert "bar of main [" in terminal.getvalue()


def test_set_quiet_silences_every_thread(terminal, monkeypatch):
    """A silenced process (``set_quiet(True)``, as ``evalframe run -q`` does for its command): no
    bar or step line from any thread."""
    monkeypatch.setattr("sys.stderr", terminal)
    _progress.set_quiet(True)
    _drawn_on_two_threads()
    own = threading.Thread(target=_draw, args=("a thread of its own",))
    own.start()
    own.join()
    assert terminal.getvalue() == ""
