"""MPILinearOperator, its composites, and the local blocks made from any linear-operator-like
Python object.

An operator made by this package holds a C operator (`_plm`, a Handle): applies, composites
(+ - * @ ** .H .T conj) and solvers run in the library. An operator defined in Python (a subclass
overriding `_matvec`/`_rmatvec`) works too; composites with it are applied in Python.
"""
import hashlib
import numbers

import numpy as np
from mpi4py import MPI

from ._core import (ffi, lib, call, check, checks, agree, agree_gather, Handle, plm_comm, plm_dtype,
                    np_dtype, new_ctx)
from ._core import _ArrayHandle, _ARRAY_PTR, _array_destroy, _live_refs, _ref
from .DistributedArray import DistributedArray, StackedDistributedArray, Partition, _Layout
from .errors import DtypeMismatchError

_NULL = ffi.NULL
_new = object.__new__
_empty = np.empty
_create_from_layout = lib.plm_array_create_from_layout
_HOST = lib.PLM_MEMORY_HOST
_from_buffer = ffi.from_buffer
_ffi_new = ffi.new

__all__ = ["MPILinearOperator", "MPIStackedLinearOperator", "MPIShellOperator", "asmpilinearoperator",
           "local_operator"]


# --- local blocks ---------------------------------------------------------------------------------
class _Block:
    """What the C callback trampolines call: matvec/rmatvec of a Python operator on 1-D arrays."""

    def __init__(self, op, dtype):
        self.op = op
        self.dtype = dtype
        self._mv = getattr(op, "matvec", None) or getattr(op, "_matvec")
        self._rmv = getattr(op, "rmatvec", None) or getattr(op, "_rmatvec", None)

    def matvec(self, x):
        return self._mv(x)

    def rmatvec(self, x):
        if self._rmv is None:
            raise NotImplementedError(f"{type(self.op).__name__} has no rmatvec")
        return self._rmv(x)


def _supported_dtype(dtype):
    dt = np.dtype(dtype)
    if dt in (np.float32, np.float64, np.complex64, np.complex128):
        return dt
    return np.dtype(np.complex128) if np.issubdtype(dt, np.complexfloating) else np.dtype(np.float64)


def local_operator(op, dtype=None):
    """A C local operator (Handle) for a numpy matrix or any object that looks like a linear
    operator (shape, dtype, matvec/rmatvec or _matvec/_rmatvec: SciPy and PyLops operators).
    Dense matrices (numpy arrays, SciPy MatrixLinearOperator, PyLops MatrixMult with a numpy A)
    become library dense operators; anything else calls back into Python."""
    if isinstance(op, MPILinearOperator):
        raise TypeError("expected a local operator, got an MPILinearOperator")
    dt = _supported_dtype(dtype if dtype is not None else op.dtype)
    mat = op if isinstance(op, np.ndarray) else getattr(op, "A", None)
    if isinstance(mat, np.ndarray) and mat.ndim == 2 and tuple(mat.shape) == tuple(op.shape):
        # copied (wrap = 0): the distributed operators and composites holding this block may
        # outlive every Python object that would keep a wrapped matrix alive
        a = np.ascontiguousarray(mat, dtype=dt)
        hd = Handle("plm_op_t", "plm_op_destroy")
        call(lib.plm_op_dense, plm_dtype(dt), a.shape[0], a.shape[1],
             ffi.from_buffer(a) if a.nbytes else ffi.NULL, a.nbytes, 0, 0, hd.ptr)
        return hd
    rows, cols = (int(s) for s in op.shape)
    ctx = new_ctx(_Block(op, dt))
    hd = Handle("plm_op_t", "plm_op_destroy")
    try:
        call(lib.plm_op_callback, plm_dtype(dt), rows, cols, lib._plm_py_plm_op_fn_matvec,
             lib._plm_py_plm_op_fn_rmatvec, ctx, lib._plm_py_ctx_destroy, hd.ptr)
    except Exception:
        lib._plm_py_ctx_destroy(ctx)      # the call failed: ctx stays ours
        raise
    return hd


# --- apply helpers --------------------------------------------------------------------------------
def _layout_of(fn, op_h, i=None):
    hd = Handle("plm_layout_t", "plm_layout_destroy")
    if i is None:
        call(fn, op_h, hd.ptr)
    else:
        call(fn, op_h, i, hd.ptr)
    return hd


def _equal(l1, l2):
    v = ffi.new("int *")
    call(lib.plm_layout_equal, l1.h, l2.h, v)
    return bool(v[0])


