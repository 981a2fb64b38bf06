"""The slice of CPython's C API that the generated entry points call, and the one step that
turns a compiled entry point into a Python callable.

`Py_buffer`'s layout, the PyBUF_* flags and METH_FASTCALL are fixed by CPython's ABI (the same
from 3.11 on, x86-64).  The functions are resolved by name in this process (`ctypes.pythonapi`)
and handed to LLVM's loader with `llvm.add_symbol`, so the cached object code carries
relocations, never addresses of this process.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir

from ..ir.core import i32, i64, ptr, void

# struct Py_buffer (80 bytes): the fields the entry points read
PY_BUFFER_SIZE = 80
BUF_BUF = 0  # void *buf
BUF_OBJ = 8  # PyObject *obj (NULL: nothing to release)
BUF_LEN = 16  # Py_ssize_t len, in bytes
BUF_FORMAT = 40  # char *format (NULL means "B")

PyBUF_WRITABLE = 0x0001
PyBUF_FORMAT = 0x0004
PyBUF_C_CONTIGUOUS = 0x0038  # includes PyBUF_STRIDES and PyBUF_ND
METH_FASTCALL = 0x0080

FUNCTIONS: dict[str, tuple[ir.Type, list[ir.Type]]] = {
    "PyObject_GetBuffer": (i32, [ptr, ptr, i32]),
    "PyBuffer_Release": (void, [ptr]),
    "PyBytes_FromStringAndSize": (ptr, [ptr, i64]),
    "PyBytes_AsString": (ptr, [ptr]),
    "PyLong_FromLong": (ptr, [i64]),
    "PyLong_AsSsize_t": (i64, [ptr]),
    "PyErr_Clear": (void, []),
    "Py_DecRef": (void, [ptr]),
    "PyEval_SaveThread": (ptr, []),
    "PyEval_RestoreThread": (void, [ptr]),
    "PyTuple_Size": (i64, [ptr]),
    "PyTuple_GetItem": (ptr, [ptr, i64]),
    "PyMem_Malloc": (ptr, [i64]),
    "PyMem_Free": (void, [ptr]),
}
NONE = "_Py_NoneStruct"  # the None object, compared by address


def declare(module: ir.Module, name: str) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        ret, args = FUNCTIONS[name]
        fn = ir.Function(module, ir.FunctionType(ret, args), name=name)
    return fn


def none_object(module: ir.Module) -> ir.GlobalVariable:
    g = module.globals.get(NONE)
    if g is None:
        g = ir.GlobalVariable(module, ir.IntType(8), name=NONE)  # external: only its address
        g.type = ir.PointerType()  # llvmlite prints typed pointers; LLVM 22 reads opaque ones
    return g


@functools.cache
def register() -> None:
    """Tell LLVM's loader where this process keeps the C API (once per process)."""
    for name in FUNCTIONS:
        llvm.add_symbol(name, ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value)
    llvm.add_symbol(NONE, id(None))


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_new_function = ctypes.pythonapi.PyCFunction_NewEx
_new_function.restype = ctypes.py_object
_new_function.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]
_DEFS: dict[tuple[str, int], _MethodDef] = {}  # a PyMethodDef must outlive its functions


def function(name: str, address: int, self_obj: Any) -> Callable[..., Any]:
    """A builtin function calling the METH_FASTCALL entry at ``address`` with ``self_obj`` as
    its ``self`` (kept alive by the function)."""
    key = (name, address)
    md = _DEFS.get(key)
    if md is None:
        md = _DEFS[key] = _MethodDef(name.encode(), address, METH_FASTCALL, None)
    return _new_function(ctypes.addressof(md), self_obj, None)
