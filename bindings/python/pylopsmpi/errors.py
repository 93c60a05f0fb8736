"""Exceptions mapped from plm_status_t codes; the message is the library's ("on rank r: ...")."""
from ._plm import ffi, lib


class PylopsMPIError(Exception):
    """Base class: every failing library call raises a subclass of this."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class InvalidArgumentError(PylopsMPIError, ValueError):
    pass


class SizeMismatchError(PylopsMPIError, ValueError):
    pass


class DtypeMismatchError(PylopsMPIError, TypeError):
    pass


class NotSupportedError(PylopsMPIError, NotImplementedError):
    pass


class OutOfMemoryError(PylopsMPIError, MemoryError):
    pass


class NotConvergedError(PylopsMPIError):
    pass


class CommunicationError(PylopsMPIError, RuntimeError):
    """MPI, CUDA, NCCL or backend failures."""


class InternalError(PylopsMPIError, RuntimeError):
    pass


class CallbackError(PylopsMPIError, RuntimeError):
    """A user callback failed; `original` holds the Python exception on the rank where it happened."""

    def __init__(self, status, message, original=None):
        super().__init__(status, message)
        self.original = original
        if original is not None:
            self.__cause__ = original


_BY_STATUS = {
    lib.PLM_ERR_INVALID_ARG: InvalidArgumentError,
    lib.PLM_ERR_SIZE_MISMATCH: SizeMismatchError,
    lib.PLM_ERR_DTYPE_MISMATCH: DtypeMismatchError,
    lib.PLM_ERR_NOT_SUPPORTED: NotSupportedError,
    lib.PLM_ERR_OUT_OF_MEMORY: OutOfMemoryError,
    lib.PLM_ERR_NOT_CONVERGED: NotConvergedError,
    lib.PLM_ERR_MPI: CommunicationError,
    lib.PLM_ERR_CUDA: CommunicationError,
    lib.PLM_ERR_NCCL: CommunicationError,
    lib.PLM_ERR_BACKEND_UNAVAILABLE: CommunicationError,
    lib.PLM_ERR_INTERNAL: InternalError,
    lib.PLM_ERR_CALLBACK: CallbackError,
}


def check(status):
    """Raise the exception for a non-success status, with the library's last error message."""
    if status == lib.PLM_SUCCESS:
        return
    msg = lib.plm_last_error()
    text = ffi.string(msg).decode() if msg != ffi.NULL else ""
    if not text:
        text = ffi.string(lib.plm_status_string(status)).decode()
    raise _BY_STATUS.get(status, PylopsMPIError)(status, text)
