"""PyLops-MPI's basic operators over the library's operators.

Adding the class of a new C operator takes a few lines: build the C operator into a Handle and
call `MPILinearOperator._native(handle, base_comm, dims, dimsd, obj=self)` (see MPIHalo).
"""
import math
import numbers

import numpy as np
from mpi4py import MPI

from .._core import ffi, lib, call, checks, agree, Handle, plm_comm, plm_dtype
from ..LinearOperator import MPILinearOperator, MPIStackedLinearOperator, local_operator
from ..DistributedArray import StackedDistributedArray

__all__ = ["MPIBlockDiag", "MPIStackedBlockDiag", "MPIVStack", "MPIStackedVStack", "MPIHStack",
           "MPIFirstDerivative", "MPISecondDerivative", "MPILaplacian", "MPIGradient", "MPIHalo",
           "MPIMatrixMult"]

_KIND = {"forward": lib.PLM_DERIV_FORWARD, "backward": lib.PLM_DERIV_BACKWARD,
         "centered": lib.PLM_DERIV_CENTERED}


def _kind(kind):
    try:
        return _KIND[kind]
    except KeyError:
        raise NotImplementedError("'kind' must be 'forward', 'centered' or 'backward'") from None


def _tuple(v):
    return (int(v),) if isinstance(v, numbers.Integral) else tuple(int(s) for s in v)


def _i64(v):
    return ffi.new("int64_t[]", list(v))


def _dtype_of(ops, dtype):
    if dtype is not None:
        return np.dtype(dtype)
    return np.result_type(*[np.dtype(op.dtype) for op in ops]) if ops else np.dtype(np.float64)


def _new(fn, *args):
    hd = Handle("plm_op_t", "plm_op_destroy")
    call(fn, *args, hd.ptr)
    return hd


def _new_agreed(fn, base_comm, args):
    """The C operator fn(comm, *args()): args() runs the Python-side checks and conversions on
    every rank, agreed over base_comm before the library's collective constructor."""
    with checks() as c:
        a = args()
    agree(base_comm, c)
    return _new(fn, plm_comm(base_comm), *a)


class _Stack(MPILinearOperator):
    """Block-diagonal / vertical / horizontal stacks of each rank's local operators."""

    _fn = None

    def __init__(self, ops, base_comm=MPI.COMM_WORLD, dtype=None, mask=None):
        self.ops = list(ops)
        hs = []

        def args():
            dt = _dtype_of(self.ops, dtype)
            hs.extend(local_operator(op, dt) for op in self.ops)
            arr = ffi.new("plm_const_op_t[]", [h.h for h in hs]) if hs else ffi.NULL
            extra = () if mask is None and self._fn is not lib.plm_op_blockdiag else \
                ((len(mask), ffi.new("int[]", [int(m) for m in mask])) if mask is not None
                 else (0, ffi.NULL))
            return (len(hs), arr) + extra
        try:
            hd = _new_agreed(self._fn, base_comm, args)
        finally:
            for h in hs:
                h.destroy()
        self.mask = mask
        MPILinearOperator._native(hd, base_comm, obj=self)


class MPIBlockDiag(_Stack):
    """Block-diagonal operator: each rank gives its own diagonal blocks (local operators)."""
    _fn = lib.plm_op_blockdiag

    def __init__(self, ops, base_comm=MPI.COMM_WORLD, mask=None, dtype=None):
        super().__init__(ops, base_comm=base_comm, dtype=dtype, mask=mask)


class MPIVStack(_Stack):
    """Vertical stack: BROADCAST model in, SCATTER data out."""
    _fn = lib.plm_op_vstack


class MPIHStack(_Stack):
    """Horizontal stack: SCATTER model in, BROADCAST data out."""
    _fn = lib.plm_op_hstack


