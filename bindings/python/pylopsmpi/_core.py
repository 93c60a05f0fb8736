"""Glue between the generated cffi layer and the Pythonic classes: dtypes, communicators,
handle lifetimes, the status check and the callback trampolines.

Lifetimes. Every C handle lives in a `Handle`. Handles whose destroy function is not collective
(arrays, operators, layouts, stacks, solver info; see `_api.COLLECTIVE`, generated from the API
description) are freed by `destroy()`, a `with` block, or the garbage collector. Communicator
handles (collective destroy) are never freed by the garbage collector: one library communicator is
cached per mpi4py communicator and they are all destroyed, in creation order, by an atexit hook
registered after mpi4py's own, so it runs before MPI is finalized.
"""
import atexit
import sys
import threading
import traceback
import weakref

import numpy as np
from mpi4py import MPI

from ._plm import ffi, lib
from . import _api
from .errors import check as _check_status, CallbackError

# --- dtypes ---------------------------------------------------------------------------------------
_TO_PLM = {np.dtype(np.float32): lib.PLM_FLOAT32, np.dtype(np.float64): lib.PLM_FLOAT64,
           np.dtype(np.complex64): lib.PLM_COMPLEX64, np.dtype(np.complex128): lib.PLM_COMPLEX128}
_FROM_PLM = {v: k for k, v in _TO_PLM.items()}


def plm_dtype(dtype):
    """The library's dtype code of a numpy dtype (TypeError for the ones it has not)."""
    dt = np.dtype(dtype)
    try:
        return _TO_PLM[dt]
    except KeyError:
        raise TypeError(f"pylopsmpi: dtype {dt} is not supported (float32, float64, complex64, "
                        "complex128)") from None


def np_dtype(code):
    return _FROM_PLM[int(code)]


# --- errors from callbacks ------------------------------------------------------------------------
_pending = threading.local()


def _remember_exception(exc):
    """Keep the exception a callback raised on this rank, for the CallbackError the call raises."""
    exc.__plm_traceback__ = traceback.format_exc()
    _pending.exc = exc


def check(status):
    """Raise for a failing status; a CallbackError carries this rank's original exception."""
    original = getattr(_pending, "exc", None)
    _pending.exc = None
    if status == lib.PLM_SUCCESS:
        return
    try:
        _check_status(status)
    except CallbackError as e:
        e.original = original
        if original is not None:
            e.traceback = getattr(original, "__plm_traceback__", None)
            raise e from original
        raise


def call(fn, *args):
    """Call a library function and raise the mapped exception on failure."""
    check(fn(*args))


class _Checks:
    """Collects the exception of Python-side argument checks for `agree`."""

    def __init__(self):
        self.exc = None

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        if exc is not None and isinstance(exc, Exception) and self.exc is None:
            exc.__plm_traceback__ = traceback.format_exc()
            self.exc = exc
            return True             # kept for agree(); every rank must reach it
        return False


def checks():
    """`with checks() as c: <local checks>` then `agree(comm, c)`."""
    return _Checks()


def agree(comm, checked):
    """Agree over `comm` on the outcome of Python-side checks that ran on every rank before a
    collective call: one allreduce. When a rank failed, it re-raises its own exception and every
    other rank raises the same class with the first failing rank's message ("on rank r: ...")."""
    exc = checked.exc if isinstance(checked, _Checks) else checked
    size = comm.Get_size()
    first = comm.allreduce(comm.Get_rank() if exc is not None else size, op=MPI.MIN)
    if first == size:
        return
    info = comm.bcast(_exc_info(exc) if comm.Get_rank() == first else None, root=first)
    _raise_agreed(exc, first, info)


def agree_gather(comm, checked, value):
    """`agree` that also gathers: one allgather of this rank's `value` (when its checks passed);
    returns every rank's value, in rank order, when no rank failed."""
    exc = checked.exc if isinstance(checked, _Checks) else checked
    everyone = comm.allgather((False, _exc_info(exc)) if exc is not None else (True, value))
    for first, (ok, item) in enumerate(everyone):
        if not ok:
            _raise_agreed(exc, first, item)
    return [item for _, item in everyone]


