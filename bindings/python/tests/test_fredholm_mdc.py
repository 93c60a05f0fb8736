"""MPIFredholm1 and MPIMDC against serial NumPy references built here: Fredholm1 as per-slice
matrix products of the gathered G, MDC from PyLops' definition (real FFT along time with norm
"ortho" and the sqrt 2 of the interior bins, the first nfreq bins, the frequency-wise product with
G times dr dt sqrt(nt), the inverse); forward, adjoint and dot test, uneven splits and ranks with
no slices or frequencies; bad arguments on one rank end in the same exception on every rank."""
import gc

import numpy as np
import pytest
from mpi4py import MPI

import pylopsmpi as pm
from pylopsmpi.signalprocessing import MPIFredholm1
from pylopsmpi.waveeqprocessing import MPIMDC

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
B = pm.Partition.BROADCAST


def _rand(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(shape)
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        g = g + 1j * rng.standard_normal(shape)
    return g.astype(dtype)


def _counts(total, split):
    """Slices (or frequencies) per rank: "even" (np.array_split, uneven when it must), "last"
    (all on the last rank), "growing" (0, 1, 2, ... from rank 0, the rest on the last)."""
    if split == "even":
        return [len(a) for a in np.array_split(np.arange(total), size)]
    if split == "last":
        return [0] * (size - 1) + [total]
    counts, left = [], total
    for r in range(size):
        counts.append(left if r == size - 1 else min(r, left))
        left -= counts[-1]
    return counts


def _mine(Gall, counts):
    start = sum(counts[:rank])
    return Gall[start:start + counts[rank]]


def _same_everywhere(exc):
    kinds = comm.allgather(type(exc).__name__)
    assert len(set(kinds)) == 1, kinds


def _tol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def _check(Op, fwd, adj, xg, yg, rtol):
    """Op x and Op^H y (BROADCAST) against fwd(xg) and adj(yg), then the dot test."""
    x = pm.DistributedArray.to_dist(xg, partition=B)
    y = pm.DistributedArray.to_dist(yg, partition=B)
    fx, ay = Op @ x, Op.H @ y
    assert fx.partition == B and ay.partition == B
    np.testing.assert_allclose(fx.asarray().ravel(), fwd(xg), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(ay.asarray().ravel(), adj(yg), rtol=rtol, atol=rtol)
    # and what this rank holds itself (BROADCAST: every rank the whole vector)
    np.testing.assert_allclose(fx.local_array.ravel(), fwd(xg), rtol=rtol, atol=rtol)
    assert pm.dottest(Op, x, y, rtol=10 * rtol)


# --- Fredholm1 ------------------------------------------------------------------------------------
def _fredholm_ref(Gall, nz):
    T, nx, ny = Gall.shape
    fwd = lambda x: np.matmul(Gall, x.reshape(T, ny, nz)).ravel()
    adj = lambda y: np.matmul(Gall.conj().transpose(0, 2, 1), y.reshape(T, nx, nz)).ravel()
    return fwd, adj


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("split", ["even", "last", "growing"])
@pytest.mark.parametrize("nz", [1, 3])
@pytest.mark.parametrize("saveGt,usematmul", [(False, True), (True, False)])
def test_fredholm1(dtype, split, nz, saveGt, usematmul):
    T, nx, ny = 2 * size + 1, 3, 2
    Gall = _rand((T, nx, ny), dtype, 7)
    counts = _counts(T, split)
    Op = MPIFredholm1(_mine(Gall, counts), nz=nz, saveGt=saveGt, usematmul=usematmul, dtype=dtype)
    assert Op.shape == (T * nx * nz, T * ny * nz) and Op.dtype == np.dtype(dtype)
    assert Op.dims == (T, ny, nz) and Op.dimsd == (T, nx, nz)
    assert Op.nsls == counts and list(Op.islstart) == list(np.cumsum([0] + counts[:-1]))
    fwd, adj = _fredholm_ref(Gall.astype(np.complex128), nz)
    _check(Op, fwd, adj, _rand(T * ny * nz, dtype, 11), _rand(T * nx * nz, dtype, 12), _tol(dtype))


def test_fredholm1_one_slice_per_rank_and_default_dtype():
    # one slice per rank (PyLops-MPI refuses it; the library takes it) and a complex G with the
    # default dtype float64: the operator is real and multiplies by the real part of G
    Gall = _rand((size, 2, 3), np.complex128, 3)
    Op = MPIFredholm1(Gall[rank:rank + 1], nz=2)
    assert Op.dtype == np.float64
    fwd, adj = _fredholm_ref(Gall.real, 2)
    _check(Op, fwd, adj, _rand(size * 6, np.float64, 1), _rand(size * 4, np.float64, 2), 1e-10)


def test_fredholm1_keeps_its_own_copy_of_g():
    # G non-contiguous, then overwritten and freed: the operator has its copy
    T = size + 2
    Gall = _rand((T, 3, 4), np.float64, 5)
    counts = _counts(T, "even")
    G = np.ascontiguousarray(_mine(Gall, counts).transpose(0, 2, 1)).transpose(0, 2, 1)
    Op = MPIFredholm1(G, nz=2)
    G[...] = np.nan
    del G
    gc.collect()
    fwd, adj = _fredholm_ref(Gall, 2)
    _check(Op, fwd, adj, _rand(T * 8, np.float64, 1), _rand(T * 6, np.float64, 2), 1e-10)


def test_fredholm1_sub_communicator():
    # on a communicator that is not COMM_WORLD: even and odd ranks, each their own operator
    # (the package keeps the communicator until exit: no Free here)
    sub = comm.Split(rank % 2, rank)
    T = 3
    Gall = _rand((T, 2, 2), np.float64, 9 + rank % 2)
    mine = np.array_split(Gall, sub.size)[sub.rank]
    Op = MPIFredholm1(mine, nz=1, base_comm=sub)
    xg = _rand(T * 2, np.float64, 4)
    x = pm.DistributedArray.to_dist(xg, base_comm=sub, partition=B)
    np.testing.assert_allclose((Op @ x).asarray(), _fredholm_ref(Gall, 1)[0](xg), rtol=1e-12)


def test_fredholm1_bad_arguments_on_one_rank():
    last = rank == size - 1
    G = _rand((2, 3, 2), np.float64, rank)
    # G of the wrong dimension count
    with pytest.raises(ValueError) as e:
        MPIFredholm1(G[0] if last else G, nz=2)
    _same_everywhere(e.value)
    # a dtype the library has not
    with pytest.raises(TypeError) as e:
        MPIFredholm1(G, dtype=np.int32 if last else np.float64)
    _same_everywhere(e.value)
    # nz not an integer
    with pytest.raises(TypeError) as e:
        MPIFredholm1(G, nz=1.5 if last else 1)
    _same_everywhere(e.value)
    # negative nz: the library refuses it
    with pytest.raises(pm.InvalidArgumentError) as e:
        MPIFredholm1(G, nz=-1 if last else 1)
    _same_everywhere(e.value)
    if size > 1:
        # nz, or the slices' rows, differing on one rank: the library's agreement finds them
        with pytest.raises(pm.PylopsMPIError) as e:
            MPIFredholm1(G, nz=3 if last else 2)
        _same_everywhere(e.value)
        with pytest.raises(pm.PylopsMPIError) as e:
            MPIFredholm1(_rand((2, 4, 2), np.float64, 0) if last else G, nz=2)
        _same_everywhere(e.value)
    # and the communicator still works afterwards
    assert comm.allreduce(1) == size


# --- MDC ------------------------------------------------------------------------------------------
def _mdc_ref(Gall, nt, nv, nfreq, dt, dr, twosided, conj, prescaled):
    """y = MDC x from PyLops' definition; x (nt, nr, nv) and y (nt, ns, nv) flattened."""
    nfk, ns, nr = Gall.shape
    nfft = nt // 2 + 1
    assert nfk == min(nfreq, nfft)
    G = Gall.conj() if conj else Gall
    if not prescaled:
        G = G * dr * dt * np.sqrt(nt)
    inner = slice(1, 1 + (nt - 1) // 2)     # bins without the zero and Nyquist ones

    def fwd(x):
        x = x.reshape(nt, nr, nv)
        if twosided:
            x = np.fft.ifftshift(x, axes=0)
        X = np.fft.rfft(x, axis=0, norm="ortho")
        X[inner] *= np.sqrt(2)
        Y = np.zeros((nfft, ns, nv), dtype=np.complex128)
        Y[:nfk] = np.matmul(G, X[:nfk])
        Y[inner] /= np.sqrt(2)
        return np.fft.irfft(Y, n=nt, axis=0, norm="ortho").ravel()
    return fwd


def _dense(fwd, n):
    return np.stack([fwd(e) for e in np.eye(n)], axis=1)


def _mdc(*args, **kwargs):
    """MPIMDC, or a skip on every rank in a build without FFTW (the error is agreed)."""
    try:
        return MPIMDC(*args, **kwargs)
    except pm.NotSupportedError as e:
        pytest.skip(f"MDC not supported in this build: {e}")


MDC_CASES = [  # nt, nv, nfreq, ns, nr, dt, dr, twosided, conj, prescaled, saveGt
    (9, 2, 5, 3, 2, 0.004, 10.0, True, False, False, True),     # every bin
    (9, 1, 3, 2, 3, 0.5, 2.0, True, True, False, False),        # truncated, conj
    (8, 2, 5, 2, 2, 1.0, 1.0, False, False, True, True),        # even nt, Nyquist bin, prescaled
    (8, 3, 40, 1, 2, 0.25, 1.5, False, True, False, False),     # nfreq clipped to 5
    (11, 2, 4, 3, 3, 0.1, 3.0, False, False, False, True),      # odd nt, one-sided, truncated
]


@pytest.mark.parametrize("case", MDC_CASES)
@pytest.mark.parametrize("split", ["even", "last", "growing"])
@pytest.mark.parametrize("gdtype", [np.complex128, np.complex64])
def test_mdc(case, split, gdtype):
    nt, nv, nfreq, ns, nr, dt, dr, twosided, conj, prescaled, saveGt = case
    nfk = min(nfreq, nt // 2 + 1)
    Gall = _rand((nfk, ns, nr), gdtype, 21)
    Op = _mdc(_mine(Gall, _counts(nfk, split)), nt, nv, nfreq, dt=dt, dr=dr, twosided=twosided,
              saveGt=saveGt, conj=conj, prescaled=prescaled)
    rdtype = np.float32 if gdtype == np.complex64 else np.float64
    assert Op.shape == (nt * ns * nv, nt * nr * nv) and Op.dtype == rdtype
    D = _dense(_mdc_ref(Gall.astype(np.complex128), nt, nv, nfreq, dt, dr, twosided, conj,
                        prescaled), nt * nr * nv)
    assert np.abs(D).max() > 0
    _check(Op, lambda x: D @ x, lambda y: D.T @ y, _rand(nt * nr * nv, rdtype, 31),
           _rand(nt * ns * nv, rdtype, 32), _tol(rdtype) * max(1.0, np.abs(D).max()))


def test_mdc_real_g_and_engines():
    # a real G is a complex one with zero imaginary part; PyLops' engine names are all accepted
    nt, nv, ns, nr = 7, 1, 2, 2
    nfk = nt // 2 + 1
    Gall = _rand((nfk, ns, nr), np.float64, 3)
    mine = _mine(Gall, _counts(nfk, "even"))
    D = _dense(_mdc_ref(Gall.astype(np.complex128), nt, nv, nfk, 1.0, 1.0, True, False, False),
               nt * nr * nv)
    for engine in ("numpy", "fftw", "scipy", "mkl_fft"):
        Op = _mdc(mine, nt, nv, nfk, fftengine=engine, usematmul=True)
        _check(Op, lambda x: D @ x, lambda y: D.T @ y, _rand(nt * nr * nv, np.float64, 1),
               _rand(nt * ns * nv, np.float64, 2), 1e-10)


def test_mdc_bad_arguments_on_one_rank():
    last = rank == size - 1
    nt, nv, nfreq, ns, nr = 9, 2, 5, 2, 3
    Gall = _rand((nfreq, ns, nr), np.complex128, 4)
    G = _mine(Gall, _counts(nfreq, "even"))
    _mdc(G, nt, nv, nfreq)          # skips here in a build without FFTW
    # an even nt with twosided
    with pytest.raises(ValueError) as e:
        MPIMDC(G, nt - 1 if last else nt, nv, nfreq)
    _same_everywhere(e.value)
    # G of the wrong dimension count
    with pytest.raises(ValueError) as e:
        MPIMDC(G[0] if last else G, nt, nv, nfreq)
    _same_everywhere(e.value)
    # an engine PyLops has not
    with pytest.raises(NotImplementedError) as e:
        MPIMDC(G, nt, nv, nfreq, fftengine="cupy" if last else "numpy")
    _same_everywhere(e.value)
    # one frequency too many on one rank: they no longer sum to nfreq
    extra = Gall[:1] if last else Gall[:0]
    with pytest.raises(pm.InvalidArgumentError) as e:
        MPIMDC(np.concatenate([G, extra]), nt, nv, nfreq)
    _same_everywhere(e.value)
    if size > 1:
        # dt, or nv, differing on one rank: the library's agreement finds them
        with pytest.raises(pm.PylopsMPIError) as e:
            MPIMDC(G, nt, nv, nfreq, dt=2.0 if last else 1.0)
        _same_everywhere(e.value)
        with pytest.raises(pm.PylopsMPIError) as e:
            MPIMDC(G, nt, nv + 1 if last else nv, nfreq)
        _same_everywhere(e.value)
    assert comm.allreduce(1) == size


def test_module_paths():
    # PyLops-MPI's module paths
    import pylopsmpi.signalprocessing.Fredholm1 as F
    import pylopsmpi.waveeqprocessing.MDC as M
    assert F.MPIFredholm1 is pm.signalprocessing.MPIFredholm1
    assert M.MPIMDC is pm.waveeqprocessing.MPIMDC
