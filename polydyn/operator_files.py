"""The operator a command names: a ``@pd.operator`` of a user's Python file or a function of a
C file, and its Scop with ``--assume`` added; shared by ``polydyn compile``, ``explain`` and
``bench``."""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any

import islpy as isl

from .errors import PolydynError, UsageError


def load_operators(path: str) -> dict[str, Any]:
    """The operators defined in a Python file (``@pd.operator``), by name."""
    from .scop.operator import Operator

    file = Path(path)
    if not file.is_file():
        raise UsageError(f"{path}: no such file")
    name = f"polydyn_user_{abs(hash(str(file.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except PolydynError:
        raise
    except SyntaxError as exc:
        raise UsageError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    except Exception as exc:
        tb = traceback.extract_tb(exc.__traceback__)
        where = next((f"{f.filename}:{f.lineno}" for f in reversed(tb)
                      if Path(f.filename).resolve() == file.resolve()), path)
        raise UsageError(f"{where}: error while loading {path}: "
                         f"{type(exc).__name__}: {exc}") from None
    from .scop.ragged import RaggedOperator

    return {v.name: v for v in vars(module).values() if isinstance(v, Operator | RaggedOperator)}


def pick_operator(path: str, op_name: str | None) -> Any:
    """The operator to compile: a Python file's ``@pd.operator`` or a C file's function."""
    if path.endswith(".c"):
        from .scop.from_c import operator_from_c

        if not Path(path).is_file():
            raise UsageError(f"{path}: no such file")
        return operator_from_c(Path(path), function=op_name)
    ops = load_operators(path)
    if not ops:
        raise UsageError(f"{path}: defines no @pd.operator")
    if op_name is None:
        if len(ops) > 1:
            raise UsageError(f"{path} defines several operators ({', '.join(sorted(ops))}); "
                             "choose one with --op")
        return next(iter(ops.values()))
    if op_name not in ops:
        raise UsageError(f"{path}: no operator named {op_name!r}; it defines "
                         f"{', '.join(sorted(ops))}")
    return ops[op_name]


def with_assume(op: Any, extra: str | None) -> Any:
    """The operator's Scop with ``--assume`` added to its context; for a ragged operator,
    the operator over that Scop (its per-sequence one)."""
    from .scop.ragged import RaggedOperator

    if isinstance(op, RaggedOperator):
        return op.over(with_assume(op.scop, extra)) if extra else op
    scop = getattr(op, "scop", op)
    if not extra:
        return scop
    from .scop.names import rename_assume

    here = {user: name for name, user in scop.user_names}
    try:
        more = isl.Set(f"{scop.param_space_text()} -> {{ : {rename_assume(extra, here)} }}")
    except isl.Error:
        raise UsageError(f"--assume {extra!r}: not isl constraints over the syms "
                         f"({', '.join(scop.syms)})") from None
    context = scop.context.intersect(more).coalesce()
    if context.is_empty():
        raise UsageError(f"--assume {extra!r} leaves no sizes at all")
    assume = f"{scop.assume} and {extra}" if scop.assume else extra
    return scop.replace(context=context, assume=assume)
