"""Ragged batches (issue 35, SPEC section 7): operators over sequences of different lengths,
checked per sequence against NumPy and the reference, as pd.Jagged and as jagged nested
tensors, on C (and OpenCL on PoCL); lengths 0, 1, primes and tile edges, skewed batches,
every variant reached; refusals with nothing written."""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
from polydyn import f32, f64, inout, out
from polydyn.runtime.opencl import opencl_available

B, D, O = pd.sym("B D O")  # noqa: E741
L = pd.ragged("L", B)


@pd.operator(assume="D >= 1")
def seq_scale(X: f32[B, L, D], G: f32[D], Y: out(f32[B, L, D])):
    for b in range(B):
        for s in range(L[b]):
            for d in range(D):
                Y[b, s, d] = X[b, s, d] * G[d]


@pd.operator(assume="D >= 1 and O >= 1")
def seq_proj(X: f32[B, L, D], W: f32[D, O], Y: out(f32[B, L, O])):
    for b in range(B):
        for s in range(L[b]):
            for o in range(O):
                Y[b, s, o] = 0.0
                for k in range(D):
                    Y[b, s, o] += X[b, s, k] * W[k, o]


@pd.operator(assume="D >= 1")
def seq_scores(Q: f32[B, L, D], K: f32[B, L, D], S: out(f32[B, L, L])):
    for b in range(B):
        for i in range(L[b]):
            for j in range(L[b]):
                S[b, i, j] = 0.0
                if j <= i:
                    for k in range(D):
                        S[b, i, j] += Q[b, i, k] * K[b, j, k]


@pd.operator(assume="D >= 1")
def seq_layernorm(X: f64[B, L, D], G: f64[D], Y: out(f64[B, L, D])):
    for b in range(B):
        for s in range(L[b]):
            mu = 0.0
            for d in range(D):
                mu += X[b, s, d]
            mu = mu / D
            var = 0.0
            for d in range(D):
                var += (X[b, s, d] - mu) * (X[b, s, d] - mu)
            r = 1.0 / pd.sqrt(var / D + 1e-5)
            for d in range(D):
                Y[b, s, d] = (X[b, s, d] - mu) * r * G[d]


@pd.operator(assume="D >= 1")
def seq_pool(X: f32[B, L, D], P: out(f32[B, D]), Z: out(f32[B, L, D])):
    """L[b] as a value and in conditions; a batched output without the ragged extent."""
    for b in range(B):
        for d in range(D):
            P[b, d] = 0.0
        for s in range(L[b]):
            for d in range(D):
                P[b, d] += X[b, s, d] / L[b]
                Z[b, s, d] = X[b, s, d] * (L[b] - s) if s < L[b] - 1 else 0.0


@pd.operator(assume="D >= 1")
def seq_trans(X: f32[B, D, L], alpha: f32, Y: out(f32[B, L, D])):
    """The ragged extent last: 1-D values, flat blocks."""
    for b in range(B):
        for d in range(D):
            for s in range(L[b]):
                Y[b, s, d] = alpha * X[b, d, s]


@pd.operator(assume="D >= 1")
def seq_prefix(X: inout(f32[B, L, D]), T: pd.index):
    for b in range(B):
        for _t in range(T):
            for s in range(1, L[b]):
                for d in range(D):
                    X[b, s, d] += X[b, s - 1, d]


@pd.operator
def seq_cumsum(X: f32[B, L], Y: out(f32[B, L])):
    for b in range(B):
        for s in range(L[b]):
            Y[b, s] = X[b, s]
            if s >= 1:
                Y[b, s] += Y[b, s - 1]


@pd.operator
def seq_causal_softmax(S: f32[B, L, L], P: out(f32[B, L, L])):
    for b in range(B):
        for i in range(L[b]):
            m = -pd.inf
            for j in range(i + 1):
                m = max(m, S[b, i, j])
            tot = 0.0
            for j in range(i + 1):
                tot += pd.exp(S[b, i, j] - m)
            for j in range(L[b]):
                P[b, i, j] = pd.exp(S[b, i, j] - m) / tot if j <= i else 0.0


