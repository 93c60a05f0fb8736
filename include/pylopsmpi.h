/**
 * @file pylopsmpi.h
 * @brief pylopsmpi: distributed arrays and linear operators over MPI (C API).
 *
 * The one header users include. It includes each object's API, one header per object under
 * pylopsmpi/, in the order a reader meets them: status and version (pylopsmpi/status.h),
 * communicator (comm.h), layout (layout.h), array (array.h), stacked array (stacked.h),
 * operators (op.h), stencils (stencil.h), signal processing (signal.h), MatrixMult (matmul.h),
 * solvers (solver.h) and proximal operators and solvers (prox.h); each is a Doxygen group.
 * All symbols are internal unless marked PLM_API.
 *
 * Conventions that hold for every function of those headers:
 * - Every function returns a plm_status_t (PLM_SUCCESS is 0), but for a few pure queries that
 *   return their value (names, version strings, sizes). On failure a message with the
 *   root cause (file:line) is available from plm_last_error() on the calling thread.
 * - Outputs come last, through pointers. On every failure, an output handle is set to NULL.
 * - "Collective on comm": every rank of the communicator must call it, with the same
 *   rank-independent arguments (shapes, axis, partition, dtype, ord, masked, conjugate...).
 *   Every such call first agrees over the whole communicator (also for masked arrays): a bad
 *   argument on one rank, an allocation that fails on one rank, or ranks passing different
 *   rank-independent arguments make every rank return the error (no hang), with the message
 *   of the lowest failing rank ("on rank r: ..."). Only an unusable handle of the object the
 *   call runs on (NULL, destroyed, an invalid MPI communicator) is detected locally: there
 *   is no communicator to agree on. Calls before MPI_Init or after MPI_Finalize return
 *   PLM_ERR_INVALID_ARG.
 * - "Not collective": a rank may call it alone.
 * - Sizes: every extent, element count and byte count the arguments lead to is checked. One
 *   that overflows 64 bits on a rank is PLM_ERR_INVALID_ARG; sizes that fit on every rank but
 *   overflow once summed over the ranks (an operator's global length from per-rank sizes,
 *   local extents, halo-grown blocks) are PLM_ERR_SIZE_MISMATCH. A collective call returns
 *   either on every rank.
 * - Buffers: every void * data buffer is followed by its size in bytes (int64_t, *_bytes),
 *   which must equal what the call reads or writes; a short buffer or one of another dtype is
 *   PLM_ERR_INVALID_ARG (on every rank for collective calls). Where a buffer is ignored on
 *   some ranks (may be NULL there), so is its size.
 * - Threads. What may run at the same time from several threads (MPI_THREAD_MULTIPLE; calls
 *   from one thread at a time need MPI_THREAD_SERIALIZED, or MPI_THREAD_FUNNELED if always the
 *   main thread):
 *   - collective calls on different communicators (each plm_comm_t is its own, also when two
 *     were made from one MPI communicator); never two collective calls on one communicator at
 *     once (MPI's own rule), so one distributed operator or array is used by one thread at a
 *     time;
 *   - operators are immutable and keep no scratch of their own (each apply or solve takes its
 *     own): one local operator may be a part of distributed operators used by several threads
 *     at once, and any not-collective call may read a handle another thread reads too;
 *   - a handle is written (destroy, get/restore_local_write, element-wise outputs, a solve's x,
 *     solver info) by one thread at a time, with no other thread using it meanwhile;
 *   - plm_last_error() is per thread.
 * - Ownership. A function whose name has `_get` lends its result (a handle, a pointer, an
 *   MPI communicator): it is borrowed, valid while the object it came from lives, and never
 *   destroyed by the caller. Every other function that writes a handle gives the caller a
 *   new reference, which the caller releases with the type's destroy function.
 * - Destroy functions take the address of a handle, accept NULL or a NULL handle, and set
 *   the handle to NULL.
 * - Integers: int64_t for every extent, element count, byte count, offset and iteration
 *   count; int for ranks and rank counts (MPI's type), numbers of dimensions and axes,
 *   lengths of handle lists and of per-rank tables, flags (0/1), enum values and small
 *   parameters (orders, powers, colors, keys, error codes). No size_t or unsigned type
 *   crosses the API.
 * - Enumerations are 32 bits wide (each ends with a *_FORCE_INT32 member that is not a
 *   value); values are stable: never renumbered, only appended. Languages without C
 *   macros find every constant they need as a function (plm_max_ndim(), plm_version(),
 *   plm_dtype_size()) or in the API description (share/pylopsmpi/pylopsmpi.api.json).
 * - Lifetime: the shared library stays loaded until the process exits (linked with
 *   -z nodelete), so the attribute it sets on MPI_COMM_SELF, which frees its MPI state at
 *   MPI_Finalize, is safe from languages that unload libraries (Python's cffi, ctypes).
 */
#ifndef PYLOPSMPI_H
#define PYLOPSMPI_H

/* Each object's API, in the order a reader meets the objects. */
#include "pylopsmpi/status.h"
#include "pylopsmpi/comm.h"
#include "pylopsmpi/layout.h"
#include "pylopsmpi/array.h"
#include "pylopsmpi/stacked.h"
#include "pylopsmpi/op.h"
#include "pylopsmpi/stencil.h"
#include "pylopsmpi/signal.h"
#include "pylopsmpi/matmul.h"
#include "pylopsmpi/solver.h"
#include "pylopsmpi/prox.h"

#endif /* PYLOPSMPI_H */
