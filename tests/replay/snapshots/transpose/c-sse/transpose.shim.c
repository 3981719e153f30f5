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
  int64_t pd_s_M = -1;
  PyArrayObject *b_B = NULL;
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  int nidx = 0;
  for (Py_ssize_t k = 0; k < nkw; k++) {
    PyObject *key = PyTuple_GET_ITEM(kwnames, k);
    PyObject *val = args[nargs + k];
    if (PyUnicode_CompareWithASCIIString(key, "B") == 0) {
      if (!PyArray_CheckExact(val)) Py_RETURN_NOTIMPLEMENTED;
      b_B = (PyArrayObject *)val;
      if (PyArray_TYPE(b_B) != NPY_FLOAT32 || PyArray_NDIM(b_B) != 2 || !PyArray_IS_C_CONTIGUOUS(b_B) || !PyArray_ISALIGNED(b_B) || PyArray_ISBYTESWAPPED(b_B) || !PyArray_ISWRITEABLE(b_B)) Py_RETURN_NOTIMPLEMENTED;
    } else Py_RETURN_NOTIMPLEMENTED;
  }
  if (nidx != 0) Py_RETURN_NOTIMPLEMENTED;
  if (!PyArray_CheckExact(args[0])) Py_RETURN_NOTIMPLEMENTED;
  PyArrayObject *a_A = (PyArrayObject *)args[0];
  if (PyArray_TYPE(a_A) != NPY_FLOAT32 || PyArray_NDIM(a_A) != 2 || !PyArray_IS_C_CONTIGUOUS(a_A) || !PyArray_ISALIGNED(a_A) || PyArray_ISBYTESWAPPED(a_A)) Py_RETURN_NOTIMPLEMENTED;
  pd_s_N = (int64_t)PyArray_DIM(a_A, 0);
  pd_s_M = (int64_t)PyArray_DIM(a_A, 1);
  if ((int64_t)PyArray_DIM(a_A, 0) != (pd_s_N)) Py_RETURN_NOTIMPLEMENTED;
  if ((int64_t)PyArray_DIM(a_A, 1) != (pd_s_M)) Py_RETURN_NOTIMPLEMENTED;
  npy_intp d_B[2] = {(npy_intp)(pd_s_M), (npy_intp)(pd_s_N)};
  for (int k = 0; k < 2; k++) if (d_B[k] < 0 || (b_B && PyArray_DIM(b_B, k) != d_B[k])) Py_RETURN_NOTIMPLEMENTED;
  if (b_B && pd_overlap(b_B, a_A)) Py_RETURN_NOTIMPLEMENTED;
  PyObject *o_B = b_B ? (Py_INCREF(b_B), (PyObject *)b_B) : PyArray_EMPTY(2, d_B, NPY_FLOAT32, 0);
  if (!o_B) {  return NULL; }
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = transpose(pd_s_N, pd_s_M, (float *)PyArray_DATA(a_A), (float *)PyArray_DATA((PyArrayObject *)o_B));
  Py_END_ALLOW_THREADS
  if (rc != 0) { Py_XDECREF(o_B); Py_RETURN_NOTIMPLEMENTED; }
  return o_B;
}
static PyMethodDef pd_methods[] = {
  {"call", (PyCFunction)(void (*)(void))pd_fast, METH_FASTCALL | METH_KEYWORDS, "fast path"},
  {NULL, NULL, 0, NULL}
};
static struct PyModuleDef pd_module = {PyModuleDef_HEAD_INIT, "pd_transpose_e483de2323f0", NULL, -1, pd_methods};
PyMODINIT_FUNC PyInit_pd_transpose_e483de2323f0(void) {
  import_array();
  return PyModule_Create(&pd_module);
}
