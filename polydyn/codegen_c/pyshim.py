"""A CPython entry point for the dispatcher: the per-call fast path.

The shim takes the positional arguments (and index syms as keywords), and when every array is
a C-contiguous NumPy array of the right dtype and rank whose shapes bind the syms directly, it
allocates the outputs and calls the dispatcher with the GIL released: one C call, no Python
work per argument. Anything else (a view, a list, an output buffer, a wrong shape, sizes
outside the context) returns ``NotImplemented`` before anything is written, and the Kernel's
checked Python path handles the call (and raises the precise ShapeError).
"""

from __future__ import annotations

from ..parametric.binding import Binder
from ..scop.affine import Aff
from ..scop.exprs import C_TYPE
from ..scop.ir import Scop

_NPY = {"f32": "NPY_FLOAT32", "f64": "NPY_FLOAT64", "i32": "NPY_INT32", "i64": "NPY_INT64"}


def shim_supported(scop: Scop) -> bool:
    """The fast path needs every shape sym read straight from a dimension (``N``, not
    ``N + 2``) and no value argument of integer type (Python ints need range checks)."""
    binder = Binder(scop)
    direct = all(aff.op == "var" for _, _, _, aff in binder.plan)
    return direct and not binder.unbound


def shim_source(scop: Scop, module: str) -> str:
    binder = Binder(scop)
    name = scop.name
    pos = binder.positional
    out = binder.outputs
    lines = [
        "#define PY_SSIZE_T_CLEAN",
        "#include <Python.h>",
        "#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION",
        "#include <numpy/arrayobject.h>",
        "",
        "static PyObject *pd_fast(PyObject *self, PyObject *const *args, Py_ssize_t nargs, "
        "PyObject *kwnames) {",
        f"  if (nargs != {len(pos)}) Py_RETURN_NOTIMPLEMENTED;",
    ]
    # the syms are locals here: prefixed, so that none is named like the shim's own
    local = {s: Aff.var(f"pd_s_{s}") for s in scop.syms}
    for s in scop.syms:
        lines.append(f"  int64_t pd_s_{s} = -1;")
    index = list(scop.index_syms)
    for a in out:
        lines.append(f"  PyArrayObject *b_{a.name} = NULL;")
    lines.append("  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;")
    lines.append("  int nidx = 0;")
    lines.append("  for (Py_ssize_t k = 0; k < nkw; k++) {")
    lines.append("    PyObject *key = PyTuple_GET_ITEM(kwnames, k);")
    lines.append("    PyObject *val = args[nargs + k];")
    branches = []
    for s in index:
        branches.append(
            f'if (PyUnicode_CompareWithASCIIString(key, "{scop.user_name(s)}") == 0) {{\n'
            "      if (!PyLong_CheckExact(val)) Py_RETURN_NOTIMPLEMENTED;\n"
            f"      pd_s_{s} = PyLong_AsLongLong(val);\n"
            f"      if (pd_s_{s} < 0 || PyErr_Occurred()) {{ PyErr_Clear(); "
            "Py_RETURN_NOTIMPLEMENTED; }\n"
            "      nidx++;\n    }")
    for a in out:
        branches.append(
            f'if (PyUnicode_CompareWithASCIIString(key, "{scop.user_name(a.name)}") == 0) {{\n'
            "      if (!PyArray_CheckExact(val)) Py_RETURN_NOTIMPLEMENTED;\n"
            f"      b_{a.name} = (PyArrayObject *)val;\n"
            f"      if (PyArray_TYPE(b_{a.name}) != {_NPY[a.dtype]} || "
            f"PyArray_NDIM(b_{a.name}) != {a.rank} || !PyArray_IS_C_CONTIGUOUS(b_{a.name}) "
            f"|| !PyArray_ISALIGNED(b_{a.name}) || PyArray_ISBYTESWAPPED(b_{a.name}) || "
            f"!PyArray_ISWRITEABLE(b_{a.name})) Py_RETURN_NOTIMPLEMENTED;\n    }}")
    branches.append("Py_RETURN_NOTIMPLEMENTED;")
    lines.append("    " + " else ".join(branches))
    lines.append("  }")
    lines.append(f"  if (nidx != {len(index)}) Py_RETURN_NOTIMPLEMENTED;")
    for k, a in enumerate(pos):
        if a.kind == "value":
            ctype = C_TYPE[a.dtype]
            if a.dtype in ("f32", "f64"):
                lines.append(f"  if (!PyFloat_CheckExact(args[{k}])) Py_RETURN_NOTIMPLEMENTED;")
                lines.append(f"  {ctype} v_{a.name} = ({ctype})PyFloat_AS_DOUBLE(args[{k}]);")
            else:
                lines.append("  Py_RETURN_NOTIMPLEMENTED;")
            continue
        lines += [
            f"  if (!PyArray_CheckExact(args[{k}])) Py_RETURN_NOTIMPLEMENTED;",
            f"  PyArrayObject *a_{a.name} = (PyArrayObject *)args[{k}];",
            f"  if (PyArray_TYPE(a_{a.name}) != {_NPY[a.dtype]} || PyArray_NDIM(a_{a.name}) "
            f"!= {a.rank} || !PyArray_IS_C_CONTIGUOUS(a_{a.name}) || "
            f"!PyArray_ISALIGNED(a_{a.name}) || PyArray_ISBYTESWAPPED(a_{a.name})) "
            "Py_RETURN_NOTIMPLEMENTED;",
        ]
        if a.kind == "inout":
            lines.append(f"  if (!PyArray_ISWRITEABLE(a_{a.name})) Py_RETURN_NOTIMPLEMENTED;")
    # bind syms from the first dimension that is exactly the sym, then check every dimension
    for s, arg, d, _aff in binder.plan:
        lines.append(f"  pd_s_{s} = (int64_t)PyArray_DIM(a_{arg}, {d});")
    for a in pos:
        if a.kind == "value":
            continue
        for d, aff in enumerate(a.shape):
            lines.append(f"  if ((int64_t)PyArray_DIM(a_{a.name}, {d}) != "
                         f"({aff.subst(local).to_c()})) "
                         "Py_RETURN_NOTIMPLEMENTED;")
    # inouts must not overlap other arrays (the Python path copies such inputs first)
    arrays = [a for a in pos if a.kind != "value"]
    for a in arrays:
        if a.kind != "inout":
            continue
        for b in arrays:
            if b is a:
                continue
            lines.append(f"  if (pd_overlap(a_{a.name}, a_{b.name})) Py_RETURN_NOTIMPLEMENTED;")
    for a in out:
        dims = ", ".join(f"(npy_intp)({d.subst(local).to_c()})" for d in a.shape)
        lines += [
            f"  npy_intp d_{a.name}[{max(1, a.rank)}] = {{{dims or '0'}}};",
            f"  for (int k = 0; k < {a.rank}; k++) if (d_{a.name}[k] < 0 || (b_{a.name} && "
            f"PyArray_DIM(b_{a.name}, k) != d_{a.name}[k])) Py_RETURN_NOTIMPLEMENTED;",
        ]
        for b in arrays:
            lines.append(f"  if (b_{a.name} && pd_overlap(b_{a.name}, a_{b.name})) "
                         "Py_RETURN_NOTIMPLEMENTED;")
        for b in out[: out.index(a)]:
            lines.append(f"  if (b_{a.name} && b_{b.name} && pd_overlap(b_{a.name}, "
                         f"b_{b.name})) Py_RETURN_NOTIMPLEMENTED;")
    for a in out:
        lines.append(f"  PyObject *o_{a.name} = b_{a.name} ? (Py_INCREF(b_{a.name}), "
                     f"(PyObject *)b_{a.name}) : PyArray_EMPTY({a.rank}, d_{a.name}, "
                     f"{_NPY[a.dtype]}, 0);")
        lines.append(f"  if (!o_{a.name}) {{ {_decref_outs(out, a)} return NULL; }}")
    call = [f"pd_s_{s}" for s in scop.syms]
    for a in scop.arg_arrays:
        if a.kind == "value":
            call.append(f"v_{a.name}")
        elif a.kind == "out":
            call.append(f"({C_TYPE[a.dtype]} *)PyArray_DATA((PyArrayObject *)o_{a.name})")
        else:
            call.append(f"({C_TYPE[a.dtype]} *)PyArray_DATA(a_{a.name})")
    lines += [
        "  int rc;",
        "  Py_BEGIN_ALLOW_THREADS",
        f"  rc = {name}({', '.join(call)});",
        "  Py_END_ALLOW_THREADS",
        f"  if (rc != 0) {{ {_decref_outs(out, None)} Py_RETURN_NOTIMPLEMENTED; }}",
    ]
    if not out:
        lines.append("  Py_RETURN_NONE;")
    elif len(out) == 1:
        lines.append(f"  return o_{out[0].name};")
    else:
        items = ", ".join(f"o_{a.name}" for a in out)
        lines.append(f"  PyObject *t = PyTuple_Pack({len(out)}, {items});")
        lines.append(f"  {_decref_outs(out, None)}")
        lines.append("  return t;")
    lines.append("}")
    helper = [
        "static int pd_overlap(PyArrayObject *a, PyArrayObject *b) {",
        "  char *a0 = PyArray_BYTES(a), *b0 = PyArray_BYTES(b);",
        "  char *a1 = a0 + PyArray_NBYTES(a), *b1 = b0 + PyArray_NBYTES(b);",
        "  return a0 < b1 && b0 < a1;",
        "}",
    ]
    tail = [
        "static PyMethodDef pd_methods[] = {",
        '  {"call", (PyCFunction)(void (*)(void))pd_fast, METH_FASTCALL | METH_KEYWORDS, '
        '"fast path"},',
        "  {NULL, NULL, 0, NULL}",
        "};",
        f'static struct PyModuleDef pd_module = {{PyModuleDef_HEAD_INIT, "{module}", NULL, -1, '
        "pd_methods};",
        f"PyMODINIT_FUNC PyInit_{module}(void) {{",
        "  import_array();",
        "  return PyModule_Create(&pd_module);",
        "}",
    ]
    return "\n".join(lines[:5] + helper + lines[5:] + tail) + "\n"


def _decref_outs(outs: list, upto: object) -> str:
    parts = []
    for a in outs:
        if a is upto:
            break
        parts.append(f"Py_XDECREF(o_{a.name});")
    return " ".join(parts)