def _direct(x, layout, dtype):
    """Whether x can be passed to the library as it is (on the layout, with the dtype)."""
    return isinstance(x, DistributedArray) and x.dtype == dtype and \
        (x._layout is layout or _equal(x._layout.handle, layout.handle))


def _describe(x):
    """What must be equal on every rank about an apply's input (its type, layouts, dtypes)."""
    if isinstance(x, StackedDistributedArray):
        return ("stack",) + tuple(_describe(d) for d in x.distarrays)
    if isinstance(x, DistributedArray):
        return (x._layout.describe(), x.dtype.str)
    return (type(x).__name__,)


def _agree_inputs(comm, x, xs, layouts, dtype, check=None):
    """Collective: agrees that every rank passes the same kind of input x (members xs, meant
    for layouts); `check` runs first (its exception is agreed). Returns whether every member on
    every rank can be passed as it is. An x that differs between ranks raises ValueError on
    every rank."""
    desc = direct = None
    with checks() as c:
        if check is not None:
            check()
        # a digest and a short text, not the description (its local shapes grow with the ranks)
        text = repr(_describe(x))
        desc = (hashlib.blake2b(text.encode(), digest_size=16).digest(), text[:160])
        direct = all(_direct(m, lay, dtype) for m, lay in zip(xs, layouts))
    values = agree_gather(comm, c, (desc, direct))
    for r, (d, _) in enumerate(values):
        if d[0] != values[0][0][0]:
            raise ValueError(f"the input arrays differ between ranks: rank 0 has {values[0][0][1]}, "
                             f"rank {r} has {d[1]}")
    return all(ok for _, ok in values)


def _convert(x, layout, dtype):
    """x itself when it lies on the layout with the dtype, else a copy that does (a slow path:
    the global vector is gathered and set again). Collective: the caller has agreed that x is
    alike on every rank (its dtype too). A dtype x does not convert to without loss (complex
    into real, float64 into float32) raises DtypeMismatchError on every rank, never drops the
    imaginary part or the precision."""
    if _direct(x, layout, dtype):
        return x
    if not np.can_cast(x.dtype, dtype, casting="safe"):
        raise DtypeMismatchError(lib.PLM_ERR_DTYPE_MISMATCH,
                                 f"{x.dtype} data cannot be converted to {np.dtype(dtype)} without loss")
    out = DistributedArray._on_layout(layout, dtype, plm_dtype(dtype))
    if x.partition != Partition.SCATTER and out.partition != Partition.SCATTER:
        out.local_array[...] = x.local_array.reshape(out.local_shape)
        return out
    g = np.ascontiguousarray(x.asarray().ravel(), dtype=dtype)
    call(lib.plm_array_set_global, out.handle, ffi.from_buffer(g) if g.nbytes else ffi.NULL, g.nbytes)
    return out


def _conform(x, layout_hd, dtype, base_comm):
    """Collective (every rank calls it): x, or a copy of it on the layout with the dtype."""
    layout = _Layout(layout_hd, base_comm)

    def check():
        if not isinstance(x, DistributedArray):
            raise TypeError(f"expected a DistributedArray, got {type(x).__name__}")
    if _agree_inputs(base_comm, x, [x], [layout], dtype, check):
        return x
    return _convert(x, layout, dtype)


def _new_on(layout_hd, dtype, base_comm):
    """A new (uninitialised) array on a layout handle."""
    dtype = np.dtype(dtype)
    return DistributedArray._on_layout(_Layout(layout_hd, base_comm), dtype, plm_dtype(dtype))


def _parts(op_h):
    nd, nr = ffi.new("int *"), ffi.new("int *")
    call(lib.plm_op_parts, op_h, nd, nr)
    return nd[0], nr[0]


def _stack_handle(s):
    """A C stack over the members of a StackedDistributedArray (members must be 1-level)."""
    arrays = [d.handle for d in s.distarrays]
    hd = Handle("plm_stacked_t", "plm_stacked_destroy")
    call(lib.plm_stacked_create, len(arrays), ffi.new("plm_array_t[]", arrays), hd.ptr)
    return hd


# --- stacks of stacks -----------------------------------------------------------------------------
# A stacked operator's domain and range are trees: None is one DistributedArray, a list of trees
# a StackedDistributedArray of them (PyLops-MPI's nesting: MPIStackedVStack([Op, Gradient]) maps x
# to [Op x, [D0 x, D1 x]]). The library sees the leaves, in order (its stacks are flat).
def _leaves(x):
    """The DistributedArrays of a (nested) StackedDistributedArray, in order (x alone for one)."""
    if isinstance(x, StackedDistributedArray):
        return [leaf for d in x.distarrays for leaf in _leaves(d)]
    return [x]


