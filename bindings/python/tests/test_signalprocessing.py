"""Signal-processing operators (MPIFFTND, MPIFFT2D, MPIFFT, MPINonStationaryConvolve1D) and the
FFT shift helpers against serial NumPy references computed here (numpy.fft with PyLops' nffts
and norms): forward, adjoint, dot tests (real parts for real-linear FFTs), 1-D FFTs,
uneven splits and fewer rows than ranks; bad arguments on one rank end in the same exception
on every rank."""
import contextlib
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import pylopsmpi as pm
from pylopsmpi.signalprocessing import (MPIFFT, MPIFFTND, MPIFFT2D, MPINonStationaryConvolve1D,
                                        fft_wisdom_export, fft_wisdom_import)
from pylopsmpi.utils import fftshift_nd, ifftshift_nd

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


def _rand(shape, complex_=True, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(shape)
    return g + 1j * rng.standard_normal(shape) if complex_ else g


def _same_everywhere(exc):
    kinds = comm.allgather(type(exc).__name__)
    assert len(set(kinds)) == 1, kinds


def _rows(shape):
    """Local sizes of the C-order vector of shape in whole rows of axis 0 (default split)."""
    n0, per_row = shape[0], int(np.prod(shape[1:]))
    return [((n0 // size + (1 if r < n0 % size else 0)) * per_row,) for r in range(size)]


# --- FFT --------------------------------------------------------------------------------------
def _fft_ref(x, axes, real, clinear, norm, ifs, ffs, nffts=None):
    """PyLops' FFTND forward on the global array x (numpy.fft, s=nffts)."""
    nffts = [x.shape[a] for a in axes] if nffts is None else list(nffts)
    x = x if clinear else x.real
    for a, s in zip(axes, ifs):
        if s:
            x = np.fft.ifftshift(x, axes=a)
    if real:
        y = np.fft.rfftn(x, s=nffts, axes=axes)
        r, n = axes[-1], nffts[-1]
        sl = [slice(None)] * x.ndim
        sl[r] = slice(1, 1 + (n - 1) // 2)
        y[tuple(sl)] *= np.sqrt(2)
    else:
        y = np.fft.fftn(x, s=nffts, axes=axes)
    if norm.lower() == "1/n":
        y = y / np.prod(nffts)
    for a, s in zip(axes, ffs):
        if s:
            y = np.fft.fftshift(y, axes=a)
    return y


FFT_CASES = [
    # dims, axes, real, dtype, norm, ifftshift_before, fftshift_after, the axis the data is split
    # along between the two exchanges (the output itself is always in rows of axis 0)
    ((5, 6), (0, 1), False, np.complex128, "none", False, False, 1),
    ((6, 4), (0, 1), True, np.float64, "1/n", True, True, 1),
    ((3, 4, 5), (0, 1, 2), True, np.complex128, "none", (True, False, True), (True, True, False), 1),
    ((3, 4, 5), (2, 0), False, np.complex64, "1/N", False, (False, True), 1),
    ((4, 3, 5), (1, -1), False, np.complex128, "none", True, (True, False), 0),
    ((2, 3, 4), (0, 1, 2), False, np.complex128, "none", False, (True, False, False), 1),
    ((5, 4), (1, 0), True, np.float64, "1/n", (False, True), False, 1),
    ((3, 5, 2), (-1,), True, np.float32, "none", False, False, 0),
    ((3, 4, 2), (0, 1), False, np.float64, "none", (True, False), (False, True), 2),
    # 1-D: the distributed 1-D algorithm (prime, real, shifts, fewer entries than ranks)
    ((12,), (0,), False, np.complex128, "none", False, False, 0),
    ((7,), (0,), False, np.complex128, "1/n", True, True, 0),
    ((10,), (0,), True, np.float64, "none", True, False, 0),
    ((3,), (0,), False, np.complex64, "1/n", False, True, 0),
]

# nffts (PyLops' crop / zero pad before each transform): dims, axes, nffts, real, dtype, norm,
# ifftshift_before, fftshift_after
NFFT_CASES = [
    ((5, 6, 7), (0, 1, 2), (4, 8, 9), False, np.complex128, "1/n", False, False),
    ((3, 4, 5), (0, 2), (6, None), False, np.complex128, "none", True, (True, False)),
    ((4, 5, 6), (0, 1, 2), (5, 4, 10), True, np.float64, "none", (True, False, False), False),
    ((6, 5), (1, 0), (7, 9), True, np.complex64, "1/n", (True, False), (False, True)),
    ((7, 3), (0, 1), 4, False, np.complex128, "none", (True, False), False),
    ((6,), (0,), (15,), False, np.complex128, "none", True, False),
    ((10,), (0,), (6,), False, np.complex128, "1/n", False, True),
    ((5,), (0,), (12,), True, np.float64, "1/n", False, False),
]


def _dense(fwd, n, real_input):
    """The matrix of a (real-)linear map of n inputs, from its action on unit vectors."""
    eye = np.eye(n)
    return np.stack([fwd(eye[:, j] if real_input else eye[:, j].astype(complex)) for j in range(n)],
                    axis=1)


def _fft_case(dims, axes, real, dtype, norm, ifs, ffs, nffts=None, planner_effort=None):
    """MPIFFTND of a case against numpy.fft: forward, adjoint (the exact adjoint of the
    reference, Re of it where real-linear), frequencies, layouts and dot tests."""
    sampling = (0.5, 2.0, 1.0)[:len(axes)]
    shifted_rfft = real and np.broadcast_to(ffs, len(axes))[-1]
    nax = [a % len(dims) for a in axes]
    nf = [dims[a] for a in nax] if nffts is None else \
        [dims[a] if n is None else n for a, n in zip(nax, np.broadcast_to(
            np.array(nffts, dtype=object), len(axes)))]
    short = any(n < dims[a] for a, n in zip(nax, nf))
    kw = {} if planner_effort is None else dict(planner_effort=planner_effort)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        Op = MPIFFTND(dims, axes=axes, sampling=sampling, norm=norm, real=real,
                      ifftshift_before=ifs, fftshift_after=ffs, dtype=dtype, nffts=nffts, **kw)
    texts = [str(w.message) for w in seen]
    # PyLops-MPI's warning of a shifted real axis, PyLops' of a cropping nfft
    assert any("fftshift_after on the last" in t for t in texts) == bool(shifted_rfft), texts
    assert any("smaller than the size" in t for t in texts) == short, texts
    ifs_t = np.broadcast_to(ifs, len(axes))
    ffs_t = np.broadcast_to(ffs, len(axes))
    clinear = not real and np.issubdtype(dtype, np.complexfloating)
    single = np.dtype(dtype) in (np.float32, np.complex64)
    tol = 2e-5 if single else 1e-11
    dimsd = list(dims)
    for a, n in zip(nax, nf):
        dimsd[a] = n
    if real:
        dimsd[nax[-1]] = nf[-1] // 2 + 1
    assert tuple(Op.dimsd) == tuple(dimsd) and Op.dims == tuple(dims)
    assert Op.nffts == tuple(nf)
    assert Op.out_axis == 0                   # out_axis: the split between the exchanges
    assert Op.shape == (int(np.prod(dimsd)), int(np.prod(dims)))
    assert Op.dtype == (np.complex64 if single else np.complex128) and Op.clinear == clinear
    for i, a in enumerate(nax):
        n = nf[i]
        f = np.fft.rfftfreq(n, sampling[i]) if real and i == len(nax) - 1 else \
            np.fft.fftfreq(n, sampling[i])
        if ffs_t[i]:
            f = np.fft.fftshift(f)
        np.testing.assert_allclose(Op.fs[i], f, rtol=1e-14)

    def fwd(v):
        return _fft_ref(v.reshape(dims), nax, real, clinear, norm, ifs_t, ffs_t, nf).ravel()

    xg = _rand(dims, seed=1).astype(Op.dtype)
    yg = _rand(dimsd, seed=2).astype(Op.dtype)
    x = pm.DistributedArray.to_dist(xg.ravel())             # any 1-D split is accepted
    y = Op @ x
    assert y.local_shapes == _rows(dimsd)                   # PyLops-MPI's output layout
    scale = np.abs(fwd(xg.ravel().astype(np.complex128))).max()
    np.testing.assert_allclose(y.asarray(), fwd(xg.ravel().astype(np.complex128)),
                               atol=tol * scale)
    # adjoint: A^H y, or Re(A^H y) for the real-linear cases
    A = _dense(fwd, int(np.prod(dims)), not clinear)
    want = A.conj().T @ yg.ravel().astype(np.complex128)
    if not clinear:
        want = want.real
    yd = pm.DistributedArray(global_shape=Op.shape[0], local_shapes=_rows(dimsd), dtype=Op.dtype)
    yd.local_array[:] = yg.ravel()[sum(s[0] for s in _rows(dimsd)[:rank]):][:yd.local_shape[0]]
    xa = Op.H @ yd
    assert xa.local_shapes == _rows(dims)
    np.testing.assert_allclose(xa.asarray(), want, atol=tol * np.abs(want).max())
    # dot test: PyLops' rule for real-linear operators (real parts), complex vectors; and the
    # library's own dot test, on the same rule
    assert pm.dottest(Op, x, yd, rtol=1e-4 if single else 1e-10)
    assert pm.dottest(Op.H, yd, x, rtol=1e-4 if single else 1e-10)
    if not clinear:       # the plain complex dot test fails there, as PyLops' would
        lhs = np.vdot((Op @ x).asarray(), yd.asarray())
        rhs = np.vdot(x.asarray(), (Op.H @ yd).asarray())
        assert abs(lhs.imag - rhs.imag) > 1e-6 * abs(lhs)
    return Op


@pytest.mark.parametrize("case", range(len(FFT_CASES)))
def test_fftnd_vs_numpy(case):
    dims, axes, real, dtype, norm, ifs, ffs, out_axis = FFT_CASES[case]
    _fft_case(dims, axes, real, dtype, norm, ifs, ffs,
              planner_effort=("FFTW_ESTIMATE", "FFTW_MEASURE", None)[case % 3])


@pytest.mark.parametrize("case", range(len(NFFT_CASES)))
def test_fftnd_nffts_vs_numpy(case):
    dims, axes, nffts, real, dtype, norm, ifs, ffs = NFFT_CASES[case]
    _fft_case(dims, axes, real, dtype, norm, ifs, ffs, nffts=nffts)


@pytest.mark.parametrize("n,nfft,real", [(16, None, False), (9, None, True), (6, 11, False),
                                         (13, 8, True)])
def test_fft_1d_vs_numpy(n, nfft, real):
    """MPIFFT (PyLops' FFT signature) along the split axis of a 1-D array and along the last
    axis of a 2-D one."""
    dt = np.float64 if real else np.complex128
    short = nfft is not None and nfft < n
    with pytest.warns(UserWarning, match="smaller than") if short else contextlib.nullcontext():
        Op = MPIFFT(n, nfft=nfft, real=real, norm="1/n", dtype=dt, planner_effort="FFTW_ESTIMATE")
    N = n if nfft is None else nfft
    assert Op.nfft == N and Op.axis == 0 and Op.dimsd == ((N // 2 + 1) if real else N,)
    np.testing.assert_allclose(Op.f, np.fft.rfftfreq(N) if real else np.fft.fftfreq(N))
    xg = _rand(n, not real, seed=8)
    x = pm.DistributedArray.to_dist(xg)
    want = (np.fft.rfft(xg, n=N) if real else np.fft.fft(xg, n=N)) / N
    if real:
        want[1:1 + (N - 1) // 2] *= np.sqrt(2)
    np.testing.assert_allclose((Op @ x).asarray(), want, atol=1e-12)
    y = Op @ x
    assert pm.dottest(Op, x, y.copy(), rtol=1e-10)
    # along the last axis of a 2-D array: local, as PyLops' FFT(dims, axis=-1)
    with pytest.warns(UserWarning, match="smaller than") if short else contextlib.nullcontext():
        Op2 = MPIFFT((3, n), axis=-1, nfft=nfft, real=real, dtype=dt)
    xg2 = _rand((3, n), not real, seed=9)
    ref = np.fft.rfft(xg2, n=N, axis=-1) if real else np.fft.fft(xg2, n=N, axis=-1)
    if real:
        ref[:, 1:1 + (N - 1) // 2] *= np.sqrt(2)
    np.testing.assert_allclose((Op2 @ pm.DistributedArray.to_dist(xg2.ravel())).asarray(),
                               ref.ravel(), atol=1e-12)


def test_fft_planning_and_wisdom():
    dims = (6, 4, 5)
    Op = MPIFFTND(dims, planner_effort="FFTW_PATIENT")
    w = fft_wisdom_export()
    assert "fftw_wisdom" in w and len(set(comm.allgather(w))) == 1     # the same everywhere
    fft_wisdom_import(w if rank == 0 else None)
    again = MPIFFTND(dims, planner_effort="FFTW_MEASURE")                # from the wisdom
    xg = _rand(dims, seed=10).ravel()
    x = pm.DistributedArray.to_dist(xg)
    np.testing.assert_allclose((again @ x).asarray(), (Op @ x).asarray(), atol=1e-10)
    with pytest.raises(ValueError) as e:
        MPIFFTND(dims, planner_effort="FFTW_SOMETIMES")
    _same_everywhere(e.value)
    with pytest.raises(TypeError) as e:
        MPIFFTND(dims, threads=4)
    _same_everywhere(e.value)
    if size > 1:                                                 # another text than rank 0's
        with pytest.raises(ValueError) as e:
            fft_wisdom_import(w if rank != size - 1 else w + " ")
        _same_everywhere(e.value)
        # efforts differ: agreed
        with pytest.raises(ValueError) as e:
            MPIFFTND(dims, planner_effort="FFTW_ESTIMATE" if rank == 0 else "FFTW_MEASURE")
        _same_everywhere(e.value)


def test_fftnd_inverse_and_composites():
    dims = (5, 3, 4)
    Op = MPIFFTND(dims)                        # PyLops-MPI's default axes (0, 1, 2)
    assert Op.out_axis == 0 and Op.norm.name == "NONE"
    xg = _rand(dims, seed=3).ravel()
    x = pm.DistributedArray.to_dist(xg)
    y = Op @ x
    np.testing.assert_allclose((Op / y).asarray(), xg, atol=1e-12)       # the inverse
    N = np.prod(dims)
    # composites built in the library see the same vectors as Op @ x
    np.testing.assert_allclose(((Op.H @ Op) @ x).asarray(), N * xg, atol=1e-10)
    np.testing.assert_allclose((Op.H @ y).asarray(), N * xg, atol=1e-10)
    np.testing.assert_allclose(((2.0 * Op) @ x).asarray(), 2 * y.asarray(), atol=1e-12)
    # a solver through the composite: CGLS recovers x from its spectrum
    xinv = pm.cgls(Op, y, x0=x.zeros_like(), niter=5, tol=1e-20)[0]
    np.testing.assert_allclose(xinv.asarray(), xg, atol=1e-8)


@pytest.mark.parametrize("real", [False, True])
def test_fft2d(real):
    dims = (4, 3, 5)
    Op = MPIFFT2D(dims, axes=(0, -1), real=real, norm="1/n", fftshift_after=(True, False),
                  dtype=np.float64 if real else np.complex128)
    assert not hasattr(Op, "fs")
    np.testing.assert_allclose(Op.f1, np.fft.fftshift(np.fft.fftfreq(4)))
    np.testing.assert_allclose(Op.f2, np.fft.rfftfreq(5) if real else np.fft.fftfreq(5))
    xg = _rand(dims, not real, seed=4)
    ref = _fft_ref(xg, [0, 2], real, not real, "1/n", (False, False), (True, False))
    np.testing.assert_allclose((Op @ pm.DistributedArray.to_dist(xg.ravel())).asarray(),
                               ref.ravel(), atol=1e-12)
    assert MPIFFT2D((4, 6)).axes.tolist() == [0, 1]         # PyLops-MPI's default axes


def test_fft_module_paths():
    assert pm.signalprocessing.FFTND.MPIFFTND is MPIFFTND
    assert pm.signalprocessing.FFT2D.MPIFFT2D is MPIFFT2D
    assert pm.signalprocessing.NonStatConvolve1d.MPINonStationaryConvolve1D is \
        MPINonStationaryConvolve1D
    assert pm.utils.fft_helper.fftshift_nd is fftshift_nd is pm.utils.fftshift_nd


def test_fft_errors_everywhere():
    # local argument errors: the same exception class on every rank (PyLops-MPI's messages)
    for kwargs, cls in [(dict(norm="forward"), ValueError), (dict(norm="ortho"), ValueError),
                        (dict(sampling=(1.0, 2.0)), ValueError), (dict(axes=(0, 3)), ValueError),
                        (dict(axes=(0, 0)), ValueError), (dict(dtype=np.int32), TypeError),
                        (dict(axes=(0.5, 1)), TypeError)]:
        with pytest.raises(cls) as e:
            MPIFFTND((4, 5, 6), **kwargs)
        _same_everywhere(e.value)
    with pytest.raises(ValueError) as e:
        MPIFFT2D((4, 5, 6), axes=(0, 1, 2))
    _same_everywhere(e.value)
    with pytest.raises(ValueError) as e:                     # nffts: one per axis
        MPIFFTND((4, 5, 6), nffts=(4, 5))
    _same_everywhere(e.value)
    with pytest.raises(ValueError) as e:
        MPIFFTND((4, 5, 6), nffts=0)
    _same_everywhere(e.value)
    assert MPIFFTND((8,), axes=(0,)).shape == (8, 8)         # 1-D along the split axis
    last = rank == size - 1
    # an error on the last rank only: every rank raises the same class
    for kwargs, cls in [(dict(norm="backward" if last else "none"), ValueError),
                        (dict(dtype=np.int64 if last else np.complex128), TypeError),
                        (dict(axes=(0, 0) if last else (0, 1)), ValueError)]:
        with pytest.raises(cls) as e:
            MPIFFTND((4, 5, 6), **kwargs)
        _same_everywhere(e.value)
        if size > 1 and not last:
            assert f"on rank {size - 1}" in str(e.value), str(e.value)
    with pytest.raises(ValueError) as e:
        MPIFFT2D((4, 5) if not last else (4,))
    _same_everywhere(e.value)
    if size > 1:
        # arguments that are valid on each rank but differ: the library's agreement
        for kwargs in [dict(dims=(4, 5, 6 + last)), dict(dims=(4, 5, 6), axes=(1, 0) if last else (0, 1)),
                       dict(dims=(4, 5, 6), real=last), dict(dims=(4, 5, 6), sampling=1.0 + last)]:
            with pytest.raises(ValueError) as e:
                MPIFFTND(**kwargs)
            _same_everywhere(e.value)
    # still usable afterwards
    assert MPIFFTND((4, 5), axes=(0, 1)).shape == (20, 20)


# --- fftshift_nd / ifftshift_nd --------------------------------------------------------------
@pytest.mark.parametrize("shape,axis", [((7,), 0), ((2, 5), 0), ((5, 4), 1), ((3, 4, 5), 0),
                                        ((1, 3, 2), 0)])
@pytest.mark.parametrize("partition", [pm.Partition.SCATTER, pm.Partition.BROADCAST])
def test_fftshift_nd(shape, axis, partition):
    g = _rand(shape, seed=6)
    choices = [None, axis, [a for a in range(len(shape)) if a != axis] or [0]]
    if len(shape) > 1:
        choices.append((-1, 0))
    for axes in choices:
        for fn, ref in [(fftshift_nd, np.fft.fftshift), (ifftshift_nd, np.fft.ifftshift)]:
            x = pm.DistributedArray.to_dist(g, partition=partition, axis=axis)
            ls = x.local_shapes
            out = fn(x, axes=axes)
            assert out is x and x.local_shapes == ls and x.axis == axis    # in place, same split
            np.testing.assert_array_equal(x.asarray(), ref(g, axes=axes))
    x = pm.DistributedArray.to_dist(g, axis=axis)
    np.testing.assert_array_equal(ifftshift_nd(fftshift_nd(x)).asarray(), g)


def test_fftshift_uneven_custom_split():
    g = _rand((6, 3), seed=7)
    shapes = [(0, 3)] * (size - 1) + [(6, 3)] if size > 1 else [(6, 3)]   # empty blocks first
    x = pm.DistributedArray(global_shape=(6, 3), local_shapes=shapes, dtype=g.dtype)
    x.local_array[...] = g[sum(s[0] for s in shapes[:rank]):][:shapes[rank][0]]
    fftshift_nd(x, axes=0)
    np.testing.assert_array_equal(x.asarray(), np.fft.fftshift(g, axes=0))


def test_fftshift_errors_everywhere():
    x = pm.DistributedArray((4, 5), dtype=np.complex128)
    last = rank == size - 1
    with pytest.raises(ValueError) as e:
        fftshift_nd(x, axes=("a" if last else 0,))
    _same_everywhere(e.value)
    with pytest.raises(ValueError) as e:
        fftshift_nd(x, axes=(0, -2))                      # repeated axis: the library refuses
    _same_everywhere(e.value)
    if size > 1:
        with pytest.raises(ValueError) as e:
            ifftshift_nd(x, axes=(1 if last else 0,))
        _same_everywhere(e.value)


# --- MPINonStationaryConvolve1D ----------------------------------------------------------------
def _nonstat_matrix(n, hs, ih):
    """PyLops' NonStationaryConvolve1D along one axis of length n as a dense matrix: sample i
    spreads the filter linearly interpolated between the ih positions around it."""
    nfilt, nh = hs.shape
    M = np.zeros((n, n), dtype=hs.dtype)
    for i in range(n):
        if nfilt == 1:
            h = hs[0]
        else:
            dh = ih[1] - ih[0]
            k = int(np.floor((i - ih[0]) / dh))
            if k < 0:
                h = hs[0]
            elif k >= nfilt - 1:
                h = hs[-1]
            else:
                w = (i - ih[0]) / dh - k
                h = (1 - w) * hs[k] + w * hs[k + 1]
        for t in range(nh):
            j = i + t - nh // 2
            if 0 <= j < n:
                M[j, i] += h[t]
    return M


def _along(M, x, axis):
    return np.moveaxis(np.tensordot(M, np.moveaxis(x, axis, 0), axes=(1, 0)), 0, axis)


NONSTAT_CASES = [
    # dims, axis, ih, nh, dtype
    ((13,), 0, [1, 5, 9], 3, np.float64),
    ((3,), -1, [0, 2], 5, np.float64),          # fewer samples than ranks, filters longer
    ((7, 9), -1, [2, 4, 6, 8], 3, np.complex128),
    ((10, 4), 0, [0, 3, 6, 9], 5, np.float32),
    ((5, 3, 6), 1, [1], 3, np.float64),         # one filter: stationary
    ((6, 5), 0, [2, 3], 7, np.complex64),
]


@pytest.mark.parametrize("case", range(len(NONSTAT_CASES)))
def test_nonstationary_convolve1d(case):
    dims, axis, ih, nh, dtype = NONSTAT_CASES[case]
    cplx = np.issubdtype(dtype, np.complexfloating)
    single = np.dtype(dtype) in (np.float32, np.complex64)
    hs = _rand((len(ih), nh), cplx, seed=8).astype(dtype)
    Op = MPINonStationaryConvolve1D(dims, hs, ih, axis=axis, dtype=dtype)
    assert Op.shape == (int(np.prod(dims)),) * 2 and Op.dims == tuple(dims)
    M = _nonstat_matrix(dims[axis], hs.astype(np.complex128 if cplx else np.float64), ih)
    xg = _rand(dims, cplx, seed=9).astype(dtype)
    yg = _rand(dims, cplx, seed=10).astype(dtype)
    x = pm.DistributedArray.to_dist(xg.ravel())
    y = pm.DistributedArray(global_shape=Op.shape[0], local_shapes=_rows(dims), dtype=dtype)
    y.local_array[:] = yg.ravel()[sum(s[0] for s in _rows(dims)[:rank]):][:y.local_shape[0]]
    tol = 1e-5 if single else 1e-12
    fwd = Op @ x
    np.testing.assert_allclose(fwd.asarray(), _along(M, xg.astype(M.dtype), axis).ravel(),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose((Op.H @ y).asarray(),
                               _along(M.conj().T, yg.astype(M.dtype), axis).ravel(),
                               rtol=tol, atol=tol)
    assert pm.dottest(Op, x, y, rtol=1e-4 if single else 1e-10)


def test_nonstationary_errors_everywhere():
    hs = np.ones((2, 3))
    last = rank == size - 1
    for args, kwargs in [(((8,), np.ones((2, 4)), [1, 5]), {}),          # even filter length
                         (((8,), np.ones((3, 3)), [1, 2, 4]), {}),       # irregular ih
                         (((8,), hs, [1, 8]), {}),                        # ih outside dims
                         (((8,), hs, [1, 5]), dict(dtype=np.int32)),
                         (((8,), hs if not last else np.ones((2, 2)), [1, 5]), {}),
                         (((8,), hs, [1, 5] if not last else [1, 9]), {})]:
        with pytest.raises((ValueError, TypeError)) as e:
            MPINonStationaryConvolve1D(*args, **kwargs)
        _same_everywhere(e.value)
    if size > 1:
        # valid on each rank, different filters on the last: the library's agreement
        with pytest.raises(ValueError) as e:
            MPINonStationaryConvolve1D((8,), hs * (2.0 if last else 1.0), [1, 5])
        _same_everywhere(e.value)
        with pytest.raises(ValueError) as e:
            MPINonStationaryConvolve1D((8, 3 + last), hs, [1, 5], axis=0)
        _same_everywhere(e.value)
