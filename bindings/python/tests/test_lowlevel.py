"""Low-level layer: generated bindings load, communicators cross by py2f, errors map to exceptions."""
import pytest
from mpi4py import MPI

import pylopsmpi
from pylopsmpi import ffi, lib


def test_version_matches_header():
    assert pylopsmpi.version() == (lib.PLM_VERSION_MAJOR, lib.PLM_VERSION_MINOR, lib.PLM_VERSION_PATCH)


def test_comm_from_mpi4py():
    comm = MPI.COMM_WORLD
    h = ffi.new("plm_comm_t *")
    pylopsmpi.check(lib.plm_comm_create_f(comm.py2f(), ffi.NULL, h))
    r, s = ffi.new("int *"), ffi.new("int *")
    pylopsmpi.check(lib.plm_comm_rank(h[0], r))
    pylopsmpi.check(lib.plm_comm_size(h[0], s))
    assert (r[0], s[0]) == (comm.rank, comm.size)
    pylopsmpi.check(lib.plm_comm_destroy(h))
    assert h[0] == ffi.NULL


def test_null_handle_raises_value_error():
    with pytest.raises(ValueError) as e:
        pylopsmpi.check(lib.plm_comm_rank(ffi.NULL, ffi.new("int *")))
    assert isinstance(e.value, pylopsmpi.InvalidArgumentError)
    assert str(e.value)
