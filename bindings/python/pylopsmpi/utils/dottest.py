"""utils.dottest: the dot test of PyLops-MPI."""
import numpy as np

__all__ = ["dottest"]


def dottest(Op, u, v, nr=None, nc=None, rtol=1e-6, atol=1e-21, raiseerror=True, verb=False):
    """Check <Op u, v> == <u, Op^H v> on the gathered vectors; True when it holds. For an
    operator with ``clinear`` False (linear over the reals only) the real parts are compared
    (PyLops' dottest)."""
    if nr is not None and nr != Op.shape[0]:
        raise AssertionError("Provided nr does not match operator shape")
    if nc is not None and nc != Op.shape[1]:
        raise AssertionError("Provided nc does not match operator shape")
    y = Op.matvec(u)
    x = Op.rmatvec(v)
    yy = np.vdot(y.asarray(), v.asarray())
    xx = np.vdot(u.asarray(), x.asarray())
    if not getattr(Op, "clinear", True):
        # linear over the reals only (a real-input FFT): complex vectors as vectors of real
        # pairs, as PyLops' dottest does
        yy, xx = yy.real, xx.real
    passed = bool(np.isclose(xx, yy, rtol, atol))
    if not passed and raiseerror:
        raise AssertionError(f"Dot test failed, v^H(Opu)={yy} - u^H(Op^Hv)={xx}")
    if verb:
        print(f"Dot test {'passed' if passed else 'failed'}, v^H(Opu)={yy} - u^H(Op^Hv)={xx}")
    return passed
