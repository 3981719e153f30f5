"""The batch entry of a ragged operator: ``NAME_batch`` loops over the sequences in generated
C and runs the dispatcher (so the variant of each sequence's own length) on each one's blocks.

Threads: the caller passes the sequences longest first (``order``) with their work. A
sequence whose work is at least the total over the thread count would be a straggler in a
shared loop: those run one after another, each with the variants' own parallel loops. The
rest run in one ``omp parallel for schedule(dynamic, 1)`` over sequences (longest first);
inside it the variants' parallel regions are inactive (OpenMP's default of one active
level), so each sequence runs on the thread that took it and no thread team is nested.
"""

from __future__ import annotations

from ..scop.exprs import C_TYPE
from ..scop.ir import Scop


def batch_params(scop: Scop, length: str, batched: frozenset[str]) -> list[tuple[str, str]]:
    """The batch entry's parameters after (nseq, lengths, order, work): ``(kind, name)``,
    kind ``sym``, ``value``, ``array`` or ``offsets``."""
    out = [("sym", s) for s in scop.syms if s != length]
    for a in scop.arg_arrays:
        out.append(("value" if a.kind == "value" else "array", a.name))
    out += [("offsets", a.name) for a in scop.arg_arrays if a.name in batched]
    return out


def batch_source(scop: Scop, length: str, batched: frozenset[str]) -> str:
    name = scop.name
    params = ["int64_t pd_nseq", "const int64_t *pd_len", "const int64_t *pd_order",
              "const double *pd_work"]
    for kind, n in batch_params(scop, length, batched):
        if kind == "sym":
            params.append(f"int64_t {n}")
        elif kind == "value":
            params.append(f"{C_TYPE[scop.array(n).dtype]} {n}")
        elif kind == "array":
            a = scop.array(n)
            const = "const " if a.kind == "in" else ""
            params.append(f"{const}{C_TYPE[a.dtype]} *{n}")
        else:
            params.append(f"const int64_t *pd_off_{n}")
    args = []
    for s in scop.syms:
        args.append("pd_len[pd_b]" if s == length else s)
    for a in scop.arg_arrays:
        args.append(f"{a.name} + pd_off_{a.name}[pd_b]" if a.name in batched else a.name)
    call = f"{name}({', '.join(args)})"
    return "\n".join([
        f"/* the batch of sequences of ragged operator {name}: longest first; see "
        "codegen_c/batch.py */",
        f"int {name}_batch({', '.join(params)}) {{",
        "  double pd_total = 0.0;",
        "  for (int64_t pd_k = 0; pd_k < pd_nseq; pd_k++) pd_total += pd_work[pd_k];",
        "  const double pd_share = pd_total / (double)pd_threads();",
        "  int64_t pd_alone = 0;  /* the stragglers: run alone, with the variants' threads */",
        "  while (pd_threads() > 1 && pd_alone < pd_nseq && pd_work[pd_alone] > 0.0 &&",
        "         pd_work[pd_alone] >= pd_share) pd_alone++;",
        "  if (pd_nseq - pd_alone == 1) pd_alone = pd_nseq;  /* one left: it has the threads */",
        "  int pd_rc = 0;",
        "  for (int64_t pd_k = 0; pd_k < pd_alone; pd_k++) {",
        "    const int64_t pd_b = pd_order[pd_k];",
        f"    int pd_r = {call};",
        "    if (pd_r) pd_rc = pd_r;",
        "  }",
        "  if (pd_alone < pd_nseq) {",
        "    /* one team; the variants' own regions inside it are serialized (one thread) */",
        "    #pragma omp parallel for schedule(dynamic, 1)",
        "    for (int64_t pd_k = pd_alone; pd_k < pd_nseq; pd_k++) {",
        "      const int64_t pd_b = pd_order[pd_k];",
        f"      int pd_r = {call};",
        "      if (pd_r) {",
        "        #pragma omp atomic write",
        "        pd_rc = pd_r;",
        "      }",
        "    }",
        "  }",
        "  return pd_rc;",
        "}",
        "",
    ])