def _count(tree):
    return 1 if tree is None else sum(_count(t) for t in tree)


def _build(tree, leaves, comm):
    """A DistributedArray (tree None) or a nested StackedDistributedArray of the leaves."""
    it = iter(leaves)

    def make(t):
        if t is None:
            return next(it)
        return StackedDistributedArray([make(s) for s in t], base_comm=comm)
    return make(tree)


class _IO:
    """What the applies of a library operator need, asked of the library once per operator
    (operators are immutable): its parts' layouts, its dtype, and for a one-part operator
    with 1-D domain and range of shape[1] and shape[0] elements, the fast path."""

    def __init__(self, op):
        hd = op._plm
        h = hd.h
        self.hd = hd
        self.dtype = np.dtype(op.dtype)
        self.code = plm_dtype(self.dtype)
        comm = op.base_comm
        nd, nr = _parts(h)
        self.domain = [_Layout(_layout_of(lib.plm_op_domain_part, h, i), comm) for i in range(nd)]
        self.range = [_Layout(_layout_of(lib.plm_op_range_part, h, i), comm) for i in range(nr)]
        cls = type(op)
        self.native = cls._matvec is MPILinearOperator._matvec and \
            cls._rmatvec is MPILinearOperator._rmatvec
        self.fast = (nd, nr) == (1, 1) and op._dtree is None and op._rtree is None \
            and self.domain[0].global_shape == (op.shape[1],) \
            and self.range[0].global_shape == (op.shape[0],)
        # the fast path's pieces, by adjoint (0 or 1): output layout and library function, and
        # what a new output on that layout needs (_apply_native makes it without further calls)
        self.out = (self.range[0], self.domain[0]) if self.fast else None
        self.fn = (lib.plm_op_apply, lib.plm_op_apply_adjoint)
        self.op_ptr = hd.ptr
        self.new = tuple((lay, lay.handle.ptr, lay.base_comm, lay.local_shape) for lay in self.out) \
            if self.fast else None


def _io_of(op):
    """The operator's _IO (made once), or None for an operator without a library handle."""
    io = op._io
    if io is None or io.hd is not op._plm:
        if op._plm is None:
            return None
        io = op._io = _IO(op)
    return io


def _apply_native(op, io, x, adjoint):
    """y = op x (or op^H x) through the library, with PyLops-MPI's array types in and out.
    Collective. The fast path (a DistributedArray on the operator's layout) makes the output and
    calls the library, which agrees on x's layout; any other x takes the agreed slow path."""
    if io.fast:
        # the output: DistributedArray._on_layout, inlined (every apply makes one)
        lay, lay_ptr, base_comm, shape = io.new[adjoint]
        dtype, code = io.dtype, io.code
        xdt = getattr(x, "_dtype", dtype)
        if xdt is not dtype and xdt != dtype:   # NumPy's promotion (the library checks the pair)
            dtype = np.result_type(dtype, xdt)
            code = plm_dtype(dtype)
        local = _empty(shape, dtype)
        y = _new(DistributedArray)
        y._layout = lay
        y._base_comm = base_comm
        y._dtype = dtype
        y._sub_comm = None
        y._local = local
        y._h = hd = _new(_ArrayHandle)  # _core.array_handle, inlined
        hd.ptr = cell = _ffi_new(_ARRAY_PTR)
        hd._destroy = _array_destroy
        hd._collective = False
        hd.keep = local
        _live_refs[id(hd)] = _ref(hd)
        nbytes = local.nbytes
        st = _create_from_layout(lay_ptr[0], code, _HOST, _from_buffer(local) if nbytes else _NULL, nbytes, cell)
        if st:
            check(st)
        st = io.fn[adjoint](io.op_ptr[0], x._h.ptr[0] if isinstance(x, DistributedArray) else _NULL, cell[0])
        if not st:
            return y
        try:            # failed on every rank (agreed): x conformed, else the library's error
            check(st)
        except Exception as e:
            return _apply_slow(op, io, x, adjoint, e)
    return _apply_slow(op, io, x, adjoint, None)