def _jagged(lengths, d, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return pd.Jagged(rng.standard_normal((int(sum(lengths)), d)).astype(dtype), lengths)


def _kernel(op, target="c"):
    if target == "opencl" and not opencl_available():
        pytest.skip("no OpenCL platform")
    return pd.compile(op, target=target)


TARGETS = ["c", pytest.param("opencl", marks=pytest.mark.opencl)]
EDGES = [0, 1, 2, 3, 5, 7, 13, 31, 47, 48, 49, 64, 97]


@pytest.mark.parametrize("target", TARGETS)
def test_scale_and_proj_per_sequence(target):
    k = _kernel(seq_scale, target)
    x = _jagged(EDGES, 6)
    g = np.linspace(-1, 2, 6).astype(np.float32)
    y = k(x, g)
    assert isinstance(y, pd.Jagged) and y.lengths.tolist() == EDGES
    for xb, yb in zip(x.blocks(), y.blocks(), strict=True):
        np.testing.assert_allclose(yb, xb * g, rtol=1e-6)
    kp = _kernel(seq_proj, target)
    w = np.random.default_rng(1).standard_normal((6, 9)).astype(np.float32)
    yp = kp(x, w)
    for xb, yb in zip(x.blocks(), yp.blocks(), strict=True):
        np.testing.assert_allclose(yb, xb @ w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(yp.values, seq_proj.reference(x, w).values, rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_causal_scores_blocks(target):
    k = _kernel(seq_scores, target)
    lengths = [4, 0, 1, 17, 2, 33]
    q, kk = _jagged(lengths, 5, seed=2), _jagged(lengths, 5, seed=3)
    s = k(q, kk)
    assert s.values.ndim == 1 and s.values.size == sum(n * n for n in lengths)
    for qb, kb, sb in zip(q.blocks(), kk.blocks(), s.blocks(), strict=True):
        assert sb.shape == (len(qb), len(qb))
        np.testing.assert_allclose(sb, np.tril(qb @ kb.T), rtol=1e-4, atol=1e-5)
    ref = seq_scores.reference(q, kk)
    np.testing.assert_allclose(s.values, ref.values, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_layernorm_and_lengths_as_values(target):
    k = _kernel(seq_layernorm, target)
    lengths = [1, 0, 11, 3]
    x = _jagged(lengths, 7, np.float64, seed=4)
    g = np.arange(1.0, 8.0)
    y = k(x, g)
    for xb, yb in zip(x.blocks(), y.blocks(), strict=True):
        mu = xb.mean(axis=1, keepdims=True)
        want = (xb - mu) / np.sqrt(xb.var(axis=1, keepdims=True) + 1e-5) * g
        np.testing.assert_allclose(yb, want, rtol=1e-9)
    kp = _kernel(seq_pool, target)
    lengths = [5, 1, 2, 0, 9]
    x = _jagged(lengths, 3, seed=5)
    p, z = kp(x)
    rp, rz = seq_pool.reference(x)
    assert p.shape == (5, 3)
    np.testing.assert_allclose(p, rp, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(z.values, rz.values, rtol=1e-6)
    for n, xb, pb in zip(lengths, x.blocks(), p, strict=True):
        if n:
            np.testing.assert_allclose(pb, xb.mean(axis=0), rtol=1e-5, atol=1e-6)


def test_every_variant_reached_in_one_skewed_batch():
    """Each sequence runs the variant of its own length: one batch reaches every variant
    (at D = 768, planned for a 128 KiB L2: past the reduction up to which the untiled
    register tiles run, ``schedule.auto._repacked_reduction``; the fallback ``generic`` is
    covered by the ones before it)."""
    k = pd.compile(seq_scores, l2_bytes=1 << 17)
    d = 768
    found = {}
    for n in [*range(0, 300), 768]:
        found.setdefault(k.select(L=n, D=d).name, n)
    earlier = k.variants[0].region
    for v in k.variants[1:-1]:
        earlier = earlier.union(v.region)
    assert k.variants[-1].region.subtract(earlier).is_empty()
    assert set(found) == {v.name for v in k.variants[:-1]}, found
    assert k.select(L=1, D=d).name == "L=1"
    rng = np.random.default_rng(6)
    lengths = sorted(found.values()) + [int(n) for n in rng.integers(0, 120, 30)]
    q, kk = _jagged(lengths, d, seed=7), _jagged(lengths, d, seed=8)
    s = k(q, kk)
    for qb, kb, sb in zip(q.blocks(), kk.blocks(), s.blocks(), strict=True):
        np.testing.assert_allclose(sb, np.tril(qb @ kb.T), rtol=1e-3, atol=1e-3)


def test_large_skewed_projection():
    k = _kernel(seq_proj)
    rng = np.random.default_rng(9)
    lengths = [int(n) for n in np.minimum(rng.lognormal(3.0, 1.2, 64), 300)]
    lengths[0] = 300  # one straggler: runs alone with the variants' threads
    x = _jagged(lengths, 33, seed=10)
    w = rng.standard_normal((33, 40)).astype(np.float32)
    y = k(x, w)
    np.testing.assert_allclose(y.values, x.values @ w, rtol=1e-4, atol=1e-4)


def test_given_output_and_refusals_write_nothing():
    k = _kernel(seq_scale)
    x = _jagged([2, 3], 4)
    g = np.ones(4, np.float32)
    buf = pd.Jagged(np.full((5, 4), 7.0, np.float32), [2, 3])
    assert k(x, g, Y=buf) is buf
    np.testing.assert_allclose(buf.values, x.values)
    bad = [
        ((_jagged([2, 3], 4), g), {"Y": pd.Jagged(np.full((5, 4), 7.0, np.float32), [3, 2])}),
        ((x, g.astype(np.float64)), {}),
        ((pd.Jagged(x.values.astype(np.float64), [2, 3]), g), {}),
        ((x, np.ones(5, np.float32)), {}),
        ((x.values, g), {}),
    ]
    for args, kw in bad:
        with pytest.raises(pd.ShapeError):
            k(*args, **kw)
        for v in kw.values():
            assert (v.values == 7.0).all()
    with pytest.raises(pd.ShapeError):
        pd.Jagged(np.zeros((4, 4), np.float32), [2, 3])
    ks = _kernel(seq_scores)
    with pytest.raises(pd.ShapeError, match="values"):
        ks(pd.Jagged(np.zeros((5, 2), np.float32), [2, 3]),
           pd.Jagged(np.zeros((5, 3), np.float32), [2, 3]))
    with pytest.raises(pd.ShapeError, match="disagree"):
        ks(pd.Jagged(np.zeros((5, 2), np.float32), [2, 3]),
           pd.Jagged(np.zeros((5, 2), np.float32), [3, 2]))


@pytest.mark.parametrize("target", TARGETS)
def test_torch_nested_in_and_out(target):
    torch = pytest.importorskip("torch")
    k = _kernel(seq_proj, target)
    lengths = [3, 1, 6]
    x = _jagged(lengths, 5, seed=11)
    w = np.random.default_rng(12).standard_normal((5, 4)).astype(np.float32)
    nt = torch.nested.nested_tensor_from_jagged(torch.from_numpy(x.values),
                                                offsets=torch.from_numpy(x.offsets))
    y = k(nt, torch.from_numpy(w))
    assert y.is_nested and y.layout == torch.jagged
    for xb, yb in zip(x.blocks(), y.unbind(), strict=True):
        np.testing.assert_allclose(yb.numpy(), xb @ w, rtol=1e-4, atol=1e-5)
    nested = torch.nested.nested_tensor([torch.from_numpy(b) for b in x.blocks()],
                                        layout=torch.jagged)
    y2 = k(nested, torch.from_numpy(w))
    np.testing.assert_allclose(y2.values().numpy(), x.values @ w, rtol=1e-4, atol=1e-5)


def _define(body: str) -> None:
    namespace = {"pd": pd, "f32": f32, "out": out, "B": B, "D": D, "L": L}
    import linecache

    name = f"<ragged-{abs(hash(body))}>"
    linecache.cache[name] = (len(body), None, body.splitlines(True), name)
    exec(compile(body, name, "exec"), namespace)


@pytest.mark.parametrize(("body", "match"), [
    ("""
@pd.operator
def r1(X: f32[B, L, D], Y: out(f32[B, L, D])):
    for b in range(B):
        for s in range(L[b]):
            for d in range(D):
                Y[b, s, d] = X[b, s, d] * b
""", "batch variable"),
    ("""
@pd.operator
def r2(X: f32[B, L, D], Y: out(f32[B, L, D])):
    for b in range(B):
        for s in range(L[0]):
            for d in range(D):
                Y[b, s, d] = X[b, s, d]
""", "ragged extent is read"),
    ("""
@pd.operator
def r3(X: f32[B, L, D], Y: out(f32[D])):
    for b in range(B):
        for s in range(L[b]):
            for d in range(D):
                Y[d] += X[b, s, d]
""", "shared by every sequence"),
    ("""
@pd.operator
def r4(X: f32[B, L, D], Y: out(f32[B, L, D])):
    for b in range(B):
        for s in range(L[b]):
            for d in range(D):
                Y[s, b, d] = X[b, s, d]
""", "first subscript"),
    ("""
@pd.operator
def r5(X: f32[B, L, D], Y: out(f32[B, L, D])):
    for b in range(B):
        for s in range(L[b]):
            for d in range(X[b, s, 0]):
                Y[b, s, d] = X[b, s, d]
""", "non-affine"),
    ("""
@pd.operator
def r6(X: f32[B, L, D], Y: out(f32[B, L, D])):
    Y[0, 0, 0] = 1.0
    for b in range(B):
        for s in range(L[b]):
            Y[b, s, 0] = X[b, s, 0]
""", "inside the batch loop"),
])
def test_frontend_refusals(body, match):
    with pytest.raises(pd.FrontendError, match=match) as info:
        _define(body)
    assert "<ragged-" in str(info.value)


@pytest.mark.parametrize("target", TARGETS)
def test_flat_blocks_inout_index_and_empty_batch(target):
    lengths = [2, 0, 3, 1, 5]
    vals = np.random.default_rng(13).standard_normal(sum(n * 3 for n in lengths))
    x = pd.Jagged(vals.astype(np.float32), lengths, [(3, n) for n in lengths])
    k = _kernel(seq_trans, target)
    y = k(x, 2.0)
    for xb, yb in zip(x.blocks(), y.blocks(), strict=True):
        np.testing.assert_allclose(yb, 2 * xb.T, rtol=1e-6)
    y2 = k(pd.Jagged(x.values, lengths), 2.0, D=3)  # 1-D values: D as a keyword
    np.testing.assert_allclose(y2.values, y.values)
    with pytest.raises(pd.ShapeError, match="keyword"):
        k(pd.Jagged(x.values, lengths), 2.0)
    kp = _kernel(seq_prefix, target)
    z = _jagged(lengths, 3, seed=14)
    want = pd.Jagged(z.values.copy(), lengths)
    assert kp(z, T=2) is None
    seq_prefix.reference(want, T=2)
    np.testing.assert_allclose(z.values, want.values, rtol=1e-5)
    kc = _kernel(seq_cumsum, target)
    c = pd.Jagged(np.arange(11, dtype=np.float32), lengths)
    for cb, yb in zip(c.blocks(), kc(c).blocks(), strict=True):
        np.testing.assert_allclose(yb, np.cumsum(cb))
    with pytest.raises(pd.ShapeError):
        kc(pd.Jagged(np.arange(12, dtype=np.float32), lengths))
    empty = kc(pd.Jagged(np.zeros(0, np.float32), []))
    assert empty.values.shape == (0,) and empty.lengths.tolist() == []


def test_batch_entry_in_generated_code_and_operator_files(tmp_path):
    k = _kernel(seq_scale)
    assert "int seq_scale_batch(" in k.source
    assert "schedule(dynamic, 1)" in k.source  # the sequences share the threads
    from polydyn.operator_files import load_operators
    from polydyn.scop.ragged import RaggedOperator

    path = tmp_path / "rag.py"
    path.write_text("import polydyn as pd\nfrom polydyn import f32, out\n"
                    "B, D = pd.sym('B D')\nL = pd.ragged('L', B)\n\n"
                    "@pd.operator\ndef r(X: f32[B, L, D], Y: out(f32[B, L, D])):\n"
                    "    for b in range(B):\n        for s in range(L[b]):\n"
                    "            for d in range(D):\n                Y[b, s, d] = X[b, s, d]\n")
    ops = load_operators(str(path))  # the command line compiles them (tests/test_deploy.py)
    assert isinstance(ops["r"], RaggedOperator)


@pytest.mark.parametrize("target", TARGETS)
def test_causal_softmax_flat_blocks_in_and_out(target):
    k = _kernel(seq_causal_softmax, target)
    lengths = [3, 0, 1, 6, 17]
    rng = np.random.default_rng(15)
    s = pd.Jagged(rng.standard_normal(sum(n * n for n in lengths)).astype(np.float32),
                  lengths, [(n, n) for n in lengths])
    p = k(s)
    for sb, pb in zip(s.blocks(), p.blocks(), strict=True):
        if not len(sb):
            continue
        mask = np.tri(len(sb), dtype=bool)
        e = np.where(mask, np.exp(sb - np.where(mask, sb, -np.inf).max(1, keepdims=True)), 0)
        np.testing.assert_allclose(pb, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p.values, seq_causal_softmax.reference(s).values, atol=1e-6)


def test_work_per_sequence_is_the_statements_boxes():
    """The work that orders and shares out the sequences (a Python expression printed from
    isl at compile time): each statement's bounding box, a triangle as its box, nothing for a
    statement with no instances at that length."""
    k = _kernel(seq_cumsum)  # Y[s] = X[s] (L points), then += for s >= 1 (L - 1 of them)
    lengths = np.array([0, 1, 2, 7, 7, 300])
    np.testing.assert_array_equal(k.work(lengths, {}), lengths + np.maximum(lengths - 1, 0))
    k = _kernel(seq_causal_softmax)  # m = -inf, tot = 0 over L; max, sum (triangles) and P
    np.testing.assert_array_equal(k.work(lengths, {}), 2 * lengths + 3 * lengths * lengths)
    k = _kernel(seq_proj)  # Y[s, o] = 0 (L x O), Y[s, o] += X[s, d] W[d, o] (L x O x D)
    np.testing.assert_array_equal(k.work(np.array([0, 3, 5]), {"D": 4, "O": 6}),
                                  [0, 3 * 6 + 3 * 6 * 4, 5 * 6 + 5 * 6 * 4])
    assert "L" in k.work_expr and "isl" not in k.work_expr
