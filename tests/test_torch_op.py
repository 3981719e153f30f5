"""polydyn.torch.custom_op: a kernel as a PyTorch operator, eager and inside
torch.compile(dynamic=True, fullgraph=True) with no recompilation across sizes (SPEC section 8).
"""

import pytest

import polydyn as pd
from kernels import load
from polydyn import f32, out

torch = pytest.importorskip("torch")
pt = pytest.importorskip("polydyn.torch")
testing = pytest.importorskip("torch._dynamo.testing")

N, R = pd.sym("N R")


@pd.operator
def spread(X: f32[N], s: f32, Y: out(f32[N, R]), Z: out(f32[2 * N]), R: pd.index):
    for i in range(N):
        for r in range(R):
            Y[i, r] = X[i] * s * (r + 1)
    for i in range(N):
        Z[i] = X[i]
        Z[N + i] = -X[i]


def _spread(x, s, r):
    return x[:, None] * s * torch.arange(1, r + 1), torch.cat([x, -x])


@pytest.fixture(scope="module")
def ops() -> dict:
    return {name: pt.custom_op(pd.compile(op), name=f"pdtest::{name}")
            for name, op in [("matmul", load("matmul")[0]), ("jacobi2d", load("jacobi2d")[0]),
                             ("conv2d", load("conv2d")[0]), ("spread", spread)]}


def test_schemas(ops: dict) -> None:
    schemas = {name: str(op.default._schema) for name, op in ops.items()}
    assert schemas == {
        "matmul": "pdtest::matmul(Tensor A, Tensor B) -> Tensor",
        "jacobi2d": "pdtest::jacobi2d(Tensor(a!) A, *, SymInt T) -> ()",
        "conv2d": "pdtest::conv2d(Tensor X, Tensor Wt) -> Tensor",
        "spread": "pdtest::spread(Tensor X, float s, *, SymInt R) -> (Tensor, Tensor)",
    }


def test_eager(ops: dict) -> None:
    A, B = torch.randn(9, 5), torch.randn(5, 7)
    torch.testing.assert_close(ops["matmul"](A, B), A @ B, rtol=1e-5, atol=1e-5)
    X, W = torch.randn(2, 3, 8, 9), torch.randn(4, 3, 3, 2)
    torch.testing.assert_close(ops["conv2d"](X, W), torch.nn.functional.conv2d(X, W),
                               rtol=1e-4, atol=1e-4)
    x = torch.randn(5)
    for got, want in zip(ops["spread"](x, 2.0, R=3), _spread(x, 2.0, 3), strict=True):
        torch.testing.assert_close(got, want)
    G = torch.randn(6, 6)
    want = torch.from_numpy(load("jacobi2d")[1](G.numpy(), T=2))
    assert ops["jacobi2d"](G, T=2) is None
    torch.testing.assert_close(G, want)
    with pytest.raises(pd.ShapeError, match="'B', dimension 0: expected K = 4"):
        ops["matmul"](torch.randn(3, 4), torch.randn(5, 6))  # the kernel's own refusal


def test_opcheck(ops: dict) -> None:
    torch.library.opcheck(ops["matmul"], (torch.randn(4, 3), torch.randn(3, 5)))
    torch.library.opcheck(ops["spread"], (torch.randn(4), 0.5), {"R": 3})
    torch.library.opcheck(ops["jacobi2d"], (torch.randn(5, 5),), {"T": 2})


def test_compiled_five_sizes_one_compile(ops: dict) -> None:
    """Inductor, as a user runs it: one frame compiled, the next four sizes reuse it."""
    torch._dynamo.reset()
    counter = testing.CompileCounterWithBackend("inductor")
    mm = ops["matmul"]
    f = torch.compile(lambda a, b: mm(a, b) + 1, dynamic=True, fullgraph=True,
                      backend=counter)
    for k, n in enumerate([3, 5, 8, 13, 21]):
        a, b = torch.randn(n, n + 1), torch.randn(n + 1, n + 2)
        with torch._dynamo.config.patch(error_on_recompile=k > 0):
            torch.testing.assert_close(f(a, b), a @ b + 1, rtol=1e-4, atol=1e-4)
    assert counter.frame_count == 1


def test_compiled_mutation_outputs_and_affine_shapes(ops: dict) -> None:
    """Several outputs, an inout, a keyword sym and shapes like H - KH + 1 in one graph."""
    torch._dynamo.reset()
    conv, jac, spr = ops["conv2d"], ops["jacobi2d"], ops["spread"]

    def g(x, w, a, t):
        y = conv(x, w)
        jac(a, T=t)
        ys, zs = spr(y.flatten(), 2.0, R=t)
        return ys.sum(dim=1), zs, a * 2

    counter = testing.CompileCounterWithBackend("aot_eager")
    cg = torch.compile(g, dynamic=True, fullgraph=True, backend=counter)
    for k, n in enumerate([6, 7, 9, 12, 15]):
        x, w, a = torch.randn(2, 3, n, n + 1), torch.randn(4, 3, 3, 2), torch.randn(n, n)
        a2 = a.clone()
        with torch._dynamo.config.patch(error_on_recompile=k > 0):
            got = cg(x, w, a, 3 + k)
        for g1, g2 in zip(got, g(x, w, a2, 3 + k), strict=True):
            torch.testing.assert_close(g1, g2, rtol=1e-4, atol=1e-3)
        torch.testing.assert_close(a, a2)  # the compiled call mutated its argument too
    assert counter.frame_count == 1


def test_registration(ops: dict) -> None:
    again = pt.custom_op(pd.compile(load("matmul")[0]), name="pdtest::matmul")
    assert again is ops["matmul"]
    with pytest.raises(pd.PolydynError, match="already registered"):
        pt.custom_op(pd.compile(load("transpose")[0]), name="pdtest::matmul")
    with pytest.raises(pd.PolydynError, match="namespace::name"):
        pt.custom_op(pd.compile(load("transpose")[0]), name="transpose")
    assert pd.torch is pt  # the attribute imports polydyn.torch on first use