def _apply_slow(op, io, x, adjoint, failed):
    """Every rank: agree on x (kind, size, layout), convert it to the operator's layouts, apply.
    `failed`: the fast path's agreed error, raised again when x needed no conversion. A stack
    (nested or not) passes its leaves; the output has the operator's nesting."""
    ins, outs = (io.range, io.domain) if adjoint else (io.domain, io.range)
    members = _leaves(x) if isinstance(x, StackedDistributedArray) else [x]
    # the data's dtype (the members' promotion) and the result's, NumPy's promotion with the
    # operator's: the library widens narrower data and applies a real operator to complex data
    # part by part; it refuses data the operator would have to compute in another precision
    xdt = io.dtype
    if all(isinstance(m, DistributedArray) for m in members):
        xdt = np.result_type(*[m.dtype for m in members])
    ydt = np.result_type(io.dtype, xdt)

    def check():
        _check_input(x, op.shape[0] if adjoint else op.shape[1])
        if len(members) != len(ins):
            raise ValueError(f"expected a stack of {len(ins)} arrays, got {len(members)}")
        plm_dtype(ydt)
    direct = _agree_inputs(op.base_comm, x, members, ins, xdt, check)
    if failed is not None and direct and isinstance(x, DistributedArray):
        raise failed
    xs = [_convert(m, lay, xdt) for m, lay in zip(members, ins)]
    ys = [DistributedArray._on_layout(lay, ydt, plm_dtype(ydt)) for lay in outs]
    h = io.hd.h
    comm = op.base_comm
    tree = op._dtree if adjoint else op._rtree
    if len(xs) == 1 and len(ys) == 1:
        call(lib.plm_op_apply_adjoint if adjoint else lib.plm_op_apply, h, xs[0].handle, ys[0].handle)
        return _build(tree, ys, comm)
    xh = _stack_handle(StackedDistributedArray(xs, base_comm=comm))
    yh = _stack_handle(StackedDistributedArray(ys, base_comm=comm))
    try:
        call(lib.plm_op_apply_adjoint_stacked if adjoint else lib.plm_op_apply_stacked, h, xh.h, yh.h)
    finally:
        xh.destroy()
        yh.destroy()
    if tree is None and len(ys) > 1:    # an operator of this package always knows its nesting
        tree = [None] * len(ys)
    return _build(tree, ys, comm)


def _check_input(x, n):
    """PyLops-MPI's checks of an apply's input: a 1-D DistributedArray or a stack, of n elements."""
    if not isinstance(x, (DistributedArray, StackedDistributedArray)):
        raise ValueError("expected 1-d DistributedArray or StackedDistributedArray")
    if _total_size(x) != n or (isinstance(x, DistributedArray) and len(x.global_shape) != 1):
        raise ValueError("dimension mismatch")


def _total_size(x):
    if isinstance(x, StackedDistributedArray):
        return sum(_total_size(d) for d in x.distarrays)
    return int(np.prod(x.global_shape))