class _StackedOfMPI(MPIStackedLinearOperator):
    """A stack of distributed operators (plain or stacked: stacks of stacks keep their nesting,
    the library flattens them). Operators of this package are stacked by the library; a stack
    holding an operator defined in Python (no library handle) is applied in Python."""
    _fn = None

    def __init__(self, ops, base_comm=MPI.COMM_WORLD, dtype=None):
        self.ops = list(ops)
        for op in self.ops:
            if not isinstance(op, MPILinearOperator):
                raise ValueError(f"{type(self).__name__} takes MPILinearOperator or "
                                 f"MPIStackedLinearOperator operators, got {type(op).__name__}")
        self._set_trees()
        if all(op.handle is not None for op in self.ops) and \
                len({np.dtype(op.dtype) for op in self.ops}) == 1:
            hd = _new(self._fn, len(self.ops), ffi.new("plm_const_op_t[]", [op.handle for op in self.ops]))
            trees = self._dtree, self._rtree
            MPILinearOperator._native(hd, base_comm, obj=self)
            self._dtree, self._rtree = trees
            return
        shape = self._py_shape()
        MPIStackedLinearOperator.__init__(self, shape=shape, dtype=_dtype_of(self.ops, dtype),
                                          base_comm=base_comm)

    def _stack(self, arrays):
        return StackedDistributedArray(arrays, base_comm=self.base_comm)


class MPIStackedBlockDiag(_StackedOfMPI):
    """Block-diagonal of MPI operators, on StackedDistributedArrays: member i through ops[i]."""
    _fn = lib.plm_op_stacked_blockdiag

    def _set_trees(self):
        self._dtree = [op._dtree for op in self.ops]
        self._rtree = [op._rtree for op in self.ops]

    def _py_shape(self):
        return (sum(op.shape[0] for op in self.ops), sum(op.shape[1] for op in self.ops))

    def _matvec(self, x):
        return self._stack([op.matvec(d) for op, d in zip(self.ops, x.distarrays)])

    def _rmatvec(self, x):
        return self._stack([op.rmatvec(d) for op, d in zip(self.ops, x.distarrays)])


class MPIStackedVStack(_StackedOfMPI):
    """Vertical stack of MPI operators: one model, a StackedDistributedArray of data (a stacked
    operator in ops adds its own stack: MPIStackedVStack([Op, MPIGradient]) gives
    [Op x, [D0 x, D1 x, ...]])."""
    _fn = lib.plm_op_stacked_vstack

    def _set_trees(self):
        self._dtree = self.ops[0]._dtree if self.ops else None
        self._rtree = [op._rtree for op in self.ops]

    def _py_shape(self):
        return (sum(op.shape[0] for op in self.ops), self.ops[0].shape[1])

    def _matvec(self, x):
        return self._stack([op.matvec(x) for op in self.ops])

    def _rmatvec(self, x):
        y = self.ops[0].rmatvec(x.distarrays[0])
        for op, d in zip(self.ops[1:], x.distarrays[1:]):
            y = y + op.rmatvec(d)
        return y


class MPIFirstDerivative(MPILinearOperator):
    """First derivative along axis 0 (the distributed axis) of an N-D model."""

    def __init__(self, dims, sampling=1.0, kind="centered", edge=False, order=3,
                 base_comm=MPI.COMM_WORLD, dtype=np.float64):
        dims = _tuple(dims)
        self.sampling, self.kind, self.edge, self.order = sampling, kind, edge, order

        def args():
            if kind == "centered" and order not in (3, 5):
                raise NotImplementedError("'order' must be '3, or '5'")
            return (plm_dtype(dtype), len(dims), _i64(dims), -1, 0, float(sampling), _kind(kind),
                    int(order), int(bool(edge)))
        hd = _new_agreed(lib.plm_op_first_derivative, base_comm, args)
        MPILinearOperator._native(hd, base_comm, dims, dims, obj=self)


