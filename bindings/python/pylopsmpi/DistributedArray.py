"""Partition, DistributedArray and StackedDistributedArray with PyLops-MPI's API.

Every DistributedArray owns a numpy buffer (its `local_array`, C order) that the C array wraps
without copy; the C handle keeps no other copy. Arithmetic, reductions and layout changes run in
the C library, so collective argument errors end in the same exception on every rank.
"""
from enum import Enum
from functools import cached_property
import numbers

import numpy as np
from mpi4py import MPI

from ._core import (ffi, lib, call, check, checks, agree, Handle, array_handle, plm_comm, plm_dtype,
                    np_dtype)

__all__ = ["Partition", "local_split", "subcomm_split", "DistributedArray", "StackedDistributedArray"]


class Partition(str, Enum):
    """How a DistributedArray is laid out over the ranks (PyLops-MPI's values)."""
    BROADCAST = "Broadcast"
    UNSAFE_BROADCAST = "UnsafeBroadcast"
    SCATTER = "Scatter"


_PART_TO_PLM = {Partition.SCATTER: lib.PLM_PARTITION_SCATTER,
                Partition.BROADCAST: lib.PLM_PARTITION_BROADCAST,
                Partition.UNSAFE_BROADCAST: lib.PLM_PARTITION_UNSAFE_BROADCAST}
_PART_FROM_PLM = {v: k for k, v in _PART_TO_PLM.items()}


def _partition(p):
    try:
        return Partition(p)
    except ValueError:
        raise ValueError(f"Should be either {Partition.BROADCAST}, {Partition.UNSAFE_BROADCAST} "
                         f"or {Partition.SCATTER}") from None


def local_split(global_shape, base_comm, partition, axis):
    """This rank's default local shape (PyLops-MPI's local_split)."""
    global_shape = tuple(global_shape)
    if _partition(partition) != Partition.SCATTER:
        return global_shape
    n, size, rank = global_shape[axis], base_comm.Get_size(), base_comm.Get_rank()
    shape = list(global_shape)
    shape[axis] = n // size + (1 if rank < n % size else 0)
    return tuple(shape)


def subcomm_split(mask, comm=MPI.COMM_WORLD):
    """The sub-communicator of this rank's mask group (PyLops-MPI's subcomm_split): comm split
    by colour mask[rank], ranks in comm's order. Collective on comm (an mpi4py Split; the arrays
    themselves keep their groups inside the library)."""
    rank = comm.Get_rank()
    return comm.Split(color=int(mask[rank]), key=rank)


def _local_shapes(local_shapes, ndim):
    """local_shapes as a list of tuples of ndim ints (or None)."""
    if local_shapes is None:
        return None
    out = []
    for s in local_shapes:
        s = (int(s),) if isinstance(s, numbers.Integral) else tuple(int(v) for v in s)
        if len(s) != ndim:
            raise ValueError(f"local shape {s} does not have {ndim} dimensions")
        out.append(s)
    return out


# looked up once: the per-apply path (_on_layout) runs them on every new array
_create_from_layout = lib.plm_array_create_from_layout
_HOST = lib.PLM_MEMORY_HOST
_NULL = ffi.NULL
_from_buffer = ffi.from_buffer
_empty = np.empty
_new = object.__new__


def _i64(values):
    return ffi.new("int64_t[]", [int(v) for v in values]) if len(values) else ffi.NULL


