"""The bundled operator library: one module per kernel, each with `numpy_impl`."""

import importlib

# kernel name -> (module name, operator attribute name)
ALL = {
    "matmul": ("kernels.matmul", "matmul"),
    "batched_matmul": ("kernels.batched_matmul", "batched_matmul"),
    "bias_relu": ("kernels.bias_relu", "bias_relu"),
    "softmax": ("kernels.softmax", "softmax"),
    "layernorm": ("kernels.layernorm", "layernorm"),
    "conv2d": ("kernels.conv2d", "conv2d"),
    "maxpool": ("kernels.maxpool", "maxpool"),
    "transpose": ("kernels.transpose", "transpose"),
    "jacobi2d": ("kernels.jacobi2d", "jacobi2d"),
}


def load(name):
    """Return `(operator, numpy_impl)` of the kernel called `name` in `ALL`."""
    module_name, attr = ALL[name]
    module = importlib.import_module(module_name)
    return getattr(module, attr), module.numpy_impl