class MPISecondDerivative(MPILinearOperator):
    """Second derivative along axis 0 (the distributed axis) of an N-D model."""

    def __init__(self, dims, sampling=1.0, kind="centered", edge=False,
                 base_comm=MPI.COMM_WORLD, dtype=np.float64):
        dims = _tuple(dims)
        self.sampling, self.kind, self.edge = sampling, kind, edge
        hd = _new_agreed(lib.plm_op_second_derivative, base_comm, lambda: (
            plm_dtype(dtype), len(dims), _i64(dims), -1, 0, float(sampling), _kind(kind),
            int(bool(edge))))
        MPILinearOperator._native(hd, base_comm, dims, dims, obj=self)


class MPILaplacian(MPILinearOperator):
    """Weighted sum of second derivatives along `axes`."""

    def __init__(self, dims, axes=(-2, -1), weights=(1, 1), sampling=(1, 1), edge=False,
                 kind="centered", base_comm=MPI.COMM_WORLD, dtype=np.float64):
        dims = _tuple(dims)
        self.axes, self.weights, self.sampling, self.edge, self.kind = axes, weights, sampling, edge, kind

        def args():
            ax = tuple(int(a) % len(dims) for a in axes)
            if not (len(ax) == len(weights) == len(sampling)):
                raise ValueError("axes, weights, and sampling have different size")
            self.axes = ax
            return (plm_dtype(dtype), len(dims), _i64(dims), -1, len(ax), ffi.new("int[]", list(ax)),
                    ffi.new("double[]", [float(w) for w in weights]),
                    ffi.new("double[]", [float(s) for s in sampling]), _kind(kind), int(bool(edge)))
        hd = _new_agreed(lib.plm_op_laplacian, base_comm, args)
        MPILinearOperator._native(hd, base_comm, dims, dims, obj=self)


class MPIGradient(MPIStackedLinearOperator):
    """Gradient: a model to a StackedDistributedArray of ndim first derivatives (a stacked
    operator, as PyLops-MPI's: it composes with the others, e.g. sqrt(tau) * MPIGradient)."""

    def __init__(self, dims, sampling=1, edge=False, kind="centered",
                 base_comm=MPI.COMM_WORLD, dtype="float64"):
        dims = _tuple(dims)
        sampling = [float(sampling)] * len(dims) if np.isscalar(sampling) else [float(s) for s in sampling]
        self.sampling, self.edge, self.kind = sampling, edge, kind
        hd = _new_agreed(lib.plm_op_gradient, base_comm, lambda: (
            plm_dtype(dtype), len(dims), _i64(dims), -1, ffi.new("double[]", sampling), _kind(kind),
            int(bool(edge))))
        MPILinearOperator._native(hd, base_comm, dims, (len(dims),) + dims, obj=self)
        self._rtree = [None] * len(dims)