class _Layout:
    """A C layout handle and what Python asks of it. Layouts are immutable: each query asks the
    library once."""

    def __init__(self, handle, base_comm):
        self.handle = handle
        self.base_comm = base_comm

    @classmethod
    def create(cls, global_shape, base_comm, partition, axis, local_shapes, mask):
        ndim = len(global_shape)
        ls = [v for s in local_shapes for v in s] if local_shapes is not None else []
        nlocal = len(local_shapes) if local_shapes is not None else 0
        hd = Handle("plm_layout_t", "plm_layout_destroy")
        call(lib.plm_layout_create, plm_comm(base_comm), ndim, _i64(global_shape), axis,
             _PART_TO_PLM[partition], nlocal, _i64(ls), len(mask) if mask is not None else 0,
             ffi.new("int[]", list(mask)) if mask is not None else ffi.NULL, hd.ptr)
        return cls(hd, base_comm)

    def _ints(self, fn, n):
        out = ffi.new("int64_t[]", max(n, 1))
        call(fn, self.handle.h, out)
        return tuple(out[i] for i in range(n))

    @cached_property
    def ndim(self):
        v = ffi.new("int *")
        call(lib.plm_layout_ndim, self.handle.h, v)
        return v[0]

    @cached_property
    def global_shape(self):
        return self._ints(lib.plm_layout_global_shape, self.ndim)

    @cached_property
    def local_shape(self):
        return self._ints(lib.plm_layout_local_shape, self.ndim)

    @cached_property
    def _local_shapes(self):
        nd, size = self.ndim, self.base_comm.Get_size()
        flat = self._ints(lib.plm_layout_local_shapes, nd * size)
        return tuple(tuple(flat[r * nd:(r + 1) * nd]) for r in range(size))

    @property
    def local_shapes(self):
        return list(self._local_shapes)

    @cached_property
    def axis(self):
        v = ffi.new("int *")
        call(lib.plm_layout_axis, self.handle.h, v)
        return v[0]

    @cached_property
    def partition(self):
        v = ffi.new("plm_partition_t *")
        call(lib.plm_layout_partition, self.handle.h, v)
        return _PART_FROM_PLM[v[0]]

    @cached_property
    def _mask(self):
        has = ffi.new("int *")
        m = ffi.new("int[]", self.base_comm.Get_size())
        call(lib.plm_layout_mask, self.handle.h, has, m)
        return tuple(m[i] for i in range(self.base_comm.Get_size())) if has[0] else None

    @property
    def mask(self):
        return list(self._mask) if self._mask is not None else None

    def describe(self):
        """Everything that must be equal on every rank for arrays on this layout."""
        return (self.global_shape, self.partition.value, self.axis, self._local_shapes, self._mask)