def _exc_info(exc):
    return (type(exc), str(exc), getattr(exc, "status", None))


def _raise_agreed(exc, first, info):
    """This rank's own exception, or the first failing rank's class with its message."""
    if exc is not None:
        raise exc
    cls, msg, status = info
    text = msg if msg.startswith("on rank") else f"on rank {first}: {msg}"
    try:
        err = cls(status, text) if status is not None else cls(text)
    except Exception:   # a class that cannot be made from a message: the closest generic one
        err = (ValueError if issubclass(cls, ValueError) else TypeError
               if issubclass(cls, TypeError) else RuntimeError)(text)
    raise err


# --- handles --------------------------------------------------------------------------------------
class _Live:
    """Every live Handle (weakly), destroyed explicitly at exit: weak references by id, added in
    Handle.__init__ and dropped in Handle.__del__ (cheaper than a WeakSet on every new array)."""

    def __init__(self):
        self.refs = {}

    def __iter__(self):
        live = (r() for r in list(self.refs.values()))
        return iter([h for h in live if h is not None])


_live = _Live()
_live_refs = _live.refs
_ref = weakref.ref
_finalizing = False
_kinds = {}                     # (ctype, destroy name) -> (pointer type, destroy function, collective)


class Handle:
    """Owns one C handle; `destroy()` is idempotent and NULL-safe like the C destroy functions."""

    __slots__ = ("ptr", "_destroy", "_collective", "keep", "__weakref__")

    def __init__(self, ctype, destroy_name, keep=None):
        kind = _kinds.get((ctype, destroy_name))
        if kind is None:
            kind = _kinds[(ctype, destroy_name)] = (ffi.typeof(ctype + " *"), getattr(lib, destroy_name),
                                                    destroy_name in _api.COLLECTIVE)
        self.ptr = ffi.new(kind[0])
        self._destroy = kind[1]
        self._collective = kind[2]
        self.keep = keep            # Python objects the C object borrows (user buffers, callbacks)
        _live_refs[id(self)] = _ref(self)

    @property
    def h(self):
        return self.ptr[0]

    def destroy(self):
        if self.ptr is not None and self.ptr[0] != ffi.NULL:
            call(self._destroy, self.ptr)
        self.keep = None

    def __del__(self):
        _live_refs.pop(id(self), None)
        # Never a collective free from the garbage collector (it may run on one rank only), and
        # nothing once MPI is finalized (a free could reach MPI_Comm_free).
        if self._collective or _finalizing or self.ptr is None or MPI.Is_finalized():
            return
        try:
            if self.ptr[0] != ffi.NULL:
                self._destroy(self.ptr)
        except Exception:
            pass


_ARRAY_PTR = ffi.typeof("plm_array_t *")
_array_destroy = lib.plm_array_destroy


class _ArrayHandle(Handle):
    """An array's Handle: every new array (an operator's output on each apply) makes one and
    drops one, so its finaliser is Handle.__del__ for a non-collective handle with every name it
    reads bound once (default arguments) instead of looked up per call."""

    __slots__ = ()

    def __del__(self, _pop=_live_refs.pop, _id=id, _is_finalized=MPI.Is_finalized, _null=ffi.NULL):
        _pop(_id(self), None)
        p = self.ptr
        if p is None or _finalizing or _is_finalized():
            return
        try:
            if p[0] != _null:
                self._destroy(p)
        except Exception:
            pass


def array_handle(keep):
    """Handle("plm_array_t", "plm_array_destroy", keep) without its lookups."""
    hd = object.__new__(_ArrayHandle)
    hd.ptr = ffi.new(_ARRAY_PTR)
    hd._destroy = _array_destroy
    hd._collective = False
    hd.keep = keep
    _live_refs[id(hd)] = _ref(hd)
    return hd


# --- communicators --------------------------------------------------------------------------------
_comms = {}          # id(mpi4py comm) -> (mpi4py comm, Handle); kept alive until exit


