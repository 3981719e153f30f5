"""The replay check: generated source of every bundled kernel x target x CPU plan against the
committed snapshot (tests/replay). A difference fails with its diff; when the change is
meant, `python -m tests.replay --update` rewrites the snapshot and the commit says why."""

import pytest

from tests.replay import cases, compare


@pytest.mark.parametrize("kernel,target,isa", cases(),
                         ids=["-".join(x for x in c if x) for c in cases()])
def test_generated_source_matches_snapshot(kernel, target, isa):
    diffs = compare(kernel, target, isa)
    shown = "\n".join(d[:4000] for d in diffs)
    assert not diffs, (f"generated code of {kernel} ({target} {isa or ''}) differs from "
                       f"tests/replay/snapshots; if meant, run `python -m tests.replay "
                       f"--update` and say why in the commit:\n{shown}")