class DistributedArray:
    """A global array split over the ranks of `base_comm` (PyLops-MPI's DistributedArray).

    Only the numpy engine (host memory) is available from Python; `base_comm_nccl` must be None.
    """

    def __init__(self, global_shape, base_comm=MPI.COMM_WORLD, base_comm_nccl=None,
                 partition=Partition.SCATTER, axis=0, local_array=None, local_shapes=None,
                 mask=None, engine="numpy", dtype=np.float64):
        # Python-side checks run on every rank, then one agreement: a bad argument on one rank
        # raises on every rank instead of leaving the others in the layout's collective.
        with checks() as c:
            if base_comm_nccl is not None or engine != "numpy":
                raise NotImplementedError("pylopsmpi's Python package has the numpy engine only")
            global_shape = (int(global_shape),) if isinstance(global_shape, numbers.Integral) \
                else tuple(int(s) for s in global_shape)
            if axis >= len(global_shape):
                raise IndexError(f"Axis {axis} out of range for DistributedArray of shape "
                                 f"{global_shape}")
            partition = _partition(partition)
            if local_array is not None:
                local_array = np.asarray(local_array)
                dtype = local_array.dtype
            plm_dtype(dtype)
            lshapes = _local_shapes(local_shapes, len(global_shape))
            mask = [int(m) for m in mask] if mask is not None else None
            # (a local_shapes list of the wrong length is the library's to report)
            if local_array is not None and (lshapes is None or len(lshapes) == base_comm.Get_size()):
                mine = lshapes[base_comm.Get_rank()] if lshapes is not None else \
                    local_split(global_shape, base_comm, partition, axis)
                if tuple(local_array.shape) != tuple(mine):
                    raise ValueError(f"Local array shape {local_array.shape} does not match the "
                                     f"local shape {tuple(mine)} of this rank")
        agree(base_comm, c)
        layout = _Layout.create(global_shape, base_comm, partition, axis, lshapes, mask)
        self._init(layout, np.dtype(dtype), local_array)

    # every array is made here: a layout, a dtype and (optionally) the caller's local array
    def _init(self, layout, dtype, local_array=None):
        self._layout = layout
        self._base_comm = layout.base_comm
        self._dtype = np.dtype(dtype)
        self._sub_comm = None
        code = plm_dtype(self._dtype)
        local_shape = layout.local_shape
        if local_array is not None:
            local_array = np.asarray(local_array)
            if tuple(local_array.shape) != local_shape:
                raise ValueError(f"Local array shape {local_array.shape} does not match the "
                                 f"local shape {local_shape} of this rank")
            if not (local_array.flags.c_contiguous and local_array.flags.writeable):
                local_array = np.ascontiguousarray(local_array).copy()
        else:
            local_array = np.empty(local_shape, dtype=self._dtype)
        self._wrap(local_array, code)

    def _wrap(self, local_array, code):
        """The C array over local_array (C-contiguous, writeable, of this rank's local shape)."""
        self._local = local_array
        self._h = hd = array_handle(local_array)
        nbytes = local_array.nbytes
        st = _create_from_layout(self._layout.handle.ptr[0], code, _HOST,
                                 _from_buffer(local_array) if nbytes else _NULL, nbytes, hd.ptr)
        if st:
            check(st)

    @classmethod
    def _on_layout(cls, layout, dtype, code):
        """A new array on a layout (an operator's output): the fast path of _init for a dtype
        known to be supported (code: its plm_dtype) and no user data."""
        new = _new(cls)
        new._layout = layout
        new._base_comm = layout.base_comm
        new._dtype = dtype
        new._sub_comm = None
        new._wrap(_empty(layout.local_shape, dtype), code)
        return new

    @classmethod
    def _like(cls, other, dtype=None, local_array=None):
        new = cls.__new__(cls)
        new._init(other._layout, other.dtype if dtype is None else dtype, local_array)
        return new

    @classmethod
    def _borrow(cls, h, base_comm):
        """A read-only view of an array the library lends for one callback (no copy); `release()`
        ends it. Its local_array is the C array's local block."""
        lay = Handle("plm_layout_t", "plm_layout_destroy")
        call(lib.plm_array_layout, h, lay.ptr)
        dt = ffi.new("plm_dtype_t *")
        call(lib.plm_array_dtype, h, dt)
        new = cls.__new__(cls)
        new._layout = _Layout(lay, base_comm)
        new._base_comm = base_comm
        new._dtype = np_dtype(dt[0])
        new._sub_comm = None
        shape = new._layout.local_shape
        nbytes = int(np.prod(shape)) * new._dtype.itemsize
        new._data = ffi.new("void **")
        call(lib.plm_array_get_local_read, h, new._data)
        local = np.frombuffer(ffi.buffer(new._data[0], nbytes), dtype=new._dtype) if nbytes \
            else np.zeros(0, new._dtype)
        local = local.reshape(shape)
        local.flags.writeable = False
        new._local = local
        new._h = Handle("plm_array_t", "plm_array_destroy")
        new._h.ptr[0] = h
        return new

    def _release(self):
        """End a borrowed view: the handle goes back to the library (never destroyed here)."""
        h = self._h.h
        if h != ffi.NULL:
            lib.plm_array_restore_local_read(h, self._data)
            self._h.ptr[0] = ffi.NULL

    @classmethod
    def _from_handle(cls, h, base_comm, dtype):
        """Copy a C-owned array (redistribute's result) into a new Python-owned one."""
        tmp = Handle("plm_array_t", "plm_array_destroy")
        tmp.ptr[0] = h
        lay = Handle("plm_layout_t", "plm_layout_destroy")
        call(lib.plm_array_layout, h, lay.ptr)
        new = cls.__new__(cls)
        new._init(_Layout(lay, base_comm), dtype)
        call(lib.plm_array_copy, h, new._h.h)
        tmp.destroy()
        return new

    # --- lifetime -----------------------------------------------------------------------------
    def destroy(self):
        """Release the C array now (not collective); the numpy local array stays valid."""
        self._h.destroy()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    # --- properties ---------------------------------------------------------------------------
    @property
    def handle(self):
        """The plm_array_t (borrowed) for calls into the low-level layer."""
        return self._h.h

    @property
    def global_shape(self):
        return self._layout.global_shape

    @property
    def base_comm(self):
        return self._base_comm

    @property
    def base_comm_nccl(self):
        return None

    @property
    def local_shape(self):
        return tuple(self._local.shape)

    @property
    def local_shapes(self):
        return self._layout.local_shapes

    @property
    def mask(self):
        return self._layout.mask

    @property
    def engine(self):
        return "numpy"

    @property
    def local_array(self):
        return self._local

    @property
    def rank(self):
        return self._base_comm.Get_rank()

    @property
    def size(self):
        return self._base_comm.Get_size()

    @property
    def axis(self):
        return self._layout.axis

    @property
    def ndim(self):
        return len(self.global_shape)

    @property
    def partition(self):
        return self._layout.partition

    @property
    def dtype(self):
        return self._dtype

    @property
    def sub_comm(self):
        """mpi4py communicator of this rank's mask group (the base comm without a mask)."""
        if self._sub_comm is None:
            m = self.mask
            self._sub_comm = self._base_comm if m is None else \
                self._base_comm.Split(color=m[self.rank], key=self.rank)
        return self._sub_comm

    def __getitem__(self, index):
        return self._local[index]

    def __setitem__(self, index, value):
        if self.partition == Partition.BROADCAST:
            # every write is made consistent with rank 0's value (PyLops-MPI's rule)
            with checks() as c:
                buf = np.empty_like(self._local[index])
                if self.rank == 0:
                    buf[...] = value
            agree(self._base_comm, c)
            self._base_comm.Bcast(buf, root=0)
            self._local[index] = buf
        else:
            self._local[index] = value

    def __repr__(self):
        return (f"<DistributedArray with global shape={self.global_shape}, local shape="
                f"{self.local_shape}, dtype={self.dtype}, processes={list(range(self.size))})>")

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def to_dist(cls, x, base_comm=MPI.COMM_WORLD, base_comm_nccl=None,
                partition=Partition.SCATTER, axis=0, local_shapes=None, mask=None):
        """Distribute a global array every rank holds (BROADCAST: rank 0's copy wins)."""
        x = np.asarray(x)
        arr = cls(global_shape=x.shape, base_comm=base_comm, base_comm_nccl=base_comm_nccl,
                  partition=partition, axis=axis, local_shapes=local_shapes, mask=mask,
                  dtype=x.dtype)
        g = np.ascontiguousarray(x)
        call(lib.plm_array_set_global, arr.handle, ffi.from_buffer(g) if g.nbytes else ffi.NULL,
             g.nbytes)
        return arr

    def asarray(self, masked=False):
        """The global array on every rank (masked=True: this rank's mask group only)."""
        shape = list(self.global_shape)
        if masked and self.mask is not None and self.partition == Partition.SCATTER:
            m = self.mask
            shape[self.axis] = sum(s[self.axis] for r, s in enumerate(self.local_shapes)
                                   if m[r] == m[self.rank])
        out = np.empty(shape, dtype=self.dtype)
        call(lib.plm_array_asarray, self.handle, int(bool(masked)),
             ffi.from_buffer(out) if out.nbytes else ffi.NULL, out.nbytes)
        return out

    def _new_like(self, keep_mask=True):
        if keep_mask or self.mask is None:
            return DistributedArray._like(self)
        return DistributedArray(self.global_shape, base_comm=self.base_comm,
                                partition=self.partition, axis=self.axis,
                                local_shapes=self.local_shapes, dtype=self.dtype)

    def copy(self):
        out = self._new_like()
        call(lib.plm_array_copy, self.handle, out.handle)
        return out

    def conj(self):
        out = self._new_like()
        call(lib.plm_array_conj, self.handle, out.handle)
        return out

    def zeros_like(self):
        """Same layout, zeros; like PyLops-MPI, the result has no mask."""
        out = self._new_like(keep_mask=False)
        out._local[...] = 0
        return out

    def empty_like(self):
        return self._new_like()

    # --- arithmetic ---------------------------------------------------------------------------
    def _check(self, other):
        if not isinstance(other, DistributedArray):
            raise TypeError(f"expected a DistributedArray, got {type(other).__name__}")

    def _binary(self, other, fn):
        # NumPy's promotion: the result has result_type of the operands (the library widens the
        # narrower one); in place (+=, -=, *=) a result that does not fit self raises
        # DtypeMismatchError instead of truncating
        self._check(other)
        out = DistributedArray._like(self, dtype=np.result_type(self.dtype, other.dtype))
        call(fn, self.handle, other.handle, out.handle)
        return out

    def __neg__(self):
        out = self._new_like()
        np.negative(self._local, out=out._local)
        return out

    def add(self, other):
        return self._binary(other, lib.plm_array_add)

    def iadd(self, other):
        self._check(other)
        call(lib.plm_array_add, self.handle, other.handle, self.handle)
        return self

    def __add__(self, other):
        return self.add(other)

    def __iadd__(self, other):
        return self.iadd(other)

    def __sub__(self, other):
        return self._binary(other, lib.plm_array_sub)

    def __isub__(self, other):
        self._check(other)
        call(lib.plm_array_sub, self.handle, other.handle, self.handle)
        return self

    def multiply(self, other):
        if isinstance(other, DistributedArray):
            return self._binary(other, lib.plm_array_mul)
        # a scalar (or anything broadcastable to the local array): NumPy's product and its
        # dtype (a complex scalar gives a complex array, never a dropped imaginary part)
        with np.errstate(all="ignore"):
            local = np.asarray(self._local * other)
        if local.shape != self._local.shape:
            raise ValueError(f"operand of shape {np.shape(other)} does not broadcast to the local "
                             f"shape {self._local.shape}")
        return DistributedArray._like(self, dtype=local.dtype, local_array=local)

    def __mul__(self, other):
        return self.multiply(other)

    def __rmul__(self, other):
        return self.multiply(other)

    def __imul__(self, other):
        if isinstance(other, DistributedArray):
            self._check(other)
            call(lib.plm_array_mul, self.handle, other.handle, self.handle)
        else:
            self._local *= other
        return self

    # --- reductions ---------------------------------------------------------------------------
    def dot(self, y, vdot=False):
        """Global dot product (vdot=True conjugates self), as a 1-element array."""
        re, im = ffi.new("double *"), ffi.new("double *")
        if not isinstance(y, DistributedArray):
            # the other ranks may be in the collective dot already: a NULL y fails it on every
            # rank (InvalidArgumentError everywhere, naming this rank)
            call(lib.plm_array_dot, self.handle, ffi.NULL, int(bool(vdot)), re, im)
            self._check(y)
        call(lib.plm_array_dot, self.handle, y.handle, int(bool(vdot)), re, im)
        val = complex(re[0], im[0]) if np.iscomplexobj(self._local) or np.iscomplexobj(y._local) \
            else re[0]
        return np.array([val], dtype=np.result_type(self.dtype, y.dtype))

    def norm(self, ord=None, axis=None):
        """Distributed numpy.linalg.norm of the array seen as a vector (or along one axis)."""
        if isinstance(ord, str):
            raise ValueError(f"norm-{ord} not possible for vectors")
        p = 2.0 if ord is None else float(ord)
        if axis is None:
            r = ffi.new("double *")
            call(lib.plm_array_norm, self.handle, p, r)
            return np.array([r[0]])
        if axis >= self.ndim:
            raise ValueError(f"Axis {axis} is out of bounds for array of dimension {self.ndim}")
        shape = [s for i, s in enumerate(self.global_shape) if i != axis % self.ndim]
        out = np.empty(shape, dtype=np.float64)
        call(lib.plm_array_norm_axis, self.handle, p, axis, ffi.cast("double *", ffi.from_buffer(out))
             if out.size else ffi.NULL, out.size)
        return out.ravel() if axis % self.ndim == self.axis else out

    # --- layout changes -----------------------------------------------------------------------
    def ravel(self, order="C"):
        """1-D array: the rank-order concatenation of the flattened local blocks."""
        local = self._local.ravel(order=order).copy()
        shapes = [(int(np.prod(s)),) for s in self.local_shapes]
        return DistributedArray(global_shape=int(np.prod(self.global_shape)),
                                base_comm=self.base_comm, partition=self.partition, axis=0,
                                local_array=local, local_shapes=shapes, mask=self.mask,
                                dtype=self.dtype)

    def redistribute(self, axis):
        """SCATTER along another axis (default balanced split); self when nothing changes."""
        if axis == self.axis or self.partition != Partition.SCATTER:
            return self
        out = ffi.new("plm_array_t *")
        call(lib.plm_array_redistribute, self.handle, axis, out)
        return DistributedArray._from_handle(out[0], self.base_comm, self.dtype)

    def add_ghost_cells(self, cells_front=None, cells_back=None):
        """The local array with `cells_front` slices of the previous rank before it and
        `cells_back` slices of the next rank after it (a plain numpy array)."""
        f, b = int(cells_front or 0), int(cells_back or 0)
        shape = ffi.new("int64_t[]", self.ndim)
        st = lib.plm_array_ghost_shape(self.handle, f, b, shape)
        if st != lib.PLM_SUCCESS:
            # bad counts on this rank: the collective call reports them on every rank
            call(lib.plm_array_add_ghost_cells, self.handle, f, b, ffi.NULL, 0)
            check(st)
        out = np.empty([shape[i] for i in range(self.ndim)], dtype=self.dtype)
        call(lib.plm_array_add_ghost_cells, self.handle, f, b,
             ffi.from_buffer(out) if out.nbytes else ffi.NULL, out.nbytes)
        return out

    def reshape(self, local_shape, axis=0):
        shapes = self.base_comm.allgather(tuple(local_shape))
        g = list(shapes[0])
        if self.partition == Partition.SCATTER:
            g[axis] = sum(s[axis] for s in shapes)
        return DistributedArray(global_shape=tuple(g), base_comm=self.base_comm,
                                partition=self.partition, axis=0, local_shapes=shapes,
                                mask=self.mask, local_array=self._local.reshape(local_shape).copy(),
                                dtype=self.dtype)