# --- the operator class ---------------------------------------------------------------------------
class MPILinearOperator:
    """A distributed linear operator (PyLops-MPI's MPILinearOperator).

    MPILinearOperator(Op) with a local operator Op (numpy matrix, SciPy or PyLops operator)
    applies the same Op on every rank to BROADCAST (or UNSAFE_BROADCAST) vectors.
    """

    _plm = None          # Handle of the C operator, for operators the library applies
    _io = None           # _IO of _plm, made by the first apply
    _dtree = None        # nesting of the domain and the range: None for one array (see _leaves)
    _rtree = None

    def __init__(self, Op=None, shape=None, dims=None, dimsd=None, dtype=None,
                 base_comm=MPI.COMM_WORLD):
        self.base_comm = base_comm
        self.size = base_comm.Get_size()
        self.rank = base_comm.Get_rank()
        self.Op = Op
        if Op is not None:
            local = None
            with checks() as c:     # agreed: plm_op_broadcast is collective
                shape = tuple(Op.shape) if shape is None else shape
                dtype = Op.dtype if dtype is None else dtype
                dims = getattr(Op, "dims", None) if dims is None else dims
                dimsd = getattr(Op, "dimsd", None) if dimsd is None else dimsd
                local = local_operator(Op, dtype)
            agree(base_comm, c)
            hd = Handle("plm_op_t", "plm_op_destroy")
            try:
                call(lib.plm_op_broadcast, plm_comm(base_comm), local.h, hd.ptr)
            finally:
                local.destroy()
            self._plm = hd
        self.dtype = np.dtype(dtype) if dtype is not None else None
        self._shape = tuple(int(s) for s in shape) if shape is not None else None
        self._dims = None
        self._dimsd = None
        self.dims = dims if dims is not None else (None if self._shape is None else (self._shape[1],))
        self.dimsd = dimsd if dimsd is not None else (None if self._shape is None else (self._shape[0],))

    @classmethod
    def _native(cls, hd, base_comm, dims=None, dimsd=None, obj=None):
        """An MPILinearOperator over a C operator handle (shape and dtype from the library)."""
        self = obj if obj is not None else cls.__new__(cls)
        rows, cols = ffi.new("int64_t *"), ffi.new("int64_t *")
        call(lib.plm_op_shape, hd.h, rows, cols)
        dt = ffi.new("plm_dtype_t *")
        call(lib.plm_op_dtype, hd.h, dt)
        MPILinearOperator.__init__(self, shape=(rows[0], cols[0]), dims=dims, dimsd=dimsd,
                                   dtype=np_dtype(dt[0]), base_comm=base_comm)
        self._plm = hd
        return self

    # clinear like PyLops: whether the operator is linear over the complex numbers (False: over
    # the reals only, as a real-input FFT); the library's operators say it themselves
    _clinear = None

    @property
    def clinear(self):
        if self._clinear is not None:
            return self._clinear
        if self._plm is not None:
            v = ffi.new("int *")
            call(lib.plm_op_clinear, self._plm.h, v)
            return bool(v[0])
        return True

    @clinear.setter
    def clinear(self, value):
        self._clinear = bool(value)

    # shape / dims / dimsd like PyLops-MPI
    @property
    def shape(self):
        if self._shape is None and self._dims is not None and self._dimsd is not None:
            self._shape = (int(np.prod(self._dimsd)), int(np.prod(self._dims)))
        return self._shape

    @shape.setter
    def shape(self, value):
        self._shape = tuple(int(s) for s in value)

    @property
    def dims(self):
        return self._dims

    @dims.setter
    def dims(self, value):
        if value is None:
            self._dims = None
            return
        value = (int(value),) if isinstance(value, numbers.Integral) else tuple(int(v) for v in value)
        if self._shape is not None and int(np.prod(value)) != self._shape[1]:
            raise ValueError(f"dims {value} do not match shape[1] {self._shape[1]}")
        self._dims = value

    @property
    def dimsd(self):
        return self._dimsd

    @dimsd.setter
    def dimsd(self, value):
        if value is None:
            self._dimsd = None
            return
        value = (int(value),) if isinstance(value, numbers.Integral) else tuple(int(v) for v in value)
        if self._shape is not None and int(np.prod(value)) != self._shape[0]:
            raise ValueError(f"dimsd {value} do not match shape[0] {self._shape[0]}")
        self._dimsd = value

    # --- lifetime -----------------------------------------------------------------------------
    def destroy(self):
        """Release the C operator now (not collective; composites holding it keep it alive)."""
        if self._plm is not None:
            self._plm.destroy()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    @property
    def handle(self):
        """The plm_op_t (borrowed), or None for operators defined in Python."""
        return self._plm.h if self._plm is not None else None

    # --- apply --------------------------------------------------------------------------------
    # Applies are collective: x is checked by agreement, never on one rank alone. The library
    # applies its own operators (it agrees on x's layout itself: no extra agreement on the fast
    # path); an operator defined in Python gets an agreed check of x first.
    def _native_io(self):
        """The _IO when the library applies this operator (its _matvec is not overridden)."""
        io = _io_of(self)
        return io if io is not None and io.native else None

    def matvec(self, x):
        io = self._io
        if io is None or io.hd is not self._plm:
            io = self._native_io()
        if io is not None and io.native:
            return _apply_native(self, io, x, 0)
        with checks() as c:
            _check_input(x, self.shape[1])
        agree(self.base_comm, c)
        return self._matvec(x)

    def rmatvec(self, x):
        io = self._io
        if io is None or io.hd is not self._plm:
            io = self._native_io()
        if io is not None and io.native:
            return _apply_native(self, io, x, 1)
        with checks() as c:
            _check_input(x, self.shape[0])
        agree(self.base_comm, c)
        return self._rmatvec(x)

    def _matvec(self, x):
        if self._plm is None:
            raise NotImplementedError("_matvec is not implemented")
        self._native_io()
        return _apply_native(self, self._io, x, 0)

    def _rmatvec(self, x):
        if self._plm is None:
            raise NotImplementedError("_rmatvec is not implemented")
        self._native_io()
        return _apply_native(self, self._io, x, 1)

    def dot(self, x):
        if isinstance(x, DistributedArray):
            return self.matvec(x)
        if isinstance(x, MPILinearOperator):
            return self._compose("product", x)
        if np.isscalar(x):
            return self._scaled(x)
        # anything else: the apply's agreed check raises ValueError (on every rank, even when
        # the other ranks pass arrays)
        return self.matvec(x)

    def __call__(self, x):
        return self * x

    def __mul__(self, x):
        return self.dot(x)

    def __matmul__(self, x):
        if isinstance(x, DistributedArray):
            io = self._io  # matvec's fast path, one call shorter
            if io is not None and io.native and io.hd is self._plm:
                return _apply_native(self, io, x, 0)
            return self.matvec(x)
        if np.isscalar(x):
            raise ValueError("Scalar not allowed, use * instead")
        return self.__mul__(x)

    def __rmul__(self, x):
        if np.isscalar(x):
            return self._scaled(x)
        return NotImplemented

    def __rmatmul__(self, x):
        if np.isscalar(x):
            raise ValueError("Scalar not allowed, use * instead")
        return NotImplemented

    def __pow__(self, p):
        if not isinstance(p, numbers.Integral) or p < 0:
            raise ValueError("expected non-negative integer power")
        if self.shape[0] != self.shape[1]:
            raise ValueError("square LinearOperator expected")
        if self._plm is not None:
            hd = Handle("plm_op_t", "plm_op_destroy")
            call(lib.plm_op_power, self._plm.h, int(p), hd.ptr)
            return _result(hd, self.base_comm, self.dims, self.dimsd, self._dtree, self._rtree)
        return _python_op(self.shape, self.dtype, self.base_comm, lambda x: _power(self, x, p, False),
                          lambda x: _power(self, x, p, True), self.dims, self.dimsd, self._dtree,
                          self._rtree)

    def __add__(self, other):
        if not isinstance(other, MPILinearOperator):
            return NotImplemented
        if self.shape != other.shape:
            raise ValueError(f"cannot add {self} and {other}: shape mismatch")
        return self._compose("sum", other)

    def __neg__(self):
        return self._scaled(-1)

    def __sub__(self, other):
        if not isinstance(other, MPILinearOperator):
            return NotImplemented
        if self.shape != other.shape:
            raise ValueError(f"cannot subtract {other} from {self}: shape mismatch")
        return self._compose("difference", other)

    def adjoint(self):
        return self._unary("adjoint")

    H = property(adjoint)

    def transpose(self):
        return self._unary("transpose")

    T = property(transpose)

    def conj(self):
        return self._unary("conj")

    # --- composites: in the library when both operands are library operators ------------------
    # (stacked operands too: the library checks that their members agree, and the result is an
    # MPIStackedLinearOperator when either operand is stacked)
    def _unary(self, kind):
        swap = kind in ("adjoint", "transpose")
        dims, dimsd = (self.dimsd, self.dims) if swap else (self.dims, self.dimsd)
        dtree, rtree = (self._rtree, self._dtree) if swap else (self._dtree, self._rtree)
        if self._plm is not None:
            hd = Handle("plm_op_t", "plm_op_destroy")
            call(getattr(lib, "plm_op_" + kind), self._plm.h, hd.ptr)
            return _result(hd, self.base_comm, dims, dimsd, dtree, rtree)
        shape = (self.shape[1], self.shape[0]) if swap else self.shape
        if kind == "adjoint":
            mv, rmv = self.rmatvec, self.matvec
        elif kind == "transpose":
            mv = lambda x: self.rmatvec(x.conj()).conj()
            rmv = lambda x: self.matvec(x.conj()).conj()
        else:
            mv = lambda x: self.matvec(x.conj()).conj()
            rmv = lambda x: self.rmatvec(x.conj()).conj()
        return _python_op(shape, self.dtype, self.base_comm, mv, rmv, dims, dimsd, dtree, rtree)

    def _scaled(self, alpha):
        dtype = np.result_type(self.dtype, np.asarray(alpha).dtype)
        if self._plm is not None and dtype == self.dtype:
            a = complex(alpha)
            hd = Handle("plm_op_t", "plm_op_destroy")
            call(lib.plm_op_scale, self._plm.h, a.real, a.imag, hd.ptr)
            return _result(hd, self.base_comm, self.dims, self.dimsd, self._dtree, self._rtree)
        return _python_op(self.shape, dtype, self.base_comm, lambda x: self.matvec(x) * alpha,
                          lambda x: self.rmatvec(x) * np.conj(alpha), self.dims, self.dimsd,
                          self._dtree, self._rtree)

    def _compose(self, kind, other):
        if kind == "product" and self.shape[1] != other.shape[0]:
            raise ValueError(f"cannot multiply {self} and {other}: shape mismatch")
        dims, dimsd = (other.dims, self.dimsd) if kind == "product" else (self.dims, self.dimsd)
        dtree, rtree = (other._dtree, self._rtree) if kind == "product" else (self._dtree, self._rtree)
        if self._plm is not None and other._plm is not None and self.dtype == other.dtype:
            hd = Handle("plm_op_t", "plm_op_destroy")
            call(getattr(lib, "plm_op_" + kind), self._plm.h, other._plm.h, hd.ptr)
            return _result(hd, self.base_comm, dims, dimsd, dtree, rtree)
        if kind == "product":
            return _python_op((self.shape[0], other.shape[1]), np.result_type(self.dtype, other.dtype),
                              self.base_comm, lambda x: self.matvec(other.matvec(x)),
                              lambda x: other.rmatvec(self.rmatvec(x)), dims, dimsd, dtree, rtree)
        sign = 1 if kind == "sum" else -1
        return _python_op(self.shape, np.result_type(self.dtype, other.dtype), self.base_comm,
                          lambda x: self.matvec(x) + other.matvec(x) * sign,
                          lambda x: self.rmatvec(x) + other.rmatvec(x) * sign, dims, dimsd, dtree,
                          rtree)

    def __repr__(self):
        return f"<{self.shape[0]}x{self.shape[1]} {type(self).__name__} with dtype={self.dtype}>"


