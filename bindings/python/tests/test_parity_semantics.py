"""PyLops-MPI semantics where this package used to differ, against serial NumPy references
written here: masked BROADCAST reductions per group, and derivatives that follow PyLops' order
of operations (bit-equal to PyLops' formulas evaluated in NumPy)."""
import numpy as np
import pytest
from mpi4py import MPI

import pylopsmpi as pm

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


def _split(n, P, r):
    return n // P + (1 if r < n % P else 0)


# --- masked BROADCAST reductions ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_masked_broadcast_dot_and_norm_per_group(dtype):
    """PyLops-MPI's dot of a masked BROADCAST array: to_dist (the default split over every rank),
    then a sum over the caller's mask group; the SCATTER array with the same mask gives the
    same. The norm follows the same rule here (norm^2 = vdot)."""
    mask = [r % 2 for r in range(size)]
    n = 4 if size <= 4 else size
    ones = pm.DistributedArray.to_dist(np.ones(n), partition=pm.Partition.BROADCAST, mask=mask)
    mine = sum(_split(n, size, r) for r in range(size) if mask[r] == mask[rank])
    assert ones.dot(ones)[0] == mine          # ones(4), mask [0, 1], 2 ranks: 2.0 per group
    rng = np.random.default_rng(4)
    g = rng.standard_normal((7, 3))
    if np.issubdtype(dtype, np.complexfloating):
        g = g + 1j * rng.standard_normal((7, 3))
    h = np.cos(g)
    rows = [r for r in range(size) if mask[r] == mask[rank]]
    start = np.cumsum([0] + [_split(7, size, r) for r in range(size)])
    sel = np.concatenate([np.arange(start[r], start[r + 1]) for r in rows])
    for part in (pm.Partition.BROADCAST, pm.Partition.UNSAFE_BROADCAST, pm.Partition.SCATTER):
        x = pm.DistributedArray.to_dist(g, partition=part, mask=mask)
        y = pm.DistributedArray.to_dist(h, partition=part, mask=mask)
        np.testing.assert_allclose(x.dot(y)[0], np.dot(g[sel].ravel(), h[sel].ravel()), rtol=1e-13)
        np.testing.assert_allclose(x.dot(y, vdot=True)[0], np.vdot(g[sel], h[sel]), rtol=1e-13)
        for ord in (None, 1, np.inf, 3):
            np.testing.assert_allclose(x.norm(ord)[0], np.linalg.norm(g[sel].ravel(), ord), rtol=1e-13)


# --- derivatives in PyLops' order of operations ---------------------------------------------------
# NumPy evaluations of PyLops' derivative expressions (pylops.FirstDerivative / SecondDerivative,
# which PyLops-MPI's operators evaluate alike): along the last axis of a moved copy, y built from
# slices in PyLops' statement order, the sampling divided at the end. The library's results must
# be these bit for bit (np.array_equal), at every rank count and split.
def _ref_first(x, axis, s, kind, edge, order, adjoint):
    v = np.moveaxis(x, axis, -1)
    y = np.zeros_like(v)
    if kind == "forward" and not adjoint:
        y[..., :-1] = (v[..., 1:] - v[..., :-1]) / s
        return np.moveaxis(y, -1, axis)
    if kind == "backward" and not adjoint:
        y[..., 1:] = (v[..., 1:] - v[..., :-1]) / s
        return np.moveaxis(y, -1, axis)
    if kind == "forward":
        y[..., :-1] += -v[..., :-1]
        y[..., 1:] += v[..., :-1]
    elif kind == "backward":
        y[..., :-1] += -v[..., 1:]
        y[..., 1:] += v[..., 1:]
    elif order == 3 and not adjoint:
        y[..., 1:-1] = 0.5 * (v[..., 2:] - v[..., :-2])
        if edge:
            y[..., 0] = v[..., 1] - v[..., 0]
            y[..., -1] = v[..., -1] - v[..., -2]
    elif order == 3:
        y[..., :-2] += -0.5 * v[..., 1:-1]
        y[..., 2:] += 0.5 * v[..., 1:-1]
        if edge:
            y[..., 0] += -v[..., 0]
            y[..., 1] += v[..., 0]
            y[..., -2] += -v[..., -1]
            y[..., -1] += v[..., -1]
    elif not adjoint:
        y[..., 2:-2] = (v[..., :-4] / 12.0 - 2 * v[..., 1:-3] / 3.0 + 2 * v[..., 3:-1] / 3.0
                        - v[..., 4:] / 12.0)
        if edge:
            y[..., 0] = v[..., 1] - v[..., 0]
            y[..., 1] = 0.5 * (v[..., 2] - v[..., 0])
            y[..., -2] = 0.5 * (v[..., -1] - v[..., -3])
            y[..., -1] = v[..., -1] - v[..., -2]
    else:
        y[..., :-4] += v[..., 2:-2] / 12.0
        y[..., 1:-3] += -2.0 * v[..., 2:-2] / 3.0
        y[..., 3:-1] += 2.0 * v[..., 2:-2] / 3.0
        y[..., 4:] += -v[..., 2:-2] / 12.0
        if edge:
            y[..., 0] += -(v[..., 0] + 0.5 * v[..., 1])
            y[..., 1] += v[..., 0]
            y[..., 2] += 0.5 * v[..., 1]
            y[..., -3] += -0.5 * v[..., -2]
            y[..., -2] += -v[..., -1]
            y[..., -1] += 0.5 * v[..., -2] + v[..., -1]
    y /= s
    return np.moveaxis(y, -1, axis)