# `pylops_mpi.DistributedArray.Partition`: the module attribute PyLops-MPI scripts reach through
# the package, where the class shadows the module
DistributedArray.Partition = Partition


class StackedDistributedArray:
    """A list of DistributedArrays (or nested stacks) seen as one vector."""

    def __init__(self, distarrays, base_comm=MPI.COMM_WORLD):
        self.distarrays = list(distarrays)
        self.narrays = len(self.distarrays)
        self.base_comm = base_comm
        self.rank = base_comm.Get_rank()
        self.size = base_comm.Get_size()
        shapes = [tuple(d.global_shape) for d in self.distarrays]
        if shapes and all(len(s) == len(shapes[0]) for s in shapes):
            self.global_shape = tuple(int(v) for v in np.sum(np.array(shapes), axis=0))
        else:   # members of different ndim (PyLops-MPI needs equal ones): the total size
            self.global_shape = (int(sum(np.prod(s) for s in shapes)),)

    @property
    def engine(self):
        return "numpy"

    @property
    def dtype(self):
        return np.result_type(*[d.dtype for d in self.distarrays])

    def __getitem__(self, i):
        return self.distarrays[i]

    def __setitem__(self, i, value):
        target = self.distarrays[i]
        if isinstance(target, StackedDistributedArray):
            for j in range(target.narrays):
                target[j] = value[j]
        elif isinstance(value, DistributedArray):
            target.local_array[...] = value.local_array
        else:
            target.local_array[...] = value

    def asarray(self):
        return np.hstack([d.asarray().ravel() for d in self.distarrays])

    def _check_stacked_size(self, other):
        if not isinstance(other, StackedDistributedArray) or other.narrays != self.narrays:
            raise ValueError("Stacked arrays must be composed the same number of arrays")
        for a, b in zip(self.distarrays, other.distarrays):
            if tuple(a.global_shape) != tuple(b.global_shape):
                raise ValueError(f"Stacked arrays {a.global_shape} and {b.global_shape} "
                                 "have different global shapes")

    def _map(self, fn):
        return StackedDistributedArray([fn(d) for d in self.distarrays], base_comm=self.base_comm)

    def _zip(self, other, fn):
        self._check_stacked_size(other)
        return StackedDistributedArray([fn(a, b) for a, b in zip(self.distarrays, other.distarrays)],
                                       base_comm=self.base_comm)

    def copy(self):
        return self._map(lambda d: d.copy())

    def conj(self):
        return self._map(lambda d: d.conj())

    def zeros_like(self):
        def z(d):
            out = d.empty_like() if isinstance(d, DistributedArray) else d.zeros_like()
            if isinstance(d, DistributedArray):
                out.local_array[...] = 0
            return out
        return self._map(z)

    def empty_like(self):
        return self._map(lambda d: d.empty_like())

    def __neg__(self):
        return self._map(lambda d: -d)

    def __add__(self, other):
        return self._zip(other, lambda a, b: a + b)

    def __iadd__(self, other):
        self._check_stacked_size(other)
        for a, b in zip(self.distarrays, other.distarrays):
            a += b
        return self

    def __sub__(self, other):
        return self._zip(other, lambda a, b: a - b)

    def __isub__(self, other):
        self._check_stacked_size(other)
        for a, b in zip(self.distarrays, other.distarrays):
            a -= b
        return self

    def multiply(self, other):
        if isinstance(other, StackedDistributedArray):
            return self._zip(other, lambda a, b: a * b)
        return self._map(lambda d: d * other)

    __mul__ = multiply
    __rmul__ = multiply

    def add(self, other):
        return self + other

    def iadd(self, other):
        self += other
        return self

    def dot(self, other, vdot=False):
        with checks() as c:     # agreed: the members' dots are collective
            self._check_stacked_size(other)
        agree(self.base_comm, c)
        # PyLops-MPI's type: 0. plus the members' dots, each a 1-element array, so a 1-element
        # array of the members' result type
        dots = [np.asarray(a.dot(b, vdot=vdot)).reshape(-1)
                for a, b in zip(self.distarrays, other.distarrays)]
        out = np.zeros(1, dtype=np.result_type(np.float64, *[d.dtype for d in dots]))
        for d in dots:
            out = out + d
        return out

    def norm(self, ord=None):
        if isinstance(ord, str):
            raise ValueError(f"norm-{ord} not possible for vectors")
        norms = np.array([np.asarray(d.norm(ord)).item() for d in self.distarrays])
        p = 2 if ord is None else ord
        if p == 0:
            return np.sum(norms)
        if p == np.inf:
            return np.max(norms)
        if p == -np.inf:
            return np.min(norms)
        return np.power(np.sum(np.power(norms, p)), 1.0 / p)

    def destroy(self):
        for d in self.distarrays:
            d.destroy()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __repr__(self):
        members = "\n".join(repr(d) for d in self.distarrays)
        return f"<StackedDistributedArray with {self.narrays} distributed arrays: \n" + members