class _PyOp(MPILinearOperator):
    """A composite applied in Python (an operand is defined in Python)."""

    def __init__(self, shape, dtype, base_comm, mv, rmv, dims=None, dimsd=None):
        super().__init__(shape=shape, dims=dims, dimsd=dimsd, dtype=dtype, base_comm=base_comm)
        self._mv, self._rmv = mv, rmv

    def _matvec(self, x):
        return self._mv(x)

    def _rmatvec(self, x):
        return self._rmv(x)


class MPIStackedLinearOperator(MPILinearOperator):
    """A distributed operator on stacks (PyLops-MPI's MPIStackedLinearOperator): its domain or
    range is a StackedDistributedArray (possibly nested, as PyLops-MPI's MPIStackedVStack of
    [Op, MPIGradient] gives [Op x, [D0 x, D1 x]]). MPIStackedBlockDiag, MPIStackedVStack and
    MPIGradient are ones; so is every composite (+ - * @ ** .H .T conj, scaling) with a stacked
    operand, applied by the library when the operands are library operators. Subclass it with
    `_matvec` / `_rmatvec` on (stacked) arrays for an operator defined in Python, as in PyLops-MPI.
    """

    def __init__(self, shape=None, dims=None, dimsd=None, dtype=None, base_comm=MPI.COMM_WORLD):
        MPILinearOperator.__init__(self, shape=shape, dims=dims, dimsd=dimsd, dtype=dtype,
                                   base_comm=base_comm)


