#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

static int pd_overlap(PyArrayObject *a, PyArrayObject *b) {
  char *a0 = PyArray_BYTES(a), *b0 = PyArray_BYTES(b);
  char *a1 = a0 + PyArray_NBYTES(a), *b1 = b0 + PyArray_NBYTES(b);
  return a0 < b1 && b0 < a1;
}
static PyObject *pd_fast(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  if (nargs != 1) Py_RETURN_NOTIMPLEMENTED;
  int64_t pd_s_N = -1;
  int64_t pd_s_T = -1;
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  int nidx = 0;
  for (Py_ssize_t k = 0; k < nkw; k++) {
    PyObject *key = PyTuple_GET_ITEM(kwnames, k);
    PyObject *val = args[nargs + k];
    if (PyUnicode_CompareWithASCIIString(key, "T") == 0) {
      if (!PyLong_CheckExact(val)) Py_RETURN_NOTIMPLEMENTED;
      pd_s_T = PyLong_AsLongLong(val);
      if (pd_s_T < 0 || PyErr_Occurred()) { PyErr_Clear(); Py_RETURN_NOTIMPLEMENTED; }
      nidx++;
    } else Py_RETURN_NOTIMPLEMENTED;
  }
  if (nidx != 1) Py_RETURN_NOTIMPLEMENTED;
  if (!PyArray_CheckExact(args[0])) Py_RETURN_NOTIMPLEMENTED;
  PyArrayObject *a_A = (PyArrayObject *)args[0];
  if (PyArray_TYPE(a_A) != NPY_FLOAT32 || PyArray_NDIM(a_A) != 2 || !PyArray_IS_C_CONTIGUOUS(a_A) || !PyArray_ISALIGNED(a_A) || PyArray_ISBYTESWAPPED(a_A)) Py_RETURN_NOTIMPLEMENTED;
  if (!PyArray_ISWRITEABLE(a_A)) Py_RETURN_NOTIMPLEMENTED;
  pd_s_N = (int64_t)PyArray_DIM(a_A, 0);
  if ((int64_t)PyArray_DIM(a_A, 0) != (pd_s_N)) Py_RETURN_NOTIMPLEMENTED;
  if ((int64_t)PyArray_DIM(a_A, 1) != (pd_s_N)) Py_RETURN_NOTIMPLEMENTED;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = jacobi2d(pd_s_N, pd_s_T, (float *)PyArray_DATA(a_A));
  Py_END_ALLOW_THREADS
  if (rc != 0) {  Py_RETURN_NOTIMPLEMENTED; }
  Py_RETURN_NONE;
}
static PyMethodDef pd_methods[] = {
  {"call", (PyCFunction)(void (*)(void))pd_fast, METH_FASTCALL | METH_KEYWORDS, "fast path"},
  {NULL, NULL, 0, NULL}
};
static struct PyModuleDef pd_module = {PyModuleDef_HEAD_INIT, "pd_jacobi2d_56b4ceb69de6", NULL, -1, pd_methods};
PyMODINIT_FUNC PyInit_pd_jacobi2d_56b4ceb69de6(void) {
  import_array();
  return PyModule_Create(&pd_module);
}