def plm_comm(comm):
    """The library communicator for an mpi4py communicator (made once, cached until exit)."""
    if comm is None:
        comm = MPI.COMM_WORLD
    if not isinstance(comm, MPI.Comm):
        raise TypeError(f"expected an mpi4py communicator, got {type(comm).__name__}")
    entry = _comms.get(id(comm))
    if entry is None or entry[0] is not comm:
        hd = Handle("plm_comm_t", "plm_comm_destroy")
        call(lib.plm_comm_create_f, comm.py2f(), ffi.NULL, hd.ptr)
        entry = (comm, hd)
        _comms[id(comm)] = entry
    return entry[1].h


def _at_exit():
    """Free everything while MPI is still initialised: local handles first, then communicators
    (collective, the same order on every rank: their creation order). When the script finalized
    MPI itself (MPI.Finalize()), nothing can be freed any more: the handles are left to the OS."""
    global _finalizing
    if MPI.Is_finalized():
        _finalizing = True
        return
    comms = [hd for _, hd in _comms.values()]
    for hd in list(_live):
        if not hd._collective:
            try:
                hd.destroy()
            except Exception:
                pass
    for hd in comms:
        try:
            hd.destroy()
        except Exception:
            pass
    _comms.clear()
    _finalizing = True


# mpi4py registers MPI_Finalize with atexit at import; atexit runs in reverse order of
# registration, so this hook (registered later) runs first.
atexit.register(_at_exit)


# --- callback trampolines (cffi extern "Python", declared by build_ffi.py from the API description)
_ctx = {}            # handle -> Python object, while the C side holds ctx


def new_ctx(obj):
    """A ctx pointer for a C callback: stays valid until the C side calls _plm_py_ctx_destroy."""
    h = ffi.new_handle(obj)
    _ctx[h] = obj
    return h


@ffi.def_extern()
def _plm_py_ctx_destroy(ctx):
    for h in list(_ctx):
        if h == ctx:
            del _ctx[h]
            break


def _op_call(ctx, x, n_in, out, n_out, dtype, adjoint):
    try:
        block = ffi.from_handle(ctx)
        dt = np_dtype(dtype)
        xin = np.frombuffer(ffi.buffer(x, n_in * dt.itemsize), dtype=dt) if n_in else np.zeros(0, dt)
        y = block.rmatvec(xin) if adjoint else block.matvec(xin)
        y = np.asarray(y).ravel()
        if y.size != n_out:
            raise ValueError(f"{'rmatvec' if adjoint else 'matvec'} of {type(block.op).__name__} "
                             f"returned {y.size} elements, expected {n_out}")
        if n_out:
            np.frombuffer(ffi.buffer(out, n_out * dt.itemsize), dtype=dt)[:] = y
        return 0
    except BaseException as e:  # noqa: B902 - everything becomes an agreed error
        _remember_exception(e)
        return 1


@ffi.def_extern()
def _plm_py_plm_op_fn_matvec(ctx, x, n_in, out, n_out, dtype, memory):
    return _op_call(ctx, x, n_in, out, n_out, dtype, False)


@ffi.def_extern()
def _plm_py_plm_op_fn_rmatvec(ctx, x, n_in, out, n_out, dtype, memory):
    return _op_call(ctx, x, n_in, out, n_out, dtype, True)


def _shell_call(ctx, x, y, adjoint):
    try:
        ffi.from_handle(ctx)._shell_apply(x, y, adjoint)
        return 0
    except BaseException as e:  # noqa: B902 - agreed by the library after the call
        _remember_exception(e)
        return 1


@ffi.def_extern()
def _plm_py_plm_op_shell_fn_matvec(ctx, x, y):
    return _shell_call(ctx, x, y, False)


@ffi.def_extern()
def _plm_py_plm_op_shell_fn_rmatvec(ctx, x, y):
    return _shell_call(ctx, x, y, True)


@ffi.def_extern()
def _plm_py_plm_solver_callback_fn(ctx, iteration, x, cost):
    try:
        ffi.from_handle(ctx)(int(iteration), x, float(cost))
        return 0
    except BaseException as e:  # noqa: B902
        _remember_exception(e)
        return 1
