"""Loading a generated shared library once per process and preparing its call prototypes."""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path

from ..scop.ir import Scop

_CTYPE = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32,
          "i64": ctypes.c_int64}
_LOADED: dict[str, object] = {}
_LOCK = threading.Lock()


def load_library(path: Path) -> ctypes.CDLL:
    key = str(path)
    with _LOCK:
        lib = _LOADED.get(key)
        if lib is None:
            lib = ctypes.CDLL(key)
            _LOADED[key] = lib
        return lib


class CFunctions:
    """The dispatcher ``NAME``, ``NAME_select`` and ``NAME_run`` with their prototypes."""

    def __init__(self, lib: ctypes.CDLL, scop: Scop):
        sym_types = [ctypes.c_int64] * len(scop.syms)
        arg_types = [_CTYPE[a.dtype] if a.kind == "value" else ctypes.c_void_p
                     for a in scop.arg_arrays]
        self.dispatch = getattr(lib, scop.name)
        self.dispatch.argtypes = sym_types + arg_types
        self.dispatch.restype = ctypes.c_int
        self.select = getattr(lib, f"{scop.name}_select")
        self.select.argtypes = sym_types
        self.select.restype = ctypes.c_int
        self.run = getattr(lib, f"{scop.name}_run")
        self.run.argtypes = [ctypes.c_int, *sym_types, *arg_types]
        self.run.restype = ctypes.c_int


def load_extension(path: Path, module: str) -> object:
    """Import the generated CPython extension at ``path`` (once per process)."""
    import importlib.machinery
    import importlib.util

    key = f"{path}::{module}"
    with _LOCK:
        mod = _LOADED.get(key)
        if mod is None:
            loader = importlib.machinery.ExtensionFileLoader(module, str(path))
            spec = importlib.util.spec_from_loader(module, loader)
            mod = importlib.util.module_from_spec(spec)
            loader.exec_module(mod)
            _LOADED[key] = mod
        return mod
