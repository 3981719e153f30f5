#!/usr/bin/env python3
"""The standard benchmark suite over every bundled kernel.

    .venv/bin/python bench/run_all.py --quick          # a few minutes; results in bench/out/quick
    .venv/bin/python bench/run_all.py                  # full sizes; bench/results + RESULTS.md
    .venv/bin/python bench/run_all.py --only matmul softmax-rows
    .venv/bin/python bench/run_all.py --resume         # go on after an interrupted full run
    .venv/bin/python bench/run_all.py --render-only    # RESULTS.md again from results/suite.json
    .venv/bin/python bench/run_all.py --out bench/results-avx2   # another machine's run

The same suite runs as ``polydyn bench --suite [--quick]`` (without RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # polydyn (when not installed) and the bundled kernels


OPENCL_SECTION = """
## OpenCL target

From `bench/results-opencl/` (its own run: `python bench/run_all.py --target c,opencl
--only matmul-square softmax-rows softmax-sweep --baseline numpy --out bench/results-opencl`),
appended as it was written. `polydyn-opencl` ran on PoCL's CPU device on this machine, called
with NumPy arrays (the copies to and from the device included; runs since d07c7ea time the
OpenCL target on device arrays). The C columns of that run repeat the main run's points;
their spread between the two runs is this machine's noise. The GPU figures follow.

"""


GPU_SECTION = """
## OpenCL on a GPU: NVIDIA H100