class _PyStackedOp(MPIStackedLinearOperator):
    """A composite of stacked operators applied in Python (an operand is defined in Python)."""

    def __init__(self, shape, dtype, base_comm, mv, rmv, dims=None, dimsd=None):
        super().__init__(shape=shape, dims=dims, dimsd=dimsd, dtype=dtype, base_comm=base_comm)
        self._mv, self._rmv = mv, rmv

    def _matvec(self, x):
        return self._mv(x)

    def _rmatvec(self, x):
        return self._rmv(x)


def _python_op(shape, dtype, base_comm, mv, rmv, dims, dimsd, dtree, rtree):
    """A composite applied in Python: stacked when its domain or range is."""
    stacked = dtree is not None or rtree is not None
    op = (_PyStackedOp if stacked else _PyOp)(shape, dtype, base_comm, mv, rmv, dims, dimsd)
    op._dtree, op._rtree = dtree, rtree
    return op


def _result(hd, base_comm, dims, dimsd, dtree, rtree):
    """The operator over a library composite: stacked when its domain or range is."""
    stacked = dtree is not None or rtree is not None
    op = (MPIStackedLinearOperator if stacked else MPILinearOperator)._native(hd, base_comm, dims, dimsd)
    op._dtree, op._rtree = dtree, rtree
    return op


def _power(op, x, p, adjoint):
    y = x.copy()
    for _ in range(p):
        y = op.rmatvec(y) if adjoint else op.matvec(y)
    return y


