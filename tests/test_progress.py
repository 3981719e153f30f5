"""Progress of long work (issue 33, part 3): on a terminal a compile past a second shows its
stage and elapsed time on one line, erased at the end; off a terminal nothing is written."""

from __future__ import annotations

import io
import time

from polydyn import progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_stage_line_on_a_terminal(monkeypatch) -> None:
    monkeypatch.setattr(progress, "AFTER", 0.05)
    monkeypatch.setattr(progress, "PERIOD", 0.02)
    monkeypatch.delenv("POLYDYN_PROGRESS", raising=False)
    tty = _Terminal()
    with progress.reporting("compiling demo", stream=tty):
        progress.stage("isl scheduler")
        with progress.reporting("nested", stream=tty):  # the outermost block reports
            time.sleep(0.2)
    text = tty.getvalue()
    assert "\rpolydyn: compiling demo: isl scheduler (" in text and " s)" in text
    assert "nested" not in text
    assert text.endswith("\r") and text.rstrip("\r").split("\r")[-1].strip() == ""


def test_quiet_off_a_terminal_short_work_or_when_disabled(monkeypatch) -> None:
    monkeypatch.setattr(progress, "AFTER", 0.05)
    pipe = io.StringIO()
    with progress.reporting("compiling demo", stream=pipe):
        time.sleep(0.1)
    assert pipe.getvalue() == ""
    tty = _Terminal()
    with progress.reporting("compiling demo", stream=tty):  # shorter than AFTER
        pass
    assert tty.getvalue() == ""
    monkeypatch.setenv("POLYDYN_PROGRESS", "0")
    with progress.reporting("compiling demo", stream=tty):
        time.sleep(0.1)
    assert tty.getvalue() == ""
    progress.stage("outside any block")  # harmless