def _ref_second(x, axis, s, kind, edge, adjoint):
    v = np.moveaxis(x, axis, -1)
    y = np.zeros_like(v)
    if not adjoint:
        core = v[..., 2:] - 2 * v[..., 1:-1] + v[..., :-2]
        if kind == "forward":
            y[..., :-2] = core
        elif kind == "backward":
            y[..., 2:] = core
        else:
            y[..., 1:-1] = core
            if edge:
                y[..., 0] = v[..., 0] - 2 * v[..., 1] + v[..., 2]
                y[..., -1] = v[..., -3] - 2 * v[..., -2] + v[..., -1]
    else:
        src = {"forward": v[..., :-2], "backward": v[..., 2:], "centered": v[..., 1:-1]}[kind]
        y[..., :-2] += src
        y[..., 1:-1] += -2 * src
        y[..., 2:] += src
        if kind == "centered" and edge:
            y[..., 0] += v[..., 0]
            y[..., 1] += -2 * v[..., 0]
            y[..., 2] += v[..., 0]
            y[..., -3] += v[..., -1]
            y[..., -2] += -2 * v[..., -1]
            y[..., -1] += v[..., -1]
    y /= s ** 2
    return np.moveaxis(y, -1, axis)


def _model(dims, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(dims)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(dims)
    return x.astype(dtype)


def _on_rows(op, g):
    """A DistributedArray on op's model split (whole rows) holding g."""
    n0 = g.shape[0]
    rows = [_split(n0, size, r) for r in range(size)]
    shapes = [(r * int(np.prod(g.shape[1:])),) for r in rows]
    return pm.DistributedArray.to_dist(g.ravel(), local_shapes=shapes)


def _bitwise(got, want, what):
    assert got.dtype == want.dtype, what
    bad = np.flatnonzero(got.ravel() != want.ravel())
    assert bad.size == 0, f"{what}: {bad.size} of {got.size} not bit-equal, first {bad[:3]}: " \
        f"{got.ravel()[bad[:3]]} vs {want.ravel()[bad[:3]]}"


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
@pytest.mark.parametrize("dims", [(37,), (13, 7), (9, 5, 6)])
def test_derivatives_bitwise_pylops_order(dtype, dims):
    x = _model(dims, dtype, 7)
    z = _model(dims, dtype, 8)
    for kind, order, edge in (("forward", 3, False), ("backward", 3, False), ("centered", 3, False),
                              ("centered", 3, True), ("centered", 5, False), ("centered", 5, True)):
        for s in (1.0, 0.4):
            D = pm.MPIFirstDerivative(dims, sampling=s, kind=kind, edge=edge, order=order, dtype=dtype)
            what = f"FirstDerivative {kind} {order} edge {edge} sampling {s} {np.dtype(dtype)} {dims}"
            _bitwise((D @ _on_rows(D, x)).asarray().reshape(dims),
                     _ref_first(x, 0, s, kind, edge, order, False), what)
            _bitwise((D.H @ _on_rows(D, z)).asarray().reshape(dims),
                     _ref_first(z, 0, s, kind, edge, order, True), what + " adjoint")
    for kind, edge in (("forward", False), ("backward", False), ("centered", False), ("centered", True)):
        D = pm.MPISecondDerivative(dims, sampling=0.7, kind=kind, edge=edge, dtype=dtype)
        what = f"SecondDerivative {kind} edge {edge} {np.dtype(dtype)} {dims}"
        _bitwise((D @ _on_rows(D, x)).asarray().reshape(dims), _ref_second(x, 0, 0.7, kind, edge, False), what)
        _bitwise((D.H @ _on_rows(D, z)).asarray().reshape(dims), _ref_second(z, 0, 0.7, kind, edge, True),
                 what + " adjoint")


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_laplacian_and_gradient_bitwise(dtype):
    dims = (11, 6, 7)
    x = _model(dims, dtype, 9)
    # PyLops-MPI: weights[0] * SD(axes[0]) + weights[1] * SD(axes[1]) + ..., in the axes' order
    for axes, weights, sampling in (((0, 1, 2), (1, 1, 1), (1, 1, 1)),
                                    ((-1, -2, -3), (0.7, 1.3, 2.0), (0.4, 1.5, 0.9)),
                                    ((1, 0), (2.0, -0.5), (0.3, 1.0))):
        L = pm.MPILaplacian(dims, axes=axes, weights=weights, sampling=sampling, dtype=dtype)
        for adjoint in (False, True):
            want = None
            for ax, w, s in zip(axes, weights, sampling):
                term = w * _ref_second(x, ax % 3, s, "centered", False, adjoint)
                want = term if want is None else want + term
            got = ((L.H if adjoint else L) @ _on_rows(L, x)).asarray().reshape(dims)
            _bitwise(got, want, f"Laplacian axes {axes} weights {weights} adjoint {adjoint}")
    # the gradient: one first derivative per axis; its adjoint sums them in axis order
    G = pm.MPIGradient(dims, sampling=(0.5, 1.0, 2.5), kind="centered", edge=True, dtype=dtype)
    g = G @ _on_rows(G, x)
    for a, s in enumerate((0.5, 1.0, 2.5)):
        _bitwise(g[a].asarray().reshape(dims), _ref_first(x, a, s, "centered", True, 3, False), f"Gradient {a}")
    zs = [_model(dims, dtype, 20 + a) for a in range(3)]
    h = G.H @ pm.StackedDistributedArray([_on_rows(G, z) for z in zs])
    want = _ref_first(zs[0], 0, 0.5, "centered", True, 3, True)
    for a, s in ((1, 1.0), (2, 2.5)):
        want = want + _ref_first(zs[a], a, s, "centered", True, 3, True)
    _bitwise(h.asarray().reshape(dims), want, "Gradient adjoint")