class MPIShellOperator(MPILinearOperator):
    """A distributed operator defined in Python on whole DistributedArrays, which the library
    applies like its own (plm_op_shell): subclass it and override `_matvec(x)` / `_rmatvec(y)`
    (the equivalent of subclassing PyLops-MPI's MPILinearOperator), or pass `matvec` / `rmatvec`
    functions. Unlike a plain MPILinearOperator subclass, it composes in the library
    (+ - * @ .H .T with library operators) and runs in the library's solvers.

    `domain` / `range` are DistributedArrays (any: only their layouts are used) giving the
    layouts of x and y; by default 1-D SCATTER arrays of shape[1] / shape[0] on base_comm.
    x is lent for the call, read-only; the function returns a DistributedArray on the other
    layout (or with the same local sizes), copied into the library's y. The functions run on
    every rank: each rank must make the same collective calls in the same order (an exception
    before any collective is safe: the library agrees on it after the call, and every rank
    raises CallbackError).
    """

    def __init__(self, shape=None, dtype=np.float64, base_comm=MPI.COMM_WORLD, domain=None,
                 range=None, matvec=None, rmatvec=None, dims=None, dimsd=None):
        with checks() as c:
            dtype = np.dtype(dtype)
            code = plm_dtype(dtype)
            if shape is None:
                if domain is None or range is None:
                    raise ValueError("MPIShellOperator needs a shape or both domain and range")
                shape = (int(np.prod(range.global_shape)), int(np.prod(domain.global_shape)))
            shape = tuple(int(s) for s in shape)
        agree(base_comm, c)
        self._mv, self._rmv = matvec, rmatvec
        dom = domain if domain is not None else DistributedArray(shape[1], base_comm=base_comm,
                                                                 dtype=dtype)
        ran = range if range is not None else DistributedArray(shape[0], base_comm=base_comm,
                                                               dtype=dtype)
        ctx = new_ctx(self)
        hd = Handle("plm_op_t", "plm_op_destroy")
        try:
            call(lib.plm_op_shell, dom._layout.handle.h, ran._layout.handle.h, code,
                 lib._plm_py_plm_op_shell_fn_matvec, lib._plm_py_plm_op_shell_fn_rmatvec, ctx,
                 lib._plm_py_ctx_destroy, hd.ptr)
        except Exception:
            lib._plm_py_ctx_destroy(ctx)      # the call failed: ctx stays ours
            raise
        MPILinearOperator._native(hd, base_comm, dims, dimsd, obj=self)

    def _matvec(self, x):
        if self._mv is None:
            raise NotImplementedError(f"{type(self).__name__} has no _matvec")
        return self._mv(x)

    def _rmatvec(self, x):
        if self._rmv is None:
            raise NotImplementedError(f"{type(self).__name__} has no _rmatvec")
        return self._rmv(x)

    def _shell_apply(self, x, y, adjoint):
        """The library's call: y = A x (or A^H x), x and y lent arrays."""
        xin = DistributedArray._borrow(x, self.base_comm)
        try:
            r = self._rmatvec(xin) if adjoint else self._matvec(xin)
        finally:
            xin._release()
        if not isinstance(r, DistributedArray):
            raise TypeError(f"{'_rmatvec' if adjoint else '_matvec'} of {type(self).__name__} "
                            f"returned {type(r).__name__}, expected a DistributedArray")
        yl = _layout_of(lib.plm_array_layout, y)
        if _equal(r._layout.handle, yl) and r.dtype == self.dtype:
            call(lib.plm_array_copy, r.handle, y)
            return
        # another layout with this rank's element count: copy the local block (no communication,
        # so a failure stays this rank's and the library agrees on it)
        n = ffi.new("int64_t *")
        call(lib.plm_array_local_size, y, n)
        if r.local_array.size != n[0]:
            raise ValueError(f"{type(self).__name__} returned {r.local_array.size} local elements "
                             f"on this rank, expected {n[0]}")
        data = ffi.new("void **")
        call(lib.plm_array_get_local_write, y, data)
        try:
            if n[0]:
                out = np.frombuffer(ffi.buffer(data[0], n[0] * self.dtype.itemsize), dtype=self.dtype)
                out[:] = r.local_array.ravel()
        finally:
            call(lib.plm_array_restore_local_write, y, data)


def asmpilinearoperator(Op):
    """Op itself if it is an MPILinearOperator, else MPILinearOperator(Op)."""
    return Op if isinstance(Op, MPILinearOperator) else MPILinearOperator(Op)