class MPIHalo(MPILinearOperator):
    """Halo exchange on an N-D process grid: forward adds the ghost cells, adjoint strips them."""

    def __init__(self, dims, halo, proc_grid_shape=None, comm=MPI.COMM_WORLD, dtype=np.float64):
        dims = _tuple(dims)
        nd = len(dims)
        self.proc_grid_shape = proc_grid_shape
        self.halo = None

        def args():
            # PyLops-MPI's halo forms and messages: a number is trimmed at the grid boundary (the
            # library's one-width form); a tuple of 1, ndim or 2 ndim widths is taken as it is
            # (given to the library as 2 ndim widths: for ndim 1 its ndim and one-width forms
            # would coincide)
            grid = tuple(int(g) for g in proc_grid_shape) if proc_grid_shape is not None \
                else (1,) * (nd - 1) + (comm.Get_size(),)
            if math.prod(grid) != comm.Get_size():
                raise ValueError(f"grid_shape {grid} does not match comm size {comm.Get_size()}")
            if isinstance(halo, numbers.Integral):
                widths = [int(halo)]
            else:
                h = [int(v) for v in halo]
                if len(h) == 1:
                    widths = h * (2 * nd)
                elif len(h) == nd:
                    widths = [v for v in h for _ in range(2)]
                elif len(h) == 2 * nd:
                    widths = h
                else:
                    raise ValueError(f"Invalid halo length {len(h)} for ndim={nd}")
            if any(v < 0 for v in widths):
                raise ValueError("Halo widths must be non-negative")
            self.halo = tuple(widths)
            return (plm_dtype(dtype), nd, _i64(dims), ffi.new("int[]", list(grid)), len(widths),
                    _i64(widths))
        hd = _new_agreed(lib.plm_op_halo, comm, args)
        MPILinearOperator._native(hd, comm, dims, None, obj=self)

    def _scatter_only(self, x):
        from ..DistributedArray import Partition
        with checks() as c:
            if getattr(x, "partition", Partition.SCATTER) != Partition.SCATTER:
                raise ValueError(f"x should have partition={Partition.SCATTER} Got {x.partition} "
                                 "instead...")
        agree(self.base_comm, c)

    def matvec(self, x):
        self._scatter_only(x)
        return super().matvec(x)

    def rmatvec(self, x):
        self._scatter_only(x)
        return super().rmatvec(x)

    def adjoint(self):
        """The adjoint (the core's extraction), refusing BROADCAST inputs as the operator does."""
        hd = Handle("plm_op_t", "plm_op_destroy")
        call(lib.plm_op_adjoint, self.handle, hd.ptr)
        adj = _HaloAdjoint.__new__(_HaloAdjoint)
        adj._of = self
        return MPILinearOperator._native(hd, self.base_comm, self.dimsd, self.dims, obj=adj)

    H = property(adjoint)


class _HaloAdjoint(MPILinearOperator):
    """MPIHalo.H: the library's adjoint with MPIHalo's SCATTER check."""

    def matvec(self, x):
        self._of._scatter_only(x)
        return super().matvec(x)

    def rmatvec(self, x):
        self._of._scatter_only(x)
        return super().rmatvec(x)


class MPIMatrixMult(MPILinearOperator):
    """Y = A X with A (N x K) distributed in blocks over a square process grid, X (K x M).

    A is this rank's block of A (see PyLops-MPI: kind "summa" 2-D blocks, kind "block" row
    blocks of all K columns); M the global number of columns of X.
    """

    def __init__(self, A, M, saveAt=False, base_comm=MPI.COMM_WORLD, kind="summa",
                 dtype="float64", base_comm_nccl=None):
        size, rank = base_comm.Get_size(), base_comm.Get_rank()
        p = math.isqrt(size)
        with checks() as c:
            if kind not in ("summa", "block"):
                raise NotImplementedError("kind must be summa or block")
            if base_comm_nccl is not None:
                raise NotImplementedError("pylopsmpi's Python package has the numpy engine only")
            if p * p != size:
                raise Exception(f"Number of processes must be a square number, provided {size} "
                                "instead...")
            A = np.ascontiguousarray(A, dtype=dtype)
            plm_dtype(A.dtype)
            if A.ndim != 2:
                raise ValueError(f"A must be a 2-D block, got {A.ndim} dimensions")
        agree(base_comm, c)
        shapes = base_comm.allgather(A.shape)
        row, col = rank // p, rank % p
        if kind == "summa":
            N = sum(shapes[r][0] for r in range(size) if r % p == col)
            K = sum(shapes[r][1] for r in range(size) if r // p == row)
        else:
            N = sum(shapes[r][0] for r in range(size) if r // p == row)
            K = A.shape[1]
        self.A, self.M, self.N, self.K, self.kind = A, int(M), N, K, kind
        code = lib.PLM_MATMUL_SUMMA if kind == "summa" else lib.PLM_MATMUL_BLOCK
        hd = _new(lib.plm_op_matrix_mult, plm_comm(base_comm), code, p, plm_dtype(A.dtype), N, K,
                  int(M), ffi.from_buffer(A) if A.nbytes else ffi.NULL, A.nbytes)
        MPILinearOperator._native(hd, base_comm, obj=self)