From `bench/results-gpu/`: one run of `bench/gpu_check.sh` on a machine lent for a session (an
H100 80GB HBM3, driver 580.159.04, NVIDIA's OpenCL 3.0; a 16-core Xeon host) at 617745d; since
then only the choice of index build per kernel changed (067c360: lane kernels run the 64-bit
build). The OpenCL tests first (453 passed on the GPU, and the 14 OpenCL fuzz regressions),
then `python bench/run_all.py --target opencl --baseline numpy,torch-cuda --no-costs --quiet 0
--budget 0.25` over every sweep but matmul-tiles, then `bench/gpu_probe.py`. `polydyn-opencl`
is timed on device arrays, each call waiting for the queue; `torch-cuda` is torch 2.11 eager on
the same GPU, each call synchronized (`bench/README.md`); "of roofline" is the rate over the
H100's 67 TFLOP/s FP32 or 3.35 TB/s. `generic-opencl` forces the last variant through the
checked Python host path. The machine line's git name (f94feb4+dirty) is the metadata of the
copy the machine received, not its code. Plots in `bench/results-gpu/*.png`.

"""


OTHER_MACHINE_SECTION = """
## Another machine: {name}

From `{source}/` (its own full run on that machine: `python bench/run_all.py --out
{source}`, then `--render-only` on any machine), rendered here as RESULTS.md renders the
main run, its headings one level down. The project's sessions do not choose their machine;
the register tiles and cache tiles follow the machine the C compiler targets
(docs/design.md, point 0), so each machine's figures are its own code's.

"""


BERT_SECTION = """
## A BERT-base encoder layer against PyTorch (issue 34)

From `bench/bert_layer.py` (files `bench/results/bert_layer.md` and `.png`): the post-norm
encoder layer (hidden 768, 12 heads, FFN 3072, erf GELU, the padding mask: each batch's last
sequence half padding) written with `@pd.operator`: linear, linear with bias and GELU, linear
+ residual, attention scores over a [B, S, 3, H, DH] view of the fused QKV projection, scale +
mask + softmax in one operator, attention context, the library's layernorm. The projections
are written for nn.Linear's weights as the model holds them (`W[o, i]`, `--layout
nn.Linear`; the GELU's sum in a local scalar): from 6 rows they run register tiles over
panels of W (32 output columns over all of its input, transposed by the thread whose tiles
read them, `codegen_c.repack.Repacks.panel_plan`), so each weight is read from memory once
a call; below 6 rows dot products (`pipeline.REPACK_ROWS`). The attention scores read the
keys of the QKV view from such panels too (a constant subscript picks the slice), and the
masked softmax's exp runs the masked entries at full speed (`prelude.EXP_F32`). polydyn
runs it called eagerly with tensors and as `polydyn.torch.custom_op` operators inside
`torch.compile(dynamic=True, fullgraph=True)`; torch runs the same weights in eager mode and
under `torch.compile(dynamic=True)`; 2 threads each. Each point is checked against torch
eager first (max |error| / max |output| under 1e-4). Dynamo specializes sizes 1 (batch 1,
then sequence length 1), for torch's own layer as for polydyn's operators; no other shape
compiles again. Timed one by one inside the layer at 1 x 64 (medians of 25 layers, polydyn /
torch, ms): QKV 0.83 / 1.52, scores 0.054 / 0.099, masked softmax 0.017 / 0.025 (alone),
context 0.037 / 0.069, out projection 0.28 / 0.50, FFN in 1.04 / 2.13, FFN out 0.98 / 1.96.
The same layer with the weights read from `[in, out]` copies made once (`--layout
input-major`, the bundled matmul's layout) follows the first table.

![bert_layer](results/bert_layer.png)

"""

PRODUCTS_SECTION = """
## Products on the development machine

From `bench/run_all.py --only matmul-square matmul-skinny batched_matmul --out DIR`, its
`suite.md` kept as `bench/results/products.md`: the product sweeps of the suite, run again
on the machine of `results-zen4/` after a change to where `tiled` and `small` meet
(`bench/HISTORY.md`, point 6), every implementation in the same run. Only these sweeps:
that machine's other figures are its full run's, in its section above.

"""

PHRASINGS_SECTION = """
## Operators as users write them (issue 31)

From `bench/phrasings.py` (file `bench/results/phrasings.md`): the operators of
`tests/phrasings.py`, written with temporaries or local scalars as accumulators, the weight in
nn.Linear's layout, the max as a conditional, masks as `if`, timed in turns in one process
beside the bundled kernel each phrases and PyTorch eager (2 threads each; the machine was
shared, so the ratios timed in turns are the steadier figures; each call's operands stay in
cache from the call before: the BERT section below shows a weight read from memory).
`batched_linear` is `X @ W + b` on a [batch, rows, features] input: its bias nest was tiled
for reuse it does not have, which sent batches under 48 to the untiled variant (before that
fix, in turns: 360-370 GFLOP/s at 8 x 128 x 768^2, 230-236 at 4 x 128 x 3072 x 768).
`batched_linear_seq_first` is the same product on a [sequence, batch, features] input: its
inner row loop (the batch) was the one tiled, so 8 batches ran one 8-row tile (`skinny`; the
longer loop is tiled since: "Two row loops" below).
"vs bundled" and "vs torch eager" are the other's time over the phrasing's (above 1: the
phrasing is faster). Products whose operands both run along the reduction (`matmul_bt`,
nn.Linear's layout, attention's scores) take register tiles from 6 rows
(`pipeline.REPACK_ROWS`) over panels of the operand, 32 columns over the whole reduction,
transposed (16 x 16 tiles in AVX-512 registers) by the thread whose tiles read them, untiled
up to a reduction of 4096 (the panel in half the L2), cache-tiled over a whole copy past it;
held dot products below 6 rows (`scop/hold.py`, 80-90 GFLOP/s).
`softmax_if`'s two exponentials are computed once (`scop/reuse.py`); attention's two
products run in bands of their own around the softmax (`schedule/auto.repacked_products`).

"""

PHRASINGS_ADDED_SECTION = """
### Phrasings added since that run

From `bench/phrasings.py --only ...` (file `bench/results/phrasings_added.md`), on a later day
when the same machine ran about half as fast (the bundled product's phrasing, `matmul_scalar`,
is timed again in the same run as a yardstick; the ratios are the figures to compare):
`linear_bias_added` stores the bias first and adds a sum kept in a scalar (`Y += acc`), which
`scop/forward.py` now keeps in the cell; `vecmat_vectors` (x @ W for one vector) and
`column_sums` are bands with one parallel member, the other a reduction, that are no longer
cache-tiled (`schedule/auto.tiling_plan`). The second table is the tree before both changes,
run right after the first. `linear_temp_relu`'s product into a temporary had the activation's
nest fused into its band by isl (no register tiles); it now runs on its own
(`schedule/auto.product_readers`), still below torch and not diagnosed further (the
temporary, allocated and written at each call, is the first suspect; a rewrite into the
output would give it `linear_relu`'s form).

"""

PHRASINGS_PADDING_SECTION = """
### Padded convolutions and temporaries between nests

From `bench/phrasings.py --only matmul_scalar,conv_same_if,conv1d_select,linear_temp_relu,
bias_gelu_temp` (file `bench/results/phrasings_padding.md`), the tree with `scop/padding.py`
and `scop/fuse.py`, then the tree before them (`matmul_scalar` again the yardstick).
`conv_same_if` is a 3 x 3 convolution with padding 1 written with the image's edges as an
`if` around the term: its windows, cut at the edges, gave no tile of outputs a rectangular
reduction, so no register tile formed; it now reads a copy of X with a border of zeros and
runs the valid convolution's `channels` register tiles (an operator with one conv band and
element-wise bands besides, the copy here, now gets the `channels` and `vectorW` variants:
`schedule/auto.lone_band`). `conv1d_select` writes the padding as `X[...] if ... else 0.0`.
`depthwise_same_if` reads each input element through 9 taps and no other loop: it gets the
copy too (`padding.MIN_WINDOW`); its rate is in GB/s (a memory-bound operator).
`bias_gelu_temp` (GELU of `X + b` through a temporary) and `linear_temp_relu` (a product into
a temporary, then a ReLU nest) run their two nests as one, the temporary in a register (the
product's sum then in the output's cell, the ReLU a pass of its own). The machine was
shared: the two runs' yardsticks differ by 5 %.

"""

PHRASINGS_SUMS_SECTION = """
### Per-channel values and whole-array sums

From `bench/phrasings.py --only matmul_scalar,batchnorm_infer,sum_squares_cell` (file
`bench/results/phrasings_sums.md`), then the tree before. `sum_squares_cell` sums a whole
array into `y[0]`: the cell was updated through memory in both loops, one thread, in order;
it is now held in a scalar (`scop/hold.py` looks through a perfect nest), a vectorized sum.
`batchnorm_infer` no longer gets cache tiles (a value per channel is not a transposed
access, `schedule/bands.has_transposed_access`), but runs in the same time (its square root
per vector bounds it: the next section).

"""

PHRASINGS_INVARIANTS_SECTION = """
### Invariant math in element-wise nests

From `bench/phrasings.py --only matmul_scalar,batchnorm_infer,layernorm_temps,rmsnorm_temp`
(file `bench/results/phrasings_invariants.md`), then the tree before. `batchnorm_infer`
divides each element of NCHW by `sqrt(var[c] + eps)`: gcc's vectorized loop computed the
square root once per vector (measured from C, 8 x 64 x 56^2: 0.25 ms; with the root computed
once per channel 0.10 ms; multiplying by a per-channel inverse, as torch does, 0.07 ms, but
that rounds differently and polydyn keeps the division as written). The root is now a local
scalar of each `(b, c)` (`scop/hoist.py`): 2.3x in this run. `layernorm_temps` and
`rmsnorm_temp` get the same rewrite of a scalar's root, which gcc had already hoisted (the
same code, their times within the run-to-run noise).

"""

PHRASINGS_POOLS_SECTION = """
### Reductions over the pixels of NCHW

From `bench/phrasings.py --only matmul_scalar,global_avgpool,instance_norm,batchnorm_infer`
(file `bench/results/phrasings_pools.md`), then the tree before this session. A global
average pool's sum (`s += X[b, c, y, x]` over each plane) was forwarded into register tiles
over `(b, c)`, whose vectors ran across channels, one plane apart (a gather per element);
such a read is used by one cell only, so no copy of it pays and the sum now stays a scalar
(`scop.forward.reused_across`). A plane's loops over `y` and `x` walk one contiguous run of
`H * W` elements, and the C target runs them as one loop (`lowering/collapse.py`, a pass
before the C printer): a 7 x 7 plane is one vector loop of 49, not 7 loops of 7 with a
reduction's tail each. The same
holds for InstanceNorm's three loops over each plane and batch norm's element-wise one.

"""

PHRASINGS_STRIDED_SECTION = """
### Convolutions with stride 2

From `bench/phrasings.py --only matmul_scalar,conv_stride2,conv_stride2_same_if` (file
`bench/results/phrasings_strided.md`), then the tree before this session. ResNet's
downsampling convolution reads `X[b, c, 2 * y + ky, 2 * x + kx]`: two elements apart per
output column, which kept its sum in a scalar (a dot product over `c, ky, kx`, 3 elements
contiguous at a time). A read of stride 2 beside an operand that every cell of a row shares
(the weights) now lets the sum move into its cell (`scop.forward.along_cells`), so the
output's loops carry the register tiles of a stride-1 convolution; the C compiler loads
each vector of X with two loads and a permute. A max pool's window (stride 2, no shared
operand) keeps its scalar.

"""

PHRASINGS_ROWS_SECTION = """
### Reductions over an axis that is not the last

From `bench/phrasings.py --only matmul_scalar,middle_softmax,channels_first_layernorm` (file
`bench/results/phrasings_rows.md`), then the tree before. `middle_softmax` is
`softmax(X, dim=1)` over `[B, L, D]` and `channels_first_layernorm` ConvNeXt's LayerNorm over
the channels of NCHW, each written with the statistics in local scalars of a `(b, d)` or a
pixel and loops that read X down its columns: no loop ran along the rows, nothing
vectorized. The scalars are now temporaries over their iteration's loops
(`scop/expand.py`), and the loop along the rows runs below the loops over the reduced axis
(`schedule.auto.sink_row_members`), vectorized. Rates in GB/s of the minimal traffic.

"""

PHRASINGS_PASSES_SECTION = """
### A row's passes in one isl member, and whole-array reductions

From `bench/phrasings.py --only matmul_scalar,layernorm_residual,sum_squares_cell` (file
`bench/results/phrasings_passes.md`), then the tree before (fd81bfa), right after.
`layernorm_residual` is a transformer block's residual add and LayerNorm, the sum row kept in
a temporary and its mean summed in the loop that writes it: isl ran the row's three passes
as one member below the row loop with `mean = 0` at its first value, after the
temporary's write, so the AST set the mean inside the loop and the sum did not vectorize;
the first values now go in front of the member where that keeps every dependence
(`schedule.auto.distribute_low_dims`). `sum_squares_cell` sums a whole array into one cell
(held in a local scalar): one thread ran it; now the threads each reduce a block of the
loop into copies of their own, combined in the threads' order (`lowering/openmp.Blocks`,
from 2^15 instances: a plain sum of 2^15 floats took 2.6 us on one or two threads, 2^16
4.3 against 3.5 us, 2^20 55 against 30 us). Rates in GB/s of the minimal traffic.

"""

PHRASINGS_AXES_SECTION = """
### Reductions over a middle axis or down the columns, and a difference in a scalar

From `bench/phrasings.py --only sequence_mean,softmax_columns,pairwise_sq_dist` and a run
of unchanged controls (file `bench/results/phrasings_axes.md`), then the tree before
(a4018a5), right after. `sequence_mean` (`Y[b, d] += X[b, l, d]`) was tiled, because isl's
innermost member `l` reads `X` in its middle subscript, and register-tiled, though no read
stays the same along its rows or lanes (six strided streams per tile); now a band is tiled
for a transposed access only where no member can run innermost with every access in its
last subscript, and register tiles need a read that a tile reuses, so the rows stream in
the order written. `softmax_columns` then runs in strips of columns, a row at a time where
its passes write rows (no unroll-and-jam). `pairwise_sq_dist` squares a difference kept in
a local scalar: the value now goes into the sum's update (`scop/inline.py`), which then
gets the product's register tiles. `sequence_mean_weighted` (times `w[l]`) is the same
stream, register-tiled before because its weight, the same along a tile, made it look
reused (PyTorch eager's `(X * w[:, None]).sum(1)` writes the product first). Rates: GFLOP/s
(3 per term) or GB/s of the minimal traffic.

"""

PHRASINGS_LAYOUTS_SECTION = """
### Other layouts, scans and selections

From `bench/phrasings.py --only conv_nhwc,matmul_at,token_conv1d,row_cumsum,log_softmax,
argmax_rows,matmul_scalar` (file `bench/results/phrasings_layouts.md`), a first run of six
phrasings added on 2026-11-28, with `matmul_scalar` as the control, run again after the
rows operand's pack and the selections' lanes and threads. This run's machine is
another than the tables above (an Intel Xeon, 2 CPUs): compare within the table only.
`matmul_at` (`A.T @ B` as rank-1 updates) gets the same tiles and packed B as `matmul_scalar`,
and its cache tiles copy the run of A's cells each row of register tiles reads per step
(`pack-rows`, docs/design.md point 5b). Its ratio to the bundled `matmul` (given A
transposed outside the timing) moved between 0.61x and 1.40x over six runs of this table
that day, median 0.92x: this machine's speed swings between load phases faster than the
turns (matmul_scalar ran at 155 to 271 GFLOP/s, and at 1.22x the bundled kernel it is a
phrasing of in this run). Read in place, the first run had it at 0.51-0.53x torch against
the control's 0.73x. `argmax_rows` runs in SIMD lanes (a `select` loop, docs/design.md
point 8), and one long row on the threads as well: 6.6x and 17.6x torch's `max(X, 1)`,
where the loop as written ran at 4.6 GB/s. Rates: GFLOP/s for products, else GB/s of the
minimal traffic.

"""

PHRASINGS_EXCHANGE_SECTION = """
### Two row loops, and BLAS's scaled product

From `bench/phrasings.py --only batched_linear_seq_first,batched_linear,
batched_linear_nt_seq_first,matmul_blas,matmul_scalar` (file
`bench/results/phrasings_exchange.md`), on 2026-11-29, on the Intel Xeon of the table above
(2 CPUs, in a slow phase: `matmul_scalar` at 157 GFLOP/s; compare within the table only). A product with two row loops (a [sequence, batch, features] input, or many
short batches) now tiles the longer loop as the register tiles' rows, in either loop order
(the variants named `tiled:N`, `tiled:B`; docs/design.md point 6). Timed in turns against
the code before (artifacts of both loaded in one process, 768 x 768 weights, six rounds,
median ratio): sequence-first 128 x 8 from `skinny` at 47 GFLOP/s to `tiled:N` at 120
(2.66x), 512 x 1 from `skinny` at 10 to `B=1` at 114 (12.8x), batch-first 64 batches of 16
rows from 75 to 125 (1.80x); 8 x 128 and batch-first 8 x 128 unchanged (1.02x, 1.00x). The
cost: 17 units instead of 9, a cold compile of either operator 12.7 s -> 20.7-22.4 s on this
machine. `batched_linear_nt_seq_first` is the same with nn.Linear's weight `W[o, k]`, read by
register tiles from repacked panels: before the exchange reached such products it ran `small`
over 8-row tiles, each copying its panels for 8 rows, 20.5 ms at 128 x 8 (7.4 GFLOP/s, 0.30x
torch, timed beside torch outside this table); now `small:N`. `matmul_blas` is BLAS's `C = alpha * A @ B + beta * C` (C inout, alpha and beta
values): its cache tiles now copy `alpha * B` (docs/design.md point 5b), in turns against
the code before 1.05x at 512^3 and 1024^3, 1.07x at 2048 x 768 x 768; at 128 x 768 x 768
it runs `small`, untiled, which still multiplies alpha per term (0.84x the bundled matmul
here; 1.00x in turns before and after).

"""

PHRASINGS_TRANSPOSES_SECTION = """
### Transposed reads

From `bench/phrasings.py --only permute_last_two,permute_scale_bias,nchw_to_nhwc` (file
`bench/results/phrasings_transposes.md`), on 2026-11-29, on an Intel Xeon (2 CPUs, AVX-512):
a statement that reads an array in another order than it writes is tiled 16 x 16 over the two
members the arrays run along, its batch untiled, and a full tile of the f32 read is
transposed in AVX-512 registers, into the target for a copy, else into a local tile the
statement reads along its rows (docs/design.md point 4; `schedule/transposes.py`). The code
before, run twice in turns with the first table of the copies on the same machine (an older
tree with these phrasings added): `permute_last_two` 0.36-0.39x torch at 16 x 512 x 512
(`small`: the generic plan tiled the batch by 48, so 16 batches ran untiled), 0.73-0.79x at
1 x 2048 x 2048 (`B=1`, untiled), 0.47-0.64x at 8 x 1000 x 700; `nchw_to_nhwc` 0.42-0.43x at
8 x 64 x 56 x 56; after, in the same pairs of runs: 2.88-2.96x, 3.32-5.12x, 1.73-2.48x and
1.57-1.72x. `permute_scale_bias` (`X.transpose(1, 2) * 0.5 + bias`) took 12.0-13.0 ms and
22.6-25.0 ms before (2.6-2.8 and 1.3-1.5 GB/s), 1.7-4.1 ms and 3.1-4.3 ms after in three runs
later that hour, while torch's time for the same call moved by up to 4x between runs: compare
the times. This machine's load phases move every figure here by up to 2x between runs
(`permute_last_two` at 8 x 1000 x 700: 2.6 to 7.3 ms in four runs of the same code). A 14 x 14
image (`B=1 C=256`) stays untiled: its pair's columns (14) are under one tile, and the
image's 196 pixels are not one loop to tile (0.17-0.28x torch before and after). The bundled
`transpose` ran at 2.3-9.6 GB/s before (0.30-1.02x torch, 256^2 to 4096^2, the same hour as
the table below).

"""

FIXED_SECTION = """
## Fixed sizes against dynamic ones (issue 31, point 7)

From `bench/fixed_sizes.py` (file `bench/results/fixed_sizes.md`): every bundled kernel
compiled dynamic and with its sizes fixed (`--assume "N = ..."`), timed in turns at those
sizes. Three causes were found and fixed: conv2d's init stayed in its band once isl dropped
the band member of B = 1 (0.01x before); a thread test multiplying constant extents as int
overflowed at 1531^3 and kept matmul on one thread (0.51x before); and the fixed sizes were
constants in loop bounds but parameters in subscripts, so gcc did not know the strides
(maxpool B = 1 0.85x, matmul N = 8 0.89x, conv2d C = 3 0.90x before). The sizes a variant's
region fixes are now constants in its code (`codegen_c.emit.fixed_sizes`), the dynamic `N=1`
and `B=1` variants' included; in three runs since, every kernel ran at 0.96x or more (this
one: 0.99x or more). conv2d 1 x 64 x 56^2 runs its fixed compile faster than the dynamic
one in two runs of three (1.52x, 1.63x; 1.08x in the third), the dynamic one timing 0.51
ms on a quiet machine and 0.80-0.85 ms when the shared machine is slow, in either program.

"""

COMPILE_SECTION = """
## Compile time (issue 33, part 2: where a cold compile goes)

"""

COMPILE_WORKERS_SECTION = """
### Variants generated in forked workers

From `bench/compile_workers.py --rounds 3` (file `bench/results/compile_workers.md`), on
2026-11-29, on the Intel Xeon above (2 CPUs). Each variant's AST, lowering passes and C
function built in two worker processes forked from the compiling one
(`codegen_c/functions.py`; the heaviest variant first in the compiling process), against the
same work in one process, in turns. The generation stage alone runs 1.56-1.87x faster in two
workers; a whole cold compile does not (0.83-1.19x, within this machine's noise; an earlier
run of the table gave 0.91-1.17x), because gcc's units, about 60% of a cold compile's CPU
time here (`batched_linear_nt_seq_first`'s 11 units: 10.5 s of gcc against 6.5-8 s of
Python), already keep the second CPU busy while one process generates. So compiles use
workers from three CPUs on only; the gain there has not been measured.

"""
REFERENCE_SECTION = """
### The reference interpreter's lane loops

From `bench/reference_interp.py --rounds 3` (file `bench/results/reference_interp.md`), on
2026-11-29, on the Intel Xeon above. The tests' oracle (`scop/interp.py`) on every phrasing
at the sizes `tests/test_phrasings.py` checks it at, one iteration at a time against lane
loops (`scop/lanes.py`: loops whose iterations cannot meet run as NumPy arrays), in turns.
Both give the same bits, but for NumPy's whole-array exp, log, tanh, sin and cos, which may
round the last place differently (`tests/test_lanes.py`). In the CI-mode test suite the reference
interpreter took 288 s of the tests' 3,702 s before and 16 s after (timed in the same
processes, two workers).

"""
CONCURRENT_SECTION = """
### Processes compiling the same operator at once

From `bench/concurrent_compiles.py --rounds 2` (file `bench/results/concurrent_compiles.md`),
on 2026-11-29, on the Intel Xeon above (2 CPUs). Four processes compile the same phrasing at
once on a fresh cache, beside one process alone, in turns. One of the four builds it; the
others wait for its cache entry (`runtime/cache.py`, `building`) and load it, so four cost
what one does. Before the lock each process built the kernel itself: on the commit before,
processes started the same way (fresh cache, at once) took, for `conv_nhwc`, 39-46 s of wall
time and 78-91 s of CPU two at once against 21.7 s and 39 s alone, and for `matmul_scalar`
25.1 s four at once (a single measurement each, not in this table's turns).

"""
RAGGED_SECTION = """
## Ragged batches (issue 35)

From `bench/ragged.py` (file `bench/results/ragged.md`, its own run): per-sequence operators
over a skewed batch of 64 sequences, polydyn's ragged kernel (each sequence on the variant of
its own length, sequences sharing the threads longest first) against padding the batch to
the longest sequence (torch eager, and polydyn's dense kernel of the same operator) and
torch's jagged nested tensors (n/a: torch 2.14 has no matmul of two jagged operands).
Useful GFLOP/s count the real rows only; the speedups are the padded time over the ragged
time. polydyn's dense scores kernel is slow on the padded batch (0.4 GFLOP/s: its variants
for the guarded triangle are far from a tuned batched matmul), which inflates that column.

"""

RAGGED_OPENCL_SECTION = """
From `bench/ragged.py --target opencl` (file `bench/results/ragged_opencl.md`, its own run, on
PoCL's CPU device): the same batch and operators as OpenCL kernels, the ragged kernel's
launches shared by the sequences (each kernel launched once per step for every sequence that
runs it) against the same kernel launched sequence by sequence. PoCL runs OpenCL on this
machine's CPU, so the absolute figures say little about a GPU; the shared launches' gain over
one-by-one launches is what the table shows.

"""

C_VS_GCC_SECTION = """
## C input against gcc -O3 -march=native (issue 6)

From `bench/c_vs_gcc.py` (`OMP_NUM_THREADS=1` and `=2`, files `bench/results/c_vs_gcc_t*`;
each table's first line names the commit and the day it ran): the C test kernels compiled by
gcc from the original file (no OpenMP pragmas, so single-threaded) against `pd.compile_c` of
the same file, on the same inputs, results compared (GFLOP/s from each kernel's flop count
in the script's `CASES`).

"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, short time budgets")
    p.add_argument("--out", type=Path, help="results directory (default bench/results, or "
                   "bench/out/quick with --quick)")
    p.add_argument("--only", nargs="*", default=[], help="kernel names or kernel-label")
    p.add_argument("--baseline", default="numpy,torch,naive",
                   help="comma list of numpy, torch, torch.compile, torch-cuda, naive")
    p.add_argument("--target", default="c", help="comma list of c, opencl (the first GPU, "
                   "else the first OpenCL device, or PYOPENCL_CTX's; arrays stay on it while "
                   "timed)")
    p.add_argument("--budget", type=float, help="seconds of timed calls per implementation "
                   "and point (default 1.0 in full mode)")
    p.add_argument("--no-costs", action="store_true", help="skip the C target's compile "
                   "times and call overhead")
    p.add_argument("--threads", type=int, help="threads for OpenMP, OpenBLAS and torch "
                   "(sets OMP_NUM_THREADS etc. before NumPy loads; default: all cores)")
    p.add_argument("--quiet", type=float, help="seconds to wait at most for idle CPUs before "
                   "each round of measurements (default 15 in full mode, 0 with --quick)")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--results-md", type=Path, help="where to write RESULTS.md (default "
                   "bench/RESULTS.md for a full run of the whole suite into bench/results; "
                   "none for --quick or another --out)")
    p.add_argument("--deadline", type=float, help="seconds after which no further sweep "
                   "starts (the sweeps measured by then are written; the others listed as "
                   "not run)")
    p.add_argument("--resume", action="store_true",
                   help="reuse the sweeps an interrupted run left in OUT/.partial")
    p.add_argument("--render-only", action="store_true",
                   help="write RESULTS.md from an existing suite.json, run nothing")
    args = p.parse_args(argv)

    if args.threads:  # before NumPy (OpenBLAS) and OpenMP read them
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    from dataclasses import replace

    from polydyn.bench.suite import default_settings, run_suite
    from polydyn.bench.summary import render

    out = args.out or (HERE / "out" / "quick" if args.quick else HERE / "results")
    results_md = args.results_md
    if results_md is None and not args.quick and not args.only and \
            out.resolve() == (HERE / "results").resolve():
        results_md = HERE / "RESULTS.md"
    if not args.render_only:
        settings = default_settings(args.quick)
        baselines = tuple(b for b in args.baseline.split(",") if b and b != "none")
        targets = tuple(t for t in args.target.split(",") if t)
        settings = replace(settings, baselines=baselines, targets=targets,
                           progress=not args.no_progress)
        if args.quiet is not None:
            settings = replace(settings, quiet=args.quiet)
        if args.budget is not None:
            settings = replace(settings, budget=replace(settings.budget, seconds=args.budget))
        suite = run_suite(out, quick=args.quick, settings=settings, plots=not args.no_plot,
                          only=args.only, resume=args.resume, costs=not args.no_costs,
                          deadline=args.deadline)
        print(suite.markdown)
        print("wrote " + ", ".join(str(f) for f in suite.files[:3]) +
              f" and {len(suite.files) - 3} plot(s)")
    if results_md is not None:
        results_md.write_text(_results_text(out, results_md, render))
        print(f"wrote {results_md}")
    return 0


def _results_text(out: Path, results_md: Path, render) -> str:
    """RESULTS.md: the run in ``out`` with GAPS.md (by hand: what limits the targets not met),
    then the OpenCL runs (PoCL, a GPU), other machines' runs and the C-input tables."""
    text = _render_run(out, results_md, HERE / "GAPS.md", render)[1]
    opencl = HERE / "results-opencl" / "suite.md"
    if opencl.is_file():  # the OpenCL run on PoCL
        text += OPENCL_SECTION + opencl.read_text()
    gpu = HERE / "results-gpu"
    if (gpu / "suite.md").is_file():  # the OpenCL run on a GPU, its GAPS.md first
        gaps = gpu / "GAPS.md"
        text += GPU_SECTION + (gaps.read_text() + "\n" if gaps.is_file() else "") + \
            _gpu_tables(gpu)
    for other in sorted(HERE.glob("results-*/suite.json")):
        if other.parent != out.resolve() and other.parent.name not in ("results-opencl",
                                                                       "results-gpu"):
            text += _other_machine(other.parent, results_md, render)
    for name, section in (("products", PRODUCTS_SECTION), ("phrasings", PHRASINGS_SECTION),
                          ("phrasings_added", PHRASINGS_ADDED_SECTION),
                          ("phrasings_padding", PHRASINGS_PADDING_SECTION),
                          ("phrasings_sums", PHRASINGS_SUMS_SECTION),
                          ("phrasings_invariants", PHRASINGS_INVARIANTS_SECTION),
                          ("phrasings_pools", PHRASINGS_POOLS_SECTION),
                          ("phrasings_strided", PHRASINGS_STRIDED_SECTION),
                          ("phrasings_rows", PHRASINGS_ROWS_SECTION),
                          ("phrasings_passes", PHRASINGS_PASSES_SECTION),
                          ("phrasings_axes", PHRASINGS_AXES_SECTION),
                          ("phrasings_layouts", PHRASINGS_LAYOUTS_SECTION),
                          ("phrasings_exchange", PHRASINGS_EXCHANGE_SECTION),
                          ("phrasings_transposes", PHRASINGS_TRANSPOSES_SECTION),
                          ("fixed_sizes", FIXED_SECTION),
                          ("compile_time", COMPILE_SECTION),
                          ("compile_workers", COMPILE_WORKERS_SECTION),
                          ("reference_interp", REFERENCE_SECTION),
                          ("concurrent_compiles", CONCURRENT_SECTION)):
        table = HERE / "results" / f"{name}.md"
        if table.is_file():  # bench/NAME.py's table, or the compile-time breakdown
            text += section + table.read_text()
    text += _bert_text()
    ragged = HERE / "results" / "ragged.md"
    if ragged.is_file():  # bench/ragged.py's table (issue 35)
        text += RAGGED_SECTION + ragged.read_text()
    ragged_ocl = HERE / "results" / "ragged_opencl.md"
    if ragged_ocl.is_file():  # bench/ragged.py --target opencl
        text += RAGGED_OPENCL_SECTION + ragged_ocl.read_text()
    gcc = [HERE / "results" / f"c_vs_gcc_t{t}.md" for t in (1, 2)]
    if all(f.is_file() for f in gcc):  # bench/c_vs_gcc.py's tables (issue 6)
        text += C_VS_GCC_SECTION + "\n".join(f.read_text() for f in gcc)
    return text


def _bert_text() -> str:
    """bench/bert_layer.py's tables (issue 34): nn.Linear's layout, then input-major."""
    bert = HERE / "results" / "bert_layer.md"
    if not bert.is_file():
        return ""
    text = BERT_SECTION + bert.read_text()
    other = HERE / "results" / "bert_layer_input_major.md"
    if other.is_file():
        text += "\nThe weights read from `[in, out]` copies (`--layout input-major`):\n\n" + \
            other.read_text()
    return text


def _gpu_tables(out: Path) -> str:
    """A GPU run's tables, from its suite.json (each rate's share of torch-cuda's and of the
    GPU's roofline where its peaks are known), else its suite.md as written."""
    from polydyn.bench.report import suite_markdown

    if (out / "suite.json").is_file():
        return suite_markdown(json.loads((out / "suite.json").read_text()))
    return (out / "suite.md").read_text()


def _render_run(out: Path, results_md: Path, gaps: Path, render) -> tuple[dict, str]:
    """The run in ``out`` (its suite.json) rendered as RESULTS.md renders it, PNG links
    relative to ``results_md``, with ``gaps`` after the targets if it exists."""
    doc = json.loads((out / "suite.json").read_text())
    rel = os.path.relpath(out.resolve(), results_md.resolve().parent)
    source = os.path.relpath(out.resolve(), ROOT)
    return doc, render(doc, rel, source, gaps.read_text() if gaps.is_file() else "")


def _other_machine(out: Path, results_md: Path, render) -> str:
    """A full run in ``out`` (another machine's) as a section of RESULTS.md, with the hand-
    written ``out/GAPS.md`` if there is one."""
    doc, body = _render_run(out, results_md, out / "GAPS.md", render)
    lines = body.splitlines()[1:]  # its own title goes
    lines = ["#" + line if line.startswith("##") else line for line in lines]
    machine = doc["machine"]
    name = f"{machine.get('cpu', out.name)} ({machine.get('simd', '?')})"
    source = os.path.relpath(out.resolve(), ROOT)
    return OTHER_MACHINE_SECTION.format(name=name, source=source) + "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
