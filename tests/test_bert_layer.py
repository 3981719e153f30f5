"""bench/bert_layer.py: the encoder layer from polydyn operators agrees with torch's (slow: it
compiles seven operators)."""

import importlib.util
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("polydyn.torch")

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["input-major", "nn.Linear"])
def test_bert_layer_agrees_with_torch(layout: str) -> None:
    import polydyn as pd

    spec = importlib.util.spec_from_file_location("bert_layer", ROOT / "bench" / "bert_layer.py")
    bl = importlib.util.module_from_spec(spec)
    sys.modules["bert_layer"] = bl
    spec.loader.exec_module(bl)
    w = bl.weights()
    operators = bl.OPERATORS_NN if layout == "nn.Linear" else bl.OPERATORS
    layer = bl.polydyn_layer({n: pd.compile(op) for n, op in operators.items()}, w, layout)
    # tokens on both sides of pipeline.REPACK_ROWS (dot products below, register tiles from)
    for b, s in [(1, 5), (2, 7), (1, 6), (3, 8), (1, 49)]:
        x = torch.randn(b, s, bl.HIDDEN)
        mask = bl.padding_mask(b, s)
        want = bl.torch_layer(w, x, mask)
        got = layer(x, mask)
        assert ((got - want).abs().max() / want.abs().max()).item() < 1e-4
