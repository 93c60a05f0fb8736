/**
 * @file pylopsmpi.h
 * @brief pylopsmpi: distributed arrays and linear operators over MPI (C API).
 *
 * All symbols are internal unless marked PLM_API.
 *
 * Conventions that hold for every function below:
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

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>

#include "pylopsmpi_version.h"

/** @def PLM_API
 *  Marks a function exported by the shared library (dllexport/dllimport on Windows, default
 *  visibility elsewhere). */
#if defined(_WIN32)
#  if defined(PLM_BUILDING_LIBRARY)
#    define PLM_API __declspec(dllexport)
#  else
#    define PLM_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) || defined(__clang__)
#  define PLM_API __attribute__((visibility("default")))
#else
#  define PLM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Status and errors                                                                          */
/* ------------------------------------------------------------------------------------------ */

/** Result of every call. Values are explicit and append-only. */
typedef enum plm_status {
    PLM_SUCCESS = 0,                 /**< the call succeeded */
    PLM_ERR_INVALID_ARG = 1,         /**< a NULL pointer, an out-of-range value, a bad handle */
    PLM_ERR_OUT_OF_MEMORY = 2,       /**< an allocation failed */
    PLM_ERR_NOT_SUPPORTED = 3,       /**< valid request that this build or operation cannot do */
    PLM_ERR_BACKEND_UNAVAILABLE = 4, /**< the memory space or backend is not in this build/machine */
    PLM_ERR_MPI = 5,                 /**< an MPI call failed; the message holds MPI_Error_string */
    PLM_ERR_CUDA = 6,                /**< a CUDA call failed */
    PLM_ERR_NCCL = 7,                /**< an NCCL call failed */
    PLM_ERR_SIZE_MISMATCH = 8,       /**< shapes, local shapes, partitions, masks or lengths differ */
    PLM_ERR_NOT_CONVERGED = 9,       /**< a solver stopped without meeting its tolerance */
    PLM_ERR_INTERNAL = 10,           /**< an internal error of the library */
    PLM_ERR_DTYPE_MISMATCH = 11,     /**< operands have dtypes that cannot be combined */
    PLM_ERR_CALLBACK = 12,           /**< a user callback returned non-zero */
    PLM_STATUS_FORCE_INT32 = 0x7fffffff /**< not a status: keeps the enum 32 bits wide */
} plm_status_t;

/**
 * Static English name of a status ("PLM_ERR_MPI: MPI call failed").
 * @param[in] status any value
 * @returns the static string; never NULL
 * \notcollective
 */
PLM_API const char *plm_status_string(plm_status_t status);

/**
 * Message of the last failed call on this thread: the root cause, as written by the first
 * check that failed inside that call, with file:line. Empty string if no call failed since
 * plm_clear_last_error(). The buffer is thread-local and owned by the library; it stays
 * valid until the next failing call on this thread.
 * @returns the message; never NULL
 * \notcollective
 */
PLM_API const char *plm_last_error(void);

/**
 * plm_last_error() copied into a caller's buffer, for languages that cannot read a C string
 * the library owns.
 * @param[out] buf    NULL (with size 0) to ask the length only, or size bytes of host memory
 *                    that receive the message, NUL-terminated and truncated to fit
 *                    \mem{host} \len{size}
 * @param[in]  size   bytes at buf (0 when buf is NULL)
 * @param[out] length NULL, or the message's full length in bytes, without the NUL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_last_error_copy(char *buf, int64_t size, int64_t *length);

/** Forget the recorded error of this thread. \notcollective */
PLM_API void plm_clear_last_error(void);

/* ------------------------------------------------------------------------------------------ */
/* Version                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/**
 * Run-time version numbers of the library (not of the header).
 * @param[out] major major version; may be NULL
 * @param[out] minor minor version; may be NULL
 * @param[out] patch patch version; may be NULL
 * @returns PLM_SUCCESS
 * \notcollective
 */
PLM_API plm_status_t plm_version(int *major, int *minor, int *patch);

/** Static version string of the library, "major.minor.patch".
 *  @returns the static string; never NULL
 *  \notcollective */
PLM_API const char *plm_version_string(void);

/** Static commit hash the library was built from, or "unknown".
 *  @returns the static string; never NULL
 *  \notcollective */
PLM_API const char *plm_git_hash(void);

/**
 * Check that a header (or a binding generated from the API description) of version
 * major.minor can use this library. While in 0.x every minor may break the ABI, so both must
 * match; from 1.0 on, only the major.
 * @param[in] major major version of the header or binding
 * @param[in] minor minor version of the header or binding
 * @returns PLM_SUCCESS, or PLM_ERR_NOT_SUPPORTED with a message
 * \notcollective
 */
PLM_API plm_status_t plm_check_version(int major, int minor);

/** plm_check_version() with the version of the header being compiled (a C convenience;
 *  bindings call plm_check_version() with the version their API description records).
 *  @returns as plm_check_version()
 *  \notcollective */
static inline plm_status_t plm_check_header_version(void)
{
    return plm_check_version(PLM_VERSION_MAJOR, PLM_VERSION_MINOR);
}

/* ------------------------------------------------------------------------------------------ */
/* Enumerations                                                                               */
/* ------------------------------------------------------------------------------------------ */

/** Element types of arrays. */
typedef enum plm_dtype {
    PLM_FLOAT32 = 0,    /**< float (32-bit IEEE 754) */
    PLM_FLOAT64 = 1,    /**< double (64-bit IEEE 754) */
    PLM_COMPLEX64 = 2,  /**< two float32, real then imaginary (C99 float _Complex layout) */
    PLM_COMPLEX128 = 3, /**< two float64, real then imaginary (C99 double _Complex layout) */
    PLM_DTYPE_FORCE_INT32 = 0x7fffffff /**< not a dtype: keeps the enum 32 bits wide */
} plm_dtype_t;

/** Where an array's local data lives. */
typedef enum plm_memory {
    PLM_MEMORY_HOST = 0,   /**< host memory */
    PLM_MEMORY_DEVICE = 1, /**< CUDA device memory; PLM_ERR_BACKEND_UNAVAILABLE in host-only builds and
                               where no CUDA device is visible (plm_memory_available()) */
    PLM_MEMORY_FORCE_INT32 = 0x7fffffff /**< not a memory space: keeps the enum 32 bits wide */
} plm_memory_t;

/** How an array is laid out over the ranks of its communicator. */
typedef enum plm_partition {
    PLM_PARTITION_SCATTER = 0,         /**< each rank owns a block along the distributed axis */
    PLM_PARTITION_BROADCAST = 1,       /**< every rank holds all of it; writes follow rank 0 */
    PLM_PARTITION_UNSAFE_BROADCAST = 2, /**< every rank holds all of it; no consistency traffic */
    PLM_PARTITION_FORCE_INT32 = 0x7fffffff /**< not a partition: keeps the enum 32 bits wide */
} plm_partition_t;

/** Communication backends. The constants exist in every build; see plm_backend_available(). */
typedef enum plm_backend {
    PLM_BACKEND_AUTO = 0,           /**< let the policy choose per call (configuration only) */
    PLM_BACKEND_MPI_HOST = 1,       /**< buffered MPI on host memory */
    PLM_BACKEND_MPI_CUDA_AWARE = 2, /**< MPI given device pointers */
    PLM_BACKEND_MPI_STAGED = 3,     /**< device data copied through pinned host buffers */
    PLM_BACKEND_NCCL = 4,           /**< NCCL communicator attached to the plm_comm_t */
    PLM_BACKEND_FORCE_INT32 = 0x7fffffff /**< not a backend: keeps the enum 32 bits wide */
} plm_backend_t;

/** Who decided whether MPI is CUDA-aware (plm_comm_get_cuda_aware()). */
typedef enum plm_cuda_aware_source {
    PLM_CUDA_AWARE_FROM_CONFIG = 0,  /**< plm_comm_config_set_cuda_aware() said 0 or 1 */
    PLM_CUDA_AWARE_FROM_ENV = 1,     /**< PYLOPS_MPI_CUDA_AWARE was 0 or 1 */
    PLM_CUDA_AWARE_FROM_VENDOR = 2,  /**< the MPI library's own query (MPIX_Query_cuda_support...) */
    PLM_CUDA_AWARE_FROM_DEFAULT = 3, /**< nothing said: assumed not CUDA-aware */
    PLM_CUDA_AWARE_FROM_AGREEMENT = 4, /**< ranks decided differently; all took "not CUDA-aware" */
    PLM_CUDA_AWARE_FORCE_INT32 = 0x7fffffff /**< not a source: keeps the enum 32 bits wide */
} plm_cuda_aware_source_t;

/**
 * Is a backend compiled in and usable on this machine? PLM_BACKEND_MPI_HOST is always
 * available; the device backends need a CUDA build (NCCL: an NCCL build) and a visible CUDA
 * device. plm_backend_compiled() says what is compiled in.
 * @param[in]  backend a plm_backend_t other than PLM_BACKEND_AUTO
 * @param[out] yes     1 if available, else 0
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_backend_available(plm_backend_t backend, int *yes);

/**
 * Can arrays live in this memory space in this process? PLM_MEMORY_HOST: always;
 * PLM_MEMORY_DEVICE: a CUDA build and at least one visible CUDA device.
 * @param[in]  memory a plm_memory_t
 * @param[out] yes    1 if available, else 0
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_memory_available(plm_memory_t memory, int *yes);

/**
 * Is a backend compiled into this library (whether or not this machine can run it)?
 * @param[in]  backend a plm_backend_t other than PLM_BACKEND_AUTO
 * @param[out] yes     1 if compiled in, else 0
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_backend_compiled(plm_backend_t backend, int *yes);

/** Static lower-case name of a backend ("mpi_host", ...), or "invalid".
 *  @param[in] backend any value
 *  @returns the static string; never NULL
 *  \notcollective */
PLM_API const char *plm_backend_name(plm_backend_t backend);

/** Size in bytes of one element of a dtype.
 *  @param[in] dtype any value
 *  @returns the size in bytes, or 0 for an invalid dtype
 *  \notcollective */
PLM_API int64_t plm_dtype_size(plm_dtype_t dtype);

/** PLM_MAX_NDIM, the largest number of dimensions of an array, for languages without C
 *  macros.
 *  @returns PLM_MAX_NDIM
 *  \notcollective */
PLM_API int plm_max_ndim(void);

/* ------------------------------------------------------------------------------------------ */
/* Handles                                                                                    */
/* ------------------------------------------------------------------------------------------ */

typedef struct plm_comm_s *plm_comm_t;                     /**< communicator */
typedef const struct plm_comm_s *plm_const_comm_t;         /**< communicator, read-only */
typedef struct plm_layout_s *plm_layout_t;                 /**< how a global array is split over ranks */
typedef const struct plm_layout_s *plm_const_layout_t;     /**< layout, read-only */
typedef struct plm_array_s *plm_array_t;                   /**< distributed array */
typedef const struct plm_array_s *plm_const_array_t;       /**< distributed array, read-only */
typedef struct plm_stacked_s *plm_stacked_t;               /**< stack of distributed arrays */
typedef const struct plm_stacked_s *plm_const_stacked_t;   /**< stack of distributed arrays, read-only */
typedef struct plm_op_s *plm_op_t;                         /**< linear operator */
typedef const struct plm_op_s *plm_const_op_t;             /**< linear operator, read-only */
typedef struct plm_solver_info_s *plm_solver_info_t;       /**< what a solver reports */
typedef const struct plm_solver_info_s *plm_const_solver_info_t; /**< solver report, read-only */
typedef struct plm_comm_config_s *plm_comm_config_t;       /**< options of plm_comm_create() */
typedef const struct plm_comm_config_s *plm_const_comm_config_t; /**< options, read-only */
/** The null value of every handle type. */
#define PLM_NULL_HANDLE NULL

/* ------------------------------------------------------------------------------------------ */
/* Communicator                                                                               */
/* ------------------------------------------------------------------------------------------ */

/**
 * New options object for plm_comm_create(), holding the defaults: backend PLM_BACKEND_AUTO,
 * cuda_aware -1 (detect), device -1 (node-local rank modulo the devices), no stream and no
 * NCCL communicator. Change them with the setters below; an object may serve any number of
 * plm_comm_create() calls.
 * @param[out] out new object; destroy with plm_comm_config_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_comm_config_create(plm_comm_config_t *out);

/** Destroy an options object (communicators made with it keep their settings).
 *  @param[in,out] config address of the handle; set to NULL
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_comm_config_destroy(plm_comm_config_t *config);

/**
 * Backend to force for device memory: PLM_BACKEND_AUTO (the default: the policy of
 * docs/gpu.md), PLM_BACKEND_MPI_CUDA_AWARE, PLM_BACKEND_MPI_STAGED or PLM_BACKEND_NCCL
 * (PLM_BACKEND_MPI_HOST is PLM_ERR_INVALID_ARG: host memory always uses it). Whether it is
 * available is checked at plm_comm_create().
 * @param[in] config  options object
 * @param[in] backend the backend
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_comm_config_set_backend(plm_comm_config_t config, plm_backend_t backend);

/** Whether MPI is CUDA-aware.
 *  @param[in] config     options object
 *  @param[in] cuda_aware -1 detect (PYLOPS_MPI_CUDA_AWARE, then the MPI vendor query; the
 *                        default), 0 no, 1 yes
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_comm_config_set_cuda_aware(plm_comm_config_t config, int cuda_aware);

/** CUDA device for the communicator's device work.
 *  @param[in] config options object
 *  @param[in] device CUDA device ordinal, or -1 (the default) for the node-local rank modulo
 *                    the visible devices
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_comm_config_set_device(plm_comm_config_t config, int device);

/** Stream for device work.
 *  @param[in] config options object
 *  @param[in] stream a cudaStream_t (borrowed: it must outlive the communicators made with
 *                    it), or NULL (the default) for one the library creates \opaque
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_comm_config_set_stream(plm_comm_config_t config, void *stream);

/**
 * NCCL communicator to attach. With backend PLM_BACKEND_NCCL and no NCCL communicator, the
 * library creates one (an ncclUniqueId sent over MPI).
 * @param[in] config    options object
 * @param[in] nccl_comm an ncclComm_t (borrowed: it must outlive the communicators made with
 *                      it; over exactly the communicator's ranks in its order), or NULL (the
 *                      default) \opaque
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_comm_config_set_nccl_comm(plm_comm_config_t config, void *nccl_comm);

/**
 * Create a communicator from an MPI communicator, which is duplicated (the caller keeps and
 * frees its own). Errors on the duplicate return instead of aborting. A NULL out or a bad
 * config on one rank fails every rank. MPI_COMM_NULL, an inter-communicator or a handle MPI
 * does not know is PLM_ERR_INVALID_ARG on the ranks that passed it (locally: there is no
 * communicator to agree on).
 * @param[in]  mpi_comm any intra-communicator
 * @param[in]  config   options (plm_comm_config_create()), or NULL for the defaults
 * @param[out] out      new communicator; free with plm_comm_destroy() before MPI_Finalize
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{mpi_comm}
 */
PLM_API plm_status_t plm_comm_create(MPI_Comm mpi_comm, plm_const_comm_config_t config, plm_comm_t *out);

/** plm_comm_create() from a Fortran handle: the way languages other than C pass a
 *  communicator. A handle MPI does not know is PLM_ERR_INVALID_ARG (locally), never an abort.
 *  @param[in]  mpi_comm Fortran handle of an intra-communicator (Fortran's MPI_Comm%MPI_VAL or
 *                       integer handle, mpi4py's comm.py2f())
 *  @param[in]  config   options (plm_comm_config_create()), or NULL for the defaults
 *  @param[out] out      new communicator; free with plm_comm_destroy() before MPI_Finalize
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{mpi_comm} */
PLM_API plm_status_t plm_comm_create_f(MPI_Fint mpi_comm, plm_const_comm_config_t config, plm_comm_t *out);

/**
 * Destroy a communicator. Arrays, layouts and operators created on it keep it alive until
 * they are destroyed; the MPI duplicate and the cached mask-group communicators are freed
 * with the last of them (here, when nothing else holds it - destroy those first to free MPI
 * state in this collective call). Collective because it frees MPI communicators, but with no
 * agreement step: destroy is NULL-safe, and a rank passing NULL returns at once.
 * Where comm uses NCCL, freeing it is a collective teardown: the ranks meet in one small
 * reduction on comm's MPI communicator, then close their NCCL communicators in one order
 * (the mask groups' first, then comm's own) - finalised when every rank is healthy, aborted
 * (ncclCommAbort, which never waits) when comm is poisoned (plm_comm_get_async_error()) or
 * the ranks did not all arrive within PYLOPS_MPI_NCCL_TIMEOUT seconds. It never hangs; a rank
 * that never frees comm makes the others wait that long.
 * @param[in,out] comm address of the handle; set to NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_comm_destroy(plm_comm_t *comm);

/**
 * Rank of the caller in comm.
 * @param[in]  comm communicator
 * @param[out] rank 0..size-1
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_comm_rank(plm_const_comm_t comm, int *rank);

/**
 * Number of ranks of comm.
 * @param[in]  comm communicator
 * @param[out] size number of ranks
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_comm_size(plm_const_comm_t comm, int *size);

/**
 * The library's duplicated MPI communicator (borrowed: do not free; valid while comm lives).
 * Use it for queries (rank, size, groups) only: the library's own traffic runs on it, so
 * user messages on it could match the library's. For your own traffic, MPI_Comm_dup it.
 * @param[in]  comm     communicator
 * @param[out] mpi_comm the duplicated MPI communicator (borrowed)
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_comm_get_mpi(plm_const_comm_t comm, MPI_Comm *mpi_comm);

/** plm_comm_get_mpi() as a Fortran handle (MPI_Comm_c2f; mpi4py's MPI.Comm.f2py()), the
 *  round trip of plm_comm_create_f(). Borrowed likewise.
 *  @param[in]  comm     communicator
 *  @param[out] mpi_comm Fortran handle of the duplicated MPI communicator (borrowed)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_comm_get_mpi_f(plm_const_comm_t comm, MPI_Fint *mpi_comm);

/**
 * Split into sub-communicators: ranks with equal color form one, ordered by key then rank.
 * The result inherits comm's configuration (not a stream the library created for comm: it
 * gets its own); where comm uses NCCL, each part gets an NCCL communicator of its own, made
 * here, and a failure there fails every rank of comm.
 * @param[in]  comm  communicator to split
 * @param[in]  color non-negative group id
 * @param[in]  key   order within the group
 * @param[out] out   the caller's group
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_comm_split(plm_comm_t comm, int color, int key, plm_comm_t *out);

/**
 * Backend that the selection policy picks for buffers in a memory space on comm.
 * @param[in]  comm    communicator
 * @param[in]  memory  memory space of the buffers
 * @param[out] backend the policy's choice
 * @returns PLM_SUCCESS, or PLM_ERR_BACKEND_UNAVAILABLE (and *backend = the choice) when that
 *          backend is not in this build, or another error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_comm_get_backend(plm_const_comm_t comm, plm_memory_t memory, plm_backend_t *backend);

/**
 * Whether comm treats MPI as CUDA-aware, and what decided it (config field, then
 * PYLOPS_MPI_CUDA_AWARE=0|1, then the MPI vendor query, else no). The decision is agreed
 * at plm_comm_create(): when ranks decide differently (say the environment variable is set
 * on one rank only), every rank takes "not CUDA-aware" and reports
 * PLM_CUDA_AWARE_FROM_AGREEMENT, so all ranks always use the same backend.
 * @param[in]  comm   communicator
 * @param[out] yes    1 or 0
 * @param[out] source what decided it; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_comm_get_cuda_aware(plm_const_comm_t comm, int *yes, plm_cuda_aware_source_t *source);

/**
 * The CUDA device of this rank on comm: plm_comm_config_set_device(), else the rank's index among
 * the ranks of its node modulo the number of visible devices; -1 in host-only builds or
 * where no device is visible. Device memory of comm's arrays is allocated there, and the
 * library makes it current before device work.
 * @param[in]  comm   communicator
 * @param[out] device CUDA ordinal or -1
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_comm_get_device(plm_const_comm_t comm, int *device);

/**
 * The CUDA stream (a cudaStream_t) that device work on comm's arrays is ordered on:
 * plm_comm_config_set_stream() or the last plm_comm_set_stream(), else a non-blocking stream the
 * library creates on first use and destroys with comm. Ordering rule: kernels, copies and
 * communication of comm's device arrays are queued on this stream in call order; calls that
 * return host values (dot, norms, gather to host, plm_array_get_local_*) synchronise this
 * stream only, never the whole device. Work you queue on another stream must be ordered
 * with this one by you (events).
 * @param[in]  comm   communicator
 * @param[out] stream the stream (a cudaStream_t); NULL on failure
 * \notcollective
 * @returns PLM_SUCCESS, or PLM_ERR_BACKEND_UNAVAILABLE without device memory
 *          (plm_memory_available()), or another error status (plm_last_error())
 */
PLM_API plm_status_t plm_comm_get_stream(plm_const_comm_t comm, void **stream);

/**
 * Order comm's device work on stream from now on (NULL: the library's own stream). Waits for
 * the current stream's queued work first, so work queued before the switch is done before
 * work queued after it. The stream is borrowed: it must outlive its use by comm. Applies to
 * comm only, not to communicators split from it earlier. Set the same kind of stream on
 * every rank.
 * @param[in] comm   communicator
 * @param[in] stream a cudaStream_t, or NULL \opaque
 * @returns PLM_SUCCESS, or PLM_ERR_BACKEND_UNAVAILABLE without device memory, or another
 *          error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_comm_set_stream(plm_comm_t comm, void *stream);

/**
 * Whether comm is still usable, and why not. A failure after a collective call has agreed to
 * go ahead cannot be agreed any more - a CUDA error in a device copy or kernel, an NCCL error
 * or timeout (PYLOPS_MPI_NCCL_TIMEOUT), an MPI error mid-operation - so it poisons comm, and
 * with it every communicator split from the same plm_comm_create() and their mask groups:
 * the call returns the error on the ranks that saw it (its results elsewhere are undefined),
 * and every later collective call on them fails on every rank at its agreement, at once and
 * with that error (the poisoned rank carries it there, so no rank waits). Destroy the
 * communicator (plm_comm_destroy() aborts its NCCL state instead of waiting) or abort the job
 * (plm_comm_abort()). Where comm uses NCCL this also polls NCCL's asynchronous errors; one
 * poisons comm.
 * @param[in]  comm    communicator
 * @param[out] error   PLM_SUCCESS while comm is usable, else the status of the failure that
 *                     poisoned it (the first one)
 * @param[out] message NULL, or a buffer of size bytes (host memory) that receives that
 *                     failure's message, NUL-terminated and truncated to fit ("" while usable)
 *                     \mem{host} \len{size}
 * @param[in]  size    bytes at message; ignored when message is NULL
 * @returns PLM_SUCCESS, also for a poisoned comm; PLM_ERR_INVALID_ARG for a bad handle or a NULL
 *          error
 * \notcollective
 */
PLM_API plm_status_t plm_comm_get_async_error(plm_const_comm_t comm, plm_status_t *error, char *message,
                                              int64_t size);

/**
 * Abort the job from one rank, for errors it cannot go on after (a poisoned communicator, a
 * failure on this rank alone) without hanging in a teardown: where comm uses NCCL, its NCCL
 * communicators (and its mask groups') are aborted first (ncclCommAbort, which never waits),
 * then MPI_Abort(errorcode) on comm's MPI communicator, which in practice ends every process
 * of the job. Does not return when it works.
 * @returns only on failure: PLM_ERR_INVALID_ARG for a bad handle or when MPI is not usable,
 *          PLM_ERR_MPI when MPI_Abort returns
 * @param[in] comm      communicator
 * @param[in] errorcode passed to MPI_Abort
 * \notcollective
 */
PLM_API plm_status_t plm_comm_abort(plm_comm_t comm, int errorcode);

/* ------------------------------------------------------------------------------------------ */
/* Distributed arrays                                                                         */
/* ------------------------------------------------------------------------------------------ */

/** Largest number of dimensions of an array. */
#define PLM_MAX_NDIM 8

/**
 * Create a layout: how an array of global_shape is split over comm's ranks along axis -
 * partition, local shapes and mask as in plm_array_create_ex(). A layout is immutable and
 * reference-counted: every array made from it (plm_array_create_from_layout()) or asked for
 * it (plm_array_layout()) shares it, queries need no communication, and operands with
 * the same layout object are checked in O(1). Operators describe their domain and range
 * with layouts. A mask's group communicator is made once per distinct mask and cached on
 * comm. Every argument but the caller's own local-shape row must be equal on every rank.
 * @param[in]  comm         communicator (the layout keeps a reference)
 * @param[in]  ndim         1..PLM_MAX_NDIM
 * @param[in]  global_shape ndim non-negative extents, C (row-major) order \len{ndim}
 * @param[in]  axis         distributed axis, -ndim..ndim-1 (negative counts from the end)
 * @param[in]  partition    SCATTER, BROADCAST or UNSAFE_BROADCAST
 * @param[in]  nlocal       as in plm_array_create_ex()
 * @param[in]  local_shapes as in plm_array_create_ex() \len{nlocal*ndim}
 * @param[in]  nmask        as in plm_array_create_ex()
 * @param[in]  mask         as in plm_array_create_ex() \len{nmask}
 * @param[out] out          new layout holding one reference; release it with plm_layout_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_layout_create(plm_comm_t comm, int ndim, const int64_t *global_shape, int axis,
                                       plm_partition_t partition, int nlocal, const int64_t *local_shapes, int nmask,
                                       const int *mask, plm_layout_t *out);

/**
 * Add a reference to a layout handle (each needs its own plm_layout_destroy()).
 * @param[in] layout the layout
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_layout_retain(plm_layout_t layout);

/** Drop one reference and set *layout to NULL; arrays made from it keep the layout alive.
 *  NULL or *layout NULL: no-op.
 *  @param[in,out] layout address of the handle
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_destroy(plm_layout_t *layout);

/* Layout queries: host memory outputs, no communication; not collective. Each returns
 * PLM_SUCCESS, or an error status (plm_last_error()). */
/** Number of dimensions.
 *  @param[in]  layout the layout
 *  @param[out] ndim   1..PLM_MAX_NDIM
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_ndim(plm_const_layout_t layout, int *ndim);
/** Global shape.
 *  @param[in]  layout the layout
 *  @param[out] shape ndim extents \len{ndim}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_global_shape(plm_const_layout_t layout, int64_t *shape);
/** The caller's local shape.
 *  @param[in]  layout the layout
 *  @param[out] shape ndim extents of the caller's block \len{ndim}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_local_shape(plm_const_layout_t layout, int64_t *shape);
/** Every rank's local shape.
 *  @param[in]  layout the layout
 *  @param[out] shapes size x ndim extents, rank-major \len{size*ndim}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_local_shapes(plm_const_layout_t layout, int64_t *shapes);
/** Number of local elements.
 *  @param[in]  layout the layout
 *  @param[out] n elements of the caller's block
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_local_size(plm_const_layout_t layout, int64_t *n);
/** Offset of the caller's block.
 *  @param[in]  layout the layout
 *  @param[out] offset global index along the axis of the caller's first entry (0 for BROADCAST kinds)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_local_offset(plm_const_layout_t layout, int64_t *offset);
/** The distributed axis.
 *  @param[in]  layout the layout
 *  @param[out] axis the distributed axis, 0..ndim-1
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_axis(plm_const_layout_t layout, int *axis);
/** Partition.
 *  @param[in]  layout    the layout
 *  @param[out] partition the partition
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_partition(plm_const_layout_t layout, plm_partition_t *partition);
/** Mask.
 *  @param[in]  layout   the layout
 *  @param[out] has_mask 1 or 0
 *  @param[out] mask     size group ids when has_mask (may be NULL) \len{size}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_mask(plm_const_layout_t layout, int *has_mask, int *mask);
/** The layout's communicator, lent: valid while the layout handle lives; never destroy it.
 *  @param[in]  layout the layout
 *  @param[out] comm   the communicator (borrowed)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_get_comm(plm_const_layout_t layout, plm_comm_t *comm);
/** *equal = 1 when a and b describe the same split (global shape, axis, partition, local
 *  shapes, mask) over the same ranks in the same order, else 0. O(1) in the rank count.
 *  @param[in]  a     a layout
 *  @param[in]  b     another layout
 *  @param[out] equal 1 or 0
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_layout_equal(plm_const_layout_t a, plm_const_layout_t b, int *equal);

/**
 * New array on a layout, uninitialised. Not collective because the layout was agreed on when
 * it was made: an error here is the caller's alone.
 * @param[in] layout     the layout (the array keeps a reference)
 * @param[in] dtype      element type
 * @param[in] memory     memory space of the local data
 * @param[in] user_data  NULL to allocate, or the caller's memory in `memory` as in
 *                       plm_array_create_ex() \mem{memory} \len{user_bytes}
 * @param[in] user_bytes 0 with user_data NULL; else it must equal the local size *
 *                       plm_dtype_size(dtype) (PLM_ERR_INVALID_ARG otherwise)
 * @param[out] out       new array; destroy with plm_array_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_array_create_from_layout(plm_const_layout_t layout, plm_dtype_t dtype, plm_memory_t memory,
                                                  void *user_data, int64_t user_bytes, plm_array_t *out);

/** The array's layout as a new handle. Arrays made by *_like, duplicate and
 *  plm_array_create_from_layout share it.
 *  @param[in]  x      the array
 *  @param[out] layout new handle holding one reference; release with plm_layout_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_layout(plm_const_array_t x, plm_layout_t *layout);

/**
 * Create an array with the default layout: along `axis`, rank r of P gets n/P + 1 entries if
 * r < n % P, else n/P. Data are uninitialised.
 * @param[in]  comm         communicator (the array keeps a reference)
 * @param[in]  ndim         1..PLM_MAX_NDIM
 * @param[in]  global_shape ndim non-negative extents, C (row-major) order \len{ndim}
 * @param[in]  axis         distributed axis, -ndim..ndim-1 (negative counts from the end)
 * @param[in]  partition    SCATTER, BROADCAST or UNSAFE_BROADCAST
 * @param[in]  dtype        element type
 * @param[in]  memory       PLM_MEMORY_HOST, or PLM_MEMORY_DEVICE (PLM_ERR_BACKEND_UNAVAILABLE
 *                          without CUDA or a visible device: plm_memory_available())
 * @param[out] out          new array; destroy with plm_array_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_array_create(plm_comm_t comm, int ndim, const int64_t *global_shape, int axis,
                                      plm_partition_t partition, plm_dtype_t dtype, plm_memory_t memory,
                                      plm_array_t *out);

/**
 * plm_array_create() with every option. A global shape whose element or byte count overflows
 * 64 bits is PLM_ERR_INVALID_ARG.
 * @param[in] comm         communicator (the array keeps a reference)
 * @param[in] ndim         1..PLM_MAX_NDIM
 * @param[in] global_shape ndim non-negative extents, C (row-major) order \len{ndim}
 * @param[in] axis         distributed axis, -ndim..ndim-1 (negative counts from the end)
 * @param[in] partition    SCATTER, BROADCAST or UNSAFE_BROADCAST
 * @param[in] dtype        element type
 * @param[in] memory       memory space of the local data
 * @param[in] nlocal       number of rows in local_shapes: 0 (with local_shapes NULL) for the
 *                         default split, else the comm size
 * @param[in] local_shapes nlocal x ndim extents, rank-major: rank r's local shape. Only the
 *                         caller's row is used on each rank; the rows must together give the
 *                         global shape (SCATTER: axis extents sum to it, other extents equal;
 *                         BROADCAST kinds: every row equals it). \len{nlocal*ndim}
 * @param[in] nmask        0 (with mask NULL) for no mask, else the comm size
 * @param[in] mask         nmask non-negative group ids, one per rank: dot, norm and masked
 *                         asarray reduce over the ranks of the caller's group \len{nmask}
 * @param[in] user_data    NULL to allocate, or the caller's memory of the local size in
 *                         `memory`, wrapped without copy, aligned for the dtype's real type
 *                         (PLM_ERR_INVALID_ARG otherwise); it must outlive the array and every
 *                         stack holding it. With BROADCAST the wrapped data are not made equal
 *                         at create: write them through get/restore_local_write. \mem{memory}
 *                         \len{user_bytes}
 * @param[in] user_bytes   0 with user_data NULL; else it must equal this rank's local size *
 *                         plm_dtype_size(dtype) (a rank passing another makes every rank
 *                         return PLM_ERR_INVALID_ARG)
 * @param[out] out         new array; destroy with plm_array_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_array_create_ex(plm_comm_t comm, int ndim, const int64_t *global_shape, int axis,
                                         plm_partition_t partition, plm_dtype_t dtype, plm_memory_t memory,
                                         int nlocal, const int64_t *local_shapes, int nmask, const int *mask,
                                         void *user_data, int64_t user_bytes, plm_array_t *out);

/** Destroy an array (and free its data unless wrapped).
 *  @param[in,out] array address of the handle; set to NULL
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_destroy(plm_array_t *array);

/** New array with the layout (shapes, axis, partition, mask, dtype, memory) of x, all zeros.
 *  Unlike PyLops-MPI's zeros_like, the mask is kept.
 *  @param[in]  x   the model array
 *  @param[out] out new array; destroy with plm_array_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_zeros_like(plm_const_array_t x, plm_array_t *out);

/** New array with the layout of x, uninitialised.
 *  @param[in]  x   the model array
 *  @param[out] out new array; destroy with plm_array_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_empty_like(plm_const_array_t x, plm_array_t *out);

/** New array with the layout and data of x (deep copy).
 *  @param[in]  x   the array to copy
 *  @param[out] out new array; destroy with plm_array_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_duplicate(plm_const_array_t x, plm_array_t *out);

/* Queries: all not collective; shapes are cached at creation. Outputs are host memory the
 * caller owns, of the size given. Each returns PLM_SUCCESS, or an error status
 * (plm_last_error()). */

/** Number of dimensions.
 *  @param[in]  x    the array
 *  @param[out] ndim 1..PLM_MAX_NDIM
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_ndim(plm_const_array_t x, int *ndim);
/** Global shape.
 *  @param[in]  x     the array
 *  @param[out] shape ndim extents \len{ndim}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_global_shape(plm_const_array_t x, int64_t *shape);
/** The caller's local shape.
 *  @param[in]  x     the array
 *  @param[out] shape ndim extents of the caller's block \len{ndim}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_local_shape(plm_const_array_t x, int64_t *shape);
/** Every rank's local shape.
 *  @param[in]  x      the array
 *  @param[out] shapes size x ndim extents, rank-major \len{size*ndim}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_local_shapes(plm_const_array_t x, int64_t *shapes);
/** Number of local elements.
 *  @param[in]  x the array
 *  @param[out] n elements of the caller's block
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_local_size(plm_const_array_t x, int64_t *n);
/** Offset of the caller's block.
 *  @param[in]  x      the array
 *  @param[out] offset global index along the distributed axis of the caller's first local
 *                     entry (0 unless SCATTER)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_local_offset(plm_const_array_t x, int64_t *offset);
/** The distributed axis.
 *  @param[in]  x    the array
 *  @param[out] axis the distributed axis, 0..ndim-1
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_axis(plm_const_array_t x, int *axis);
/** Partition.
 *  @param[in]  x         the array
 *  @param[out] partition the partition
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_partition(plm_const_array_t x, plm_partition_t *partition);
/** Element type.
 *  @param[in]  x     the array
 *  @param[out] dtype the element type
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_dtype(plm_const_array_t x, plm_dtype_t *dtype);
/** Memory space of the local data.
 *  @param[in]  x      the array
 *  @param[out] memory the memory space
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_memory(plm_const_array_t x, plm_memory_t *memory);
/** Mask: writes size group ids and *has_mask = 1, or *has_mask = 0 and nothing.
 *  @param[in]  x        the array
 *  @param[out] has_mask 1 or 0
 *  @param[out] mask     size group ids when has_mask (may be NULL) \len{size}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_mask(plm_const_array_t x, int *has_mask, int *mask);
/** Communicator of the array.
 *  @param[in]  x    the array
 *  @param[out] comm the communicator (borrowed: do not destroy; valid while x lives)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_get_comm(plm_const_array_t x, plm_comm_t *comm);

/**
 * Read access to the local data, C order, in the array's memory space. Pair with
 * plm_array_restore_local_read(). Device arrays: waits for the work queued on the
 * communicator's stream (plm_comm_get_stream()), so the data may be read on any stream or
 * copied to the host at once.
 * @param[in]  x    the array
 * @param[out] data the local data \mem{array}
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_array_get_local_read(plm_const_array_t x, const void **data);
/** End read access.
 *  @param[in]     x    the array
 *  @param[in,out] data the pointer plm_array_get_local_read() gave; set to NULL \mem{array}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_restore_local_read(plm_const_array_t x, const void **data);
/** Write access to the local data. Pair with plm_array_restore_local_write(). Device arrays:
 *  waits for the communicator's stream as get_local_read does; finish your own writes (or
 *  queue them on that stream) before the restore.
 *  @param[in]  x    the array
 *  @param[out] data the local data \mem{array}
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_get_local_write(plm_array_t x, void **data);
/**
 * End write access. For BROADCAST arrays rank 0's data are broadcast so that all ranks agree
 * (the only re-broadcast of BROADCAST data besides plm_array_fill and plm_array_set_global;
 * element-wise math stays local).
 * @param[in]     x    the array
 * @param[in,out] data the pointer plm_array_get_local_write() gave; set to NULL \mem{array}
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collectivebroadcast{x}
 */
PLM_API plm_status_t plm_array_restore_local_write(plm_array_t x, void **data);

/* Element-wise math. Operands must share dtype (PLM_ERR_DTYPE_MISMATCH), layout: partition,
 * global and local shapes, axis and mask (PLM_ERR_SIZE_MISMATCH), and live on communicators
 * with the same ranks in the same order (PLM_ERR_INVALID_ARG otherwise: two plm_comm_t made
 * from the same MPI communicator qualify, a reordered one does not). Outputs may alias inputs.
 * Not collective: layouts are known on every rank, so all ranks agree on any layout error.
 *
 * Scalars cross the API as a real and an imaginary part (double, by value) whatever the
 * dtype: they are rounded to the dtype, and a non-zero (or NaN) imaginary part for a real
 * dtype is PLM_ERR_INVALID_ARG. They must be equal on all ranks (BROADCAST fill: rank 0's
 * value wins). */

/**
 * Set every element to value_re + i value_im. For BROADCAST, rank 0's value wins, and an
 * imaginary part for a real dtype on any rank fails all.
 * @param[in,out] x        the array
 * @param[in]     value_re real part
 * @param[in]     value_im imaginary part
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collectivebroadcast{x}
 */
PLM_API plm_status_t plm_array_fill(plm_array_t x, double value_re, double value_im);
/** y = x (same layout).
 *  @param[in]  x source
 *  @param[out] y destination
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_copy(plm_const_array_t x, plm_array_t y);
/** z = x + y.
 *  @param[in]  x first operand
 *  @param[in]  y second operand
 *  @param[out] z result
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_add(plm_const_array_t x, plm_const_array_t y, plm_array_t z);
/** z = x - y.
 *  @param[in]  x first operand
 *  @param[in]  y second operand
 *  @param[out] z result
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_sub(plm_const_array_t x, plm_const_array_t y, plm_array_t z);
/** z = x * y element-wise.
 *  @param[in]  x first operand
 *  @param[in]  y second operand
 *  @param[out] z result
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_mul(plm_const_array_t x, plm_const_array_t y, plm_array_t z);
/** x = alpha * x.
 *  @param[in,out] x        the array
 *  @param[in]     alpha_re real part of alpha
 *  @param[in]     alpha_im imaginary part of alpha
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_scale(plm_array_t x, double alpha_re, double alpha_im);
/** y = alpha * x + beta * y.
 *  @param[in]     alpha_re real part of alpha
 *  @param[in]     alpha_im imaginary part of alpha
 *  @param[in]     x        the array scaled by alpha
 *  @param[in]     beta_re  real part of beta
 *  @param[in]     beta_im  imaginary part of beta
 *  @param[in,out] y        the array scaled by beta; receives the result
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_axpby(double alpha_re, double alpha_im, plm_const_array_t x, double beta_re,
                                     double beta_im, plm_array_t y);
/** y = conj(x) (a copy for real dtypes).
 *  @param[in]  x source
 *  @param[out] y result
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_array_conj(plm_const_array_t x, plm_array_t y);

/* Reductions: collective on the array's communicator. */

/**
 * Global dot product: sum x_i y_i (conjugate = 0, PyLops-MPI's dot) or sum conj(x_i) y_i
 * (conjugate = 1, vdot), reduced over the caller's mask group (the whole comm without a
 * mask). BROADCAST arrays count each element once. Every rank of the communicator takes
 * part, even with a mask: conjugate must be equal on every rank; y may be NULL on a rank (an
 * error on all). The ranks' partial sums are combined in double, in the one reduction that also
 * carries the agreement.
 * @param[in]  x         first operand
 * @param[in]  y         second operand
 * @param[in]  conjugate 0: sum x_i y_i; 1: sum conj(x_i) y_i
 * @param[out] re host memory; the real part, the same on every rank of the group
 * @param[out] im host memory; the imaginary part. May be NULL for real dtypes (it would be
 *                0), must not be NULL for complex ones.
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_dot(plm_const_array_t x, plm_const_array_t y, int conjugate, double *re,
                                   double *im);

/**
 * Global vector norm of all elements, over the caller's mask group, as float64:
 * ord 2: sqrt(sum |x|^2); 1: sum |x|; INFINITY: max |x|; -INFINITY: min |x|;
 * 0: number of non-zeros; any other p: (sum |x|^p)^(1/p). NaN ord: PLM_ERR_INVALID_ARG.
 * NaN data give NaN on every rank of the group for every ord but 0 (also INFINITY and
 * -INFINITY); ord 0 counts a NaN as a non-zero, as numpy.count_nonzero does.
 * ord must be equal on every rank.
 * @param[in]  x      the array
 * @param[in]  ord    order of the norm
 * @param[out] result the norm, host memory
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_norm(plm_const_array_t x, double ord, double *result);

/**
 * Norm along one axis. The result has the global shape without `axis` (C order, n_out
 * elements, float64, in host memory) and is the same on every rank. Along the distributed axis the partial
 * norms are reduced over the mask group; along another axis each rank's block is computed
 * locally and gathered over the whole communicator (BROADCAST arrays: computed locally).
 * ord and axis must be equal on every rank.
 * @param[in]  x     the array
 * @param[in]  ord   order of the norm (as in plm_array_norm())
 * @param[in]  axis  the axis the norm runs along
 * @param[out] out   the norms, host memory \len{n_out}
 * @param[in]  n_out number of elements at out: the global element count without `axis`
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_norm_axis(plm_const_array_t x, double ord, int axis, double *out, int64_t n_out);

/* Layout changes: collective on the array's communicator. */

/**
 * Gather the global array on every rank into out (C order). masked = 1 gathers only the
 * caller's mask group, in group rank order (its global shape along the axis is the group's
 * sum). BROADCAST kinds copy locally.
 * Every rank of the communicator takes part, also when masked: masked must be equal on every
 * rank.
 * @param[in]  x         the array
 * @param[in]  masked    1: gather the caller's mask group only; 0: the whole array
 * @param[out] out       the gathered elements, in the array's memory space \mem{array}
 * @param[in]  out_bytes must equal N * plm_dtype_size(dtype), N the global element count (the
 *                       group's with masked = 1)
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_asarray(plm_const_array_t x, int masked, void *out, int64_t out_bytes);

/**
 * Set the array from a global array `global` (global shape, C order, in the array's memory
 * space) that every rank holds: each rank copies its block (PyLops-MPI's to_dist).
 * BROADCAST: rank 0's copy wins. For data that only one rank holds, use
 * plm_array_scatter_from().
 * @param[in,out] x            the array
 * @param[in]     global       the global array, in the array's memory space, on every rank
 *                             \mem{array}
 * @param[in]     global_bytes must equal N * plm_dtype_size(dtype), N the global element
 *                             count, on every rank
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_set_global(plm_array_t x, const void *global, int64_t global_bytes);

/**
 * Gather the global array (global shape, C order) on `root` only - PETSc's scatter-to-zero -
 * so no other rank holds more than its block. Point-to-point to the root through the
 * communication layer. BROADCAST kinds: the root copies its own data.
 * root must be equal on every rank.
 * @param[in]  x         the array
 * @param[in]  root      0..size-1
 * @param[out] out       on root: the global array in **host memory** (also for device
 *                       arrays); ignored elsewhere (may be NULL) \mem{host}
 * @param[in]  out_bytes on root: must equal N * plm_dtype_size(dtype), N the global element
 *                       count (PLM_ERR_INVALID_ARG on every rank otherwise); ignored elsewhere
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_gather_to(plm_const_array_t x, int root, void *out, int64_t out_bytes);

/**
 * Set the array from a global array (global shape, C order) that only `root` holds: each
 * rank receives its block from the root. BROADCAST kinds: the root's array is broadcast.
 * root must be equal on every rank.
 * @param[in,out] x            the array
 * @param[in]     root         0..size-1
 * @param[in]     global       on root: the global array in **host memory** (also for device
 *                             arrays); ignored elsewhere (may be NULL) \mem{host}
 * @param[in]     global_bytes on root: must equal N * plm_dtype_size(dtype), N the global
 *                             element count (PLM_ERR_INVALID_ARG on every rank otherwise);
 *                             ignored elsewhere
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_scatter_from(plm_array_t x, int root, const void *global, int64_t global_bytes);

/**
 * Shape of the block plm_array_add_ghost_cells() returns: the local shape with the axis
 * extent grown by `before` (except on rank 0) and `after` (except on the last rank).
 * @param[in]  x      the array
 * @param[in]  before slices taken from the previous rank
 * @param[in]  after  slices taken from the next rank
 * @param[out] shape  ndim extents of the block \len{ndim}
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_array_ghost_shape(plm_const_array_t x, int64_t before, int64_t after, int64_t *shape);

/**
 * Local block with halos along the distributed axis: the last `before` slices of the previous
 * rank, the local data, then the first `after` slices of the next rank (each rank passes its
 * own counts). SCATTER arrays only. A rank asked for more slices than it holds makes every
 * rank return PLM_ERR_SIZE_MISMATCH (each rank checks its own counts against its
 * neighbours' blocks; only the counts themselves travel, to the two neighbours).
 * @param[in]  x         the array
 * @param[in]  before    slices from the previous rank
 * @param[in]  after     slices from the next rank
 * @param[out] out       the block laid out as plm_array_ghost_shape() says, in the array's
 *                       memory space \mem{array}
 * @param[in]  out_bytes must equal N * plm_dtype_size(dtype), N the ghost shape's element count
 *                       (this rank's own; PLM_ERR_INVALID_ARG on every rank otherwise)
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_add_ghost_cells(plm_const_array_t x, int64_t before, int64_t after, void *out,
                                               int64_t out_bytes);

/**
 * New array with x's data distributed along another axis with the default split (one
 * all-to-all exchange). Same axis or a BROADCAST kind: a copy. Mask, dtype kept. axis must
 * be equal on every rank.
 * @param[in]  x    the array
 * @param[in]  axis the new distributed axis
 * @param[out] out  new array; destroy with plm_array_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_redistribute(plm_const_array_t x, int axis, plm_array_t *out);

/* ------------------------------------------------------------------------------------------ */
/* Stacked arrays                                                                             */
/* ------------------------------------------------------------------------------------------ */

/**
 * Stack of arrays treated as one vector (their concatenation). The stack keeps a reference
 * to each member: a member handle may be destroyed while the stack lives. All members must
 * share dtype (else PLM_ERR_DTYPE_MISMATCH) and memory space, and live on the same ranks in
 * the same order: separate communicator handles over the same ranks (two plm_comm_create()
 * of one MPI communicator) are fine; a communicator of another size is
 * PLM_ERR_SIZE_MISMATCH; one of the same size with other ranks or another rank order (a
 * plm_comm_split() with other keys) is PLM_ERR_INVALID_ARG. Why: a stack's dot and norm
 * reduce every member in one agreement on member 0's communicator, and stacks meet operators
 * and other stacks member by member, whose operands must be on the same ranks in the same
 * order (as arrays' operands).
 * @param[in]  n      1 or more
 * @param[in]  arrays n arrays (the handles stay the caller's) \len{n}
 * @param[out] out    new stack; destroy with plm_stacked_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_stacked_create(int n, const plm_array_t *arrays, plm_stacked_t *out);
/** Destroy a stack (members live on while other handles hold them).
 *  @param[in,out] stack address of the handle; set to NULL
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_stacked_destroy(plm_stacked_t *stack);
/** Number of members.
 *  @param[in]  s the stack
 *  @param[out] n number of members
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_stacked_narrays(plm_const_stacked_t s, int *n);
/** Member i of a stack.
 *  @param[in]  s      the stack
 *  @param[in]  i      0..n-1
 *  @param[out] member the member (borrowed: valid while the stack lives; do not destroy)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_stacked_get(plm_const_stacked_t s, int i, plm_array_t *member);
/** New stack of zero arrays with the members' layouts.
 *  @param[in]  s   the model stack
 *  @param[out] out new stack; destroy with plm_stacked_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_stacked_zeros_like(plm_const_stacked_t s, plm_stacked_t *out);
/** Member-wise copy y = x; stacks must match member by member.
 *  @param[in]  x source
 *  @param[out] y destination
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_stacked_copy(plm_const_stacked_t x, plm_stacked_t y);
/** Member-wise x = alpha x (scalars as plm_array_scale()).
 *  @param[in,out] x        the stack
 *  @param[in]     alpha_re real part of alpha
 *  @param[in]     alpha_im imaginary part of alpha
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_stacked_scale(plm_stacked_t x, double alpha_re, double alpha_im);
/** Member-wise y = alpha x + beta y (scalars as plm_array_axpby()).
 *  @param[in]     alpha_re real part of alpha
 *  @param[in]     alpha_im imaginary part of alpha
 *  @param[in]     x        the stack scaled by alpha
 *  @param[in]     beta_re  real part of beta
 *  @param[in]     beta_im  imaginary part of beta
 *  @param[in,out] y        the stack scaled by beta; receives the result
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_stacked_axpby(double alpha_re, double alpha_im, plm_const_stacked_t x, double beta_re,
                                       double beta_im, plm_stacked_t y);
/** Sum of the members' dot products (as plm_array_dot()).
 *  @param[in]  x         first operand
 *  @param[in]  y         second operand
 *  @param[in]  conjugate as in plm_array_dot()
 *  @param[out] re        as in plm_array_dot()
 *  @param[out] im        as in plm_array_dot()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{x} */
PLM_API plm_status_t plm_stacked_dot(plm_const_stacked_t x, plm_const_stacked_t y, int conjugate, double *re,
                                     double *im);
/** Norm of the concatenation, combined from member norms.
 *  @param[in]  x      the stack
 *  @param[in]  ord    order of the norm, as in plm_array_norm()
 *  @param[out] result the norm, host memory
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{x} */
PLM_API plm_status_t plm_stacked_norm(plm_const_stacked_t x, double ord, double *result);
/** Flattened members' global arrays, concatenated.
 *  @param[in]  x         the stack
 *  @param[out] out       the concatenation, in the members' memory space \mem{array}
 *  @param[in]  out_bytes must equal N * plm_dtype_size(dtype), N the members' global element
 *                        counts summed
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{x} */
PLM_API plm_status_t plm_stacked_asarray(plm_const_stacked_t x, void *out, int64_t out_bytes);

/* ------------------------------------------------------------------------------------------ */
/* Linear operators                                                                           */
/* ------------------------------------------------------------------------------------------ */

/*
 * Two kinds of plm_op_t. A **local** operator (dense, diagonal, identity, zero, callback) is a
 * matrix on local buffers; it is a building block, applied by the distributed operators that
 * hold it. A **distributed** operator (block-diagonal, vertical or horizontal stack) maps
 * arrays on its domain layout to arrays on its range layout (1-D vectors, as in PyLops-MPI).
 * Composites (adjoint, scale, sum, product) combine two of the same kind. Operators are
 * immutable; a stack or composite keeps its parts alive, so a part's handle may be destroyed
 * at once. Every handle is released with plm_op_destroy().
 */

/** Dense rows x cols local matrix of dtype: y = A x through CBLAS gemv.
 *  @param[in]  dtype     element type
 *  @param[in]  rows      number of rows
 *  @param[in]  cols      number of columns
 *  @param[in]  a         rows x cols elements, host memory, row-major (col_major = 0) or
 *                        column-major \mem{host}
 *  @param[in]  a_bytes   must equal rows * cols * plm_dtype_size(dtype)
 *  @param[in]  col_major 0: a is row-major; 1: column-major
 *  @param[in]  wrap      0: copy a; 1: use a in place (it must outlive the operator)
 *  @param[out] out       new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_dense(plm_dtype_t dtype, int64_t rows, int64_t cols, const void *a, int64_t a_bytes,
                                  int col_major, int wrap, plm_op_t *out);
/** n x n local diagonal matrix.
 *  @param[in]  dtype   element type
 *  @param[in]  n       size of the matrix
 *  @param[in]  d       n elements, host memory, copied \mem{host}
 *  @param[in]  d_bytes must equal n * plm_dtype_size(dtype)
 *  @param[out] out     new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_diagonal(plm_dtype_t dtype, int64_t n, const void *d, int64_t d_bytes, plm_op_t *out);
/** n x n local identity.
 *  @param[in]  dtype element type
 *  @param[in]  n     size of the matrix
 *  @param[out] out   new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_identity(plm_dtype_t dtype, int64_t n, plm_op_t *out);
/** rows x cols local zero matrix.
 *  @param[in]  dtype element type
 *  @param[in]  rows  number of rows
 *  @param[in]  cols  number of columns
 *  @param[out] out   new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_zero(plm_dtype_t dtype, int64_t rows, int64_t cols, plm_op_t *out);

/**
 * A user function of a callback operator: out (n_out elements) = A in (n_in elements) for
 * matvec, A^H in for rmatvec; buffers of dtype in **host memory** (memory is always
 * PLM_MEMORY_HOST), not overlapping. Return 0 on success; anything else makes the apply fail
 * with PLM_ERR_CALLBACK on every rank (never a hang). Applied to device arrays, the library
 * copies the data to host buffers and back around each call (host twins; plm_op_native()
 * says 0 for device memory).
 */
typedef int (*plm_op_fn)(void *ctx, const void *in, int64_t n_in, void *out, int64_t n_out, plm_dtype_t dtype,
                         plm_memory_t memory);
/** rows x cols local operator defined by user functions.
 *  @param[in]  dtype   element type
 *  @param[in]  rows    number of rows
 *  @param[in]  cols    number of columns
 *  @param[in]  matvec  out = A in; may be NULL (applying it then gives PLM_ERR_NOT_SUPPORTED)
 *  @param[in]  rmatvec out = A^H in; may be NULL (likewise)
 *  @param[in]  ctx     passed to matvec, rmatvec and destroy; the operator takes it. If this
 *                      call fails, ctx stays the caller's. \opaque
 *  @param[in]  destroy destroy(ctx) runs when the operator goes; may be NULL
 *  @param[out] out     new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_callback(plm_dtype_t dtype, int64_t rows, int64_t cols, plm_op_fn matvec,
                                     plm_op_fn rmatvec, void *ctx, void (*destroy)(void *ctx), plm_op_t *out);

/**
 * A user function of a device callback operator: out = A in (matvec) or A^H in (rmatvec), where
 * in and out are **CUDA device memory** on the communicator's device (the current device when
 * it is called), and stream is the cudaStream_t to queue the work on (kernels, cuBLAS calls:
 * set your handle's stream to it). The library orders the surrounding work on that stream, so
 * the function may return before its work is done. Return 0 on success (a launch error is
 * the function's to report); anything else fails the apply with PLM_ERR_CALLBACK on every rank.
 */
typedef int (*plm_op_device_fn)(void *ctx, const void *in, int64_t n_in, void *out, int64_t n_out, plm_dtype_t dtype,
                                void *stream);
/**
 * rows x cols local operator defined by device functions (either may be NULL). On device
 * arrays it runs with no copy of the data; on host arrays the library copies the data to device
 * buffers around each call (so it needs a CUDA device). Otherwise as plm_op_callback().
 * Available in every build (without CUDA, applying it gives PLM_ERR_BACKEND_UNAVAILABLE).
 * @param[in]  dtype   element type
 * @param[in]  rows    number of rows
 * @param[in]  cols    number of columns
 * @param[in]  matvec  out = A in; may be NULL
 * @param[in]  rmatvec out = A^H in; may be NULL
 * @param[in]  ctx     as in plm_op_callback() \opaque
 * @param[in]  destroy as in plm_op_callback(); may be NULL
 * @param[out] out     new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_op_callback_device(plm_dtype_t dtype, int64_t rows, int64_t cols, plm_op_device_fn matvec,
                                            plm_op_device_fn rmatvec, void *ctx, void (*destroy)(void *ctx),
                                            plm_op_t *out);

/* ---- User-defined operators ----------------------------------------------------------------- */

/**
 * A user function of a shell operator: y = A x (matvec) or x = A^H y (rmatvec, called with the
 * range array as x and the domain array as y). x and y are whole distributed arrays, lent for
 * the call only (never destroy them or keep them past it), in the memory space of the operands
 * of the apply. The function runs on **every rank of the operator's communicator**, so it may
 * call any collective of this library on those arrays or on arrays on the same communicator
 * (plm_array_dot, plm_array_norm, plm_op_apply, ...), provided every rank makes the same
 * collective calls in the same order. A rank that fails must not skip a collective the others
 * enter (that hangs): it carries on with the same collective calls (or none, on every rank),
 * and reports its failure by returning non-zero. The library agrees after the function
 * returns: a non-zero return on any rank fails the apply with PLM_ERR_CALLBACK on every rank,
 * the message naming the failing rank. Errors of the library calls it makes are agreed by
 * those calls themselves, so every rank sees them alike.
 */
typedef int (*plm_op_shell_fn)(void *ctx, plm_const_array_t x, plm_array_t y);
/** A distributed operator defined by user functions on whole distributed arrays (the
 *  equivalent of subclassing PyLops-MPI's MPILinearOperator). It composes like any distributed
 *  operator (plm_op_sum, plm_op_product, plm_op_scale, plm_op_adjoint, plm_op_transpose,
 *  plm_op_conj) and runs in every solver. Applies agree on the functions' outcome (see
 *  plm_op_shell_fn).
 *  @param[in]  domain  layout of x (borrowed; the operator keeps its own reference)
 *  @param[in]  range   layout of y = A x, on the communicator of domain (borrowed)
 *  @param[in]  dtype   element type of x and y
 *  @param[in]  matvec  y = A x; may be NULL (applying it then gives PLM_ERR_NOT_SUPPORTED)
 *  @param[in]  rmatvec x = A^H y; may be NULL (likewise); not both NULL
 *  @param[in]  ctx     passed to matvec, rmatvec and destroy; the operator takes it. If this
 *                      call fails, ctx stays the caller's. \opaque
 *  @param[in]  destroy destroy(ctx) runs when the operator goes; may be NULL
 *  @param[out] out     new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_shell(plm_layout_t domain, plm_layout_t range, plm_dtype_t dtype, plm_op_shell_fn matvec,
                                  plm_op_shell_fn rmatvec, void *ctx, void (*destroy)(void *ctx), plm_op_t *out);

/**
 * Block-diagonal operator (PyLops-MPI's MPIBlockDiag): each rank gives its own diagonal blocks
 * (n local operators, one dtype on every rank). Domain and range are 1-D SCATTER arrays whose
 * local sizes are this rank's column and row sums; the mask (optional, as in arrays) is put
 * on both, so reductions in solvers run per group. Applying it needs no communication.
 * @param[in]  comm  communicator
 * @param[in]  n     number of this rank's blocks
 * @param[in]  ops   n local operators \len{n}
 * @param[in]  nmask 0 (with mask NULL) for no mask, else the comm size
 * @param[in]  mask  nmask group ids, as in plm_array_create_ex() \len{nmask}
 * @param[out] out   new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_blockdiag(plm_comm_t comm, int n, const plm_const_op_t *ops, int nmask, const int *mask,
                                      plm_op_t *out);
/**
 * Vertical stack (MPIVStack): each rank's n local operators, all with the same columns on
 * every rank, stacked. Domain: 1-D BROADCAST of that length; range: 1-D SCATTER with this
 * rank's row sum. The adjoint reduces over the ranks with one in-place allreduce.
 * @param[in]  comm communicator
 * @param[in]  n    number of this rank's operators
 * @param[in]  ops  n local operators \len{n}
 * @param[out] out  new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_vstack(plm_comm_t comm, int n, const plm_const_op_t *ops, plm_op_t *out);
/** Horizontal stack (MPIHStack): parts with the same rows on every rank; domain 1-D SCATTER
 *  (column sums), range 1-D BROADCAST; the forward reduces over the ranks.
 *  @param[in]  comm communicator
 *  @param[in]  n    number of this rank's operators
 *  @param[in]  ops  n local operators \len{n}
 *  @param[out] out  new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{comm} */
PLM_API plm_status_t plm_op_hstack(plm_comm_t comm, int n, const plm_const_op_t *ops, plm_op_t *out);

/**
 * Stacked operators (PyLops-MPI's MPIStackedBlockDiag / MPIStackedVStack) map stacks of arrays
 * (plm_stacked_t) to stacks; their parts are distributed operators of one dtype on
 * communicators of one size. Apply them with plm_op_apply_stacked() and solve with the
 * *_stacked solvers; a single array is passed as a stack of one member.
 * - stacked block-diagonal: member i of the input through part i into member i of the output;
 * - stacked vstack: one array (the parts share their domain) into a stack of each part's
 *   output; the adjoint sums the parts' adjoints.
 * Of the composites only plm_op_adjoint() takes stacked operators.
 *
 * This one is the stacked block-diagonal.
 * @param[in]  n   number of parts
 * @param[in]  ops n distributed operators \len{n}
 * @param[out] out new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_op_stacked_blockdiag(int n, const plm_const_op_t *ops, plm_op_t *out);
/** Stacked vstack (MPIStackedVStack): one array (the parts share their domain) into a stack
 *  of each part's output; see plm_op_stacked_blockdiag().
 *  @param[in]  n   number of parts
 *  @param[in]  ops n distributed operators \len{n}
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_stacked_vstack(int n, const plm_const_op_t *ops, plm_op_t *out);
/** Number of members of the domain and range (1 and 1 for a plain distributed operator).
 *  @param[in]  op       the operator
 *  @param[out] n_domain members of the domain
 *  @param[out] n_range  members of the range
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_parts(plm_const_op_t op, int *n_domain, int *n_range);
/** Layout of member i of the domain.
 *  @param[in]  op     the operator
 *  @param[in]  i      0..n_domain-1 (plm_op_parts())
 *  @param[out] layout new handle; release with plm_layout_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_domain_part(plm_const_op_t op, int i, plm_layout_t *layout);
/** Layout of member i of the range.
 *  @param[in]  op     the operator
 *  @param[in]  i      0..n_range-1 (plm_op_parts())
 *  @param[out] layout new handle; release with plm_layout_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_range_part(plm_const_op_t op, int i, plm_layout_t *layout);

/* Composites: both operators local, or both distributed. Not collective. */
/** A^H.
 *  @param[in]  a   the operator A
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_adjoint(plm_const_op_t a, plm_op_t *out);
/** alpha A (adjoint: conj(alpha) A^H). An imaginary part for a real dtype is PLM_ERR_INVALID_ARG.
 *  @param[in]  a   the operator A
 *  @param[in]  alpha_re real part of alpha
 *  @param[in]  alpha_im imaginary part of alpha
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_scale(plm_const_op_t a, double alpha_re, double alpha_im, plm_op_t *out);
/** A + B (same shape, or the same domain and range).
 *  @param[in]  a   the operator A
 *  @param[in]  b   the operator B
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_sum(plm_const_op_t a, plm_const_op_t b, plm_op_t *out);
/** A - B (same shape, or the same domain and range).
 *  @param[in]  a   the operator A
 *  @param[in]  b   the operator B
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_difference(plm_const_op_t a, plm_const_op_t b, plm_op_t *out);
/** A B (B first; B's range is A's domain).
 *  @param[in]  a   the operator A
 *  @param[in]  b   the operator B
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_product(plm_const_op_t a, plm_const_op_t b, plm_op_t *out);

/** A^T = conj(A^H conj(.)) (A^H for real dtypes).
 *  @param[in]  a   the operator A
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_transpose(plm_const_op_t a, plm_op_t *out);
/** conj(A) = conj(A conj(.)) (A for real dtypes).
 *  @param[in]  a   the operator A
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_conj(plm_const_op_t a, plm_op_t *out);
/** A^p for a square A (domain == range) and p >= 0; p = 0 is the identity.
 *  @param[in]  a   the operator A
 *  @param[in]  p   the power, >= 0
 *  @param[out] out new operator; release with plm_op_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_power(plm_const_op_t a, int p, plm_op_t *out);

/**
 * The same local operator on every rank as a distributed operator on BROADCAST vectors
 * (PyLops-MPI's MPILinearOperator / asmpilinearoperator): domain and range are 1-D BROADCAST
 * of its columns and rows, and each rank computes the whole result. Its shape and dtype must
 * be equal on every rank.
 * @param[in]  comm  communicator
 * @param[in]  local the local operator (the result keeps it alive)
 * @param[out] out   new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_broadcast(plm_comm_t comm, plm_const_op_t local, plm_op_t *out);

/* ------------------------------------------------------------------------------------------ */
/* Stencil operators: derivatives, Laplacian, gradient, halo                                  */
/* ------------------------------------------------------------------------------------------ */

/*
 * The model of a stencil operator is an N-D array of global shape dims[0..ndim-1] (C order)
 * distributed along axis 0 in blocks of whole rows, passed as a 1-D SCATTER vector: this
 * rank's local size is local_rows * dims[1] * ... * dims[ndim-1]. local_rows is this rank's
 * rows along axis 0 (they must sum to dims[0]; a rank may have none), or -1 on every rank
 * for the default split (as in arrays: the first dims[0] % P ranks get one extra row).
 * Domain and range are that layout. Along axis 0 a stencil takes the rows it needs from
 * whichever ranks hold them (one persistent exchange, overlapped with the interior); along
 * another axis it is local. Any block size works, including blocks thinner than the stencil
 * and empty blocks.
 */

/** Finite-difference kinds (PyLops' kind="forward" / "backward" / "centered"). */
typedef enum plm_deriv_kind {
    PLM_DERIV_FORWARD = 0,  /**< forward differences */
    PLM_DERIV_BACKWARD = 1, /**< backward differences */
    PLM_DERIV_CENTERED = 2, /**< centered differences */
    PLM_DERIV_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_deriv_kind_t;

/**
 * First derivative along `axis` (negative counts from the end) of the model above
 * (PyLops-MPI's MPIFirstDerivative, extended to any axis), divided by `sampling`:
 * - forward  y[i] = x[i+1] - x[i]; the last row is 0;
 * - backward y[i] = x[i] - x[i-1]; the first row is 0;
 * - centered order 3: (x[i+1] - x[i-1]) / 2, order 5: (x[i-2] - 8x[i-1] + 8x[i+1] - x[i+2]) / 12;
 *   the end rows (1 or 2 per side) are 0, or with `edge` one-sided differences (order 3:
 *   y[0] = x[1] - x[0]; order 5 also y[1] = (x[2] - x[0]) / 2, and mirrored at the end).
 * order is 3 or 5 for centered, and ignored (pass 3) otherwise; edge is used by centered only.
 * The adjoint is the exact transpose. dtype: any of the four.
 * @param[in]  comm       communicator
 * @param[in]  dtype      element type
 * @param[in]  ndim       number of dimensions of the model
 * @param[in]  dims       global shape of the model, C order \len{ndim}
 * @param[in]  local_rows this rank's rows along axis 0, or -1 on every rank for the default split
 * @param[in]  axis       the axis (negative counts from the end)
 * @param[in]  sampling   sampling step
 * @param[in]  kind       forward, backward or centered
 * @param[in]  order      3 or 5 for centered; ignored (pass 3) otherwise
 * @param[in]  edge       1: one-sided differences at the ends (centered only); 0: zero rows
 * @param[out] out        new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_first_derivative(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                             int64_t local_rows, int axis, double sampling, plm_deriv_kind_t kind,
                                             int order, int edge, plm_op_t *out);
/**
 * Second derivative along `axis` (MPISecondDerivative), divided by sampling^2:
 * forward x[i+2] - 2x[i+1] + x[i] (last two rows 0), backward x[i] - 2x[i-1] + x[i-2]
 * (first two rows 0), centered x[i+1] - 2x[i] + x[i-1] (end rows 0, or with edge
 * y[0] = x[0] - 2x[1] + x[2] and its mirror).
 * @param[in]  comm       communicator
 * @param[in]  dtype      element type
 * @param[in]  ndim       number of dimensions of the model
 * @param[in]  dims       global shape of the model, C order \len{ndim}
 * @param[in]  local_rows this rank's rows along axis 0, or -1 on every rank for the default split
 * @param[in]  axis       the axis (negative counts from the end)
 * @param[in]  sampling   sampling step
 * @param[in]  kind       forward, backward or centered
 * @param[in]  edge       1: the edge rows above (centered only); 0: zero rows
 * @param[out] out        new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_second_derivative(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                              int64_t local_rows, int axis, double sampling, plm_deriv_kind_t kind,
                                              int edge, plm_op_t *out);
/**
 * Laplacian (MPILaplacian): sum over k of weights[k] * second derivative along axes[k] with
 * sampling[k]. axes: naxes distinct axes (negative count from the end); weights and sampling
 * may be NULL (all 1). Applied in one operator: the axis-0 term writes y, the others add to
 * it in the order of axes. Any ndim works as long as axis 0, each other axis in axes and each
 * run of consecutive axes not in axes add up to at most PLM_MAX_NDIM (else
 * PLM_ERR_INVALID_ARG).
 * @param[in]  comm       communicator
 * @param[in]  dtype      element type
 * @param[in]  ndim       number of dimensions of the model
 * @param[in]  dims       global shape of the model, C order \len{ndim}
 * @param[in]  local_rows this rank's rows along axis 0, or -1 on every rank for the default split
 * @param[in]  naxes      number of axes
 * @param[in]  axes       naxes distinct axes \len{naxes}
 * @param[in]  weights    naxes weights, or NULL (all 1) \len{naxes}
 * @param[in]  sampling   naxes sampling steps, or NULL (all 1) \len{naxes}
 * @param[in]  kind       forward, backward or centered
 * @param[in]  edge       as in plm_op_second_derivative()
 * @param[out] out        new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_laplacian(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                      int64_t local_rows, int naxes, const int *axes, const double *weights,
                                      const double *sampling, plm_deriv_kind_t kind, int edge, plm_op_t *out);
/**
 * Gradient (MPIGradient): a stacked operator (stacked vstack) from the model to a stack of
 * ndim members, member i the first derivative along axis i with sampling[i] (sampling may be
 * NULL: all 1; kind and edge as above, order 3). Its adjoint sums the members' adjoints.
 * @param[in]  comm       communicator
 * @param[in]  dtype      element type
 * @param[in]  ndim       number of dimensions of the model
 * @param[in]  dims       global shape of the model, C order \len{ndim}
 * @param[in]  local_rows this rank's rows along axis 0, or -1 on every rank for the default split
 * @param[in]  sampling   ndim sampling steps, or NULL (all 1) \len{ndim}
 * @param[in]  kind       forward, backward or centered
 * @param[in]  edge       as in plm_op_first_derivative()
 * @param[out] out        new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_gradient(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                     int64_t local_rows, const double *sampling, plm_deriv_kind_t kind, int edge,
                                     plm_op_t *out);
/**
 * Halo operator (MPIHalo) on an N-D process grid. The global array (dims, C order) is cut
 * into grid[0] x ... x grid[ndim-1] blocks (grid NULL: all ranks on the last axis; the
 * product must be the rank count); rank r is the block at the row-major grid coordinate of r.
 * Along an axis of g points on p ranks, coordinate c covers [min(g, c b), min(g, (c+1) b))
 * with b = ceil(g / p). Domain: 1-D SCATTER of the blocks (C order inside each); range: 1-D
 * SCATTER of the blocks grown by the halo widths, whose ghost cells are filled from the
 * neighbours (axis by axis, so edges and corners too) and zero where there is none.
 * halo (this rank's widths, >= 0): nhalo = 1, one width for every side but 0 on sides at
 * the grid boundary; nhalo = ndim, per axis (both sides); nhalo = 2 ndim, (minus, plus) per
 * axis. Sides facing a neighbour must agree (my plus width = the neighbour's minus width)
 * and not exceed this rank's block. The adjoint extracts the block (the core), as in
 * PyLops-MPI: it is a restriction, not the transpose of the exchange.
 * @param[in]  comm  communicator
 * @param[in]  dtype element type
 * @param[in]  ndim  number of dimensions
 * @param[in]  dims  global shape, C order \len{ndim}
 * @param[in]  grid  ndim ranks per axis, or NULL (all ranks on the last axis) \len{ndim}
 * @param[in]  nhalo 1, ndim or 2 ndim
 * @param[in]  halo  nhalo widths of this rank, >= 0 \len{nhalo}
 * @param[out] out   new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_halo(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims, const int *grid,
                                 int nhalo, const int64_t *halo, plm_op_t *out);

/* ------------------------------------------------------------------------------------------ */
/* Non-stationary convolution                                                                 */
/* ------------------------------------------------------------------------------------------ */

/**
 * Non-stationary 1-D convolution along `axis` (MPINonStationaryConvolve1D; PyLops'
 * NonStationaryConvolve1D) of the stencil operators' model (see "Stencil operators": an N-D
 * array of global shape dims, C order, split along axis 0 in whole rows; local_rows as there).
 * nfilt filters of nh taps (nh odd, centred on their middle tap), hs row-major nfilt x nh of
 * the dtype, sit at the regularly spaced positions ih[0] < ih[1] < ... (ih[k] = ih[0] + k dh,
 * all in [0, dims[axis])); one filter (nfilt = 1) is a stationary convolution. Along the axis,
 * sample i gets the filter h_i linearly interpolated between the two positions around it
 * (the first filter before ih[0], the last after ih[nfilt-1]). Forward: each input sample
 * spreads its filter, y[i + k - nh/2] += h_i[k] x[i]; adjoint: x[i] = sum_k conj(h_i[k])
 * y[i + k - nh/2] (PyLops' rmatvec for real dtypes; the exact adjoint for complex ones,
 * where PyLops does not conjugate); taps past either end of the axis are dropped. Domain and
 * range are the model's layout; host memory only (device arrays: PLM_ERR_NOT_SUPPORTED on
 * every rank). PyLops-MPI's limits are lifted: any split works (dims[axis] need not divide
 * by the rank count; thin and empty blocks) and a rank needs no filter position of its own,
 * since every rank keeps all the filters and interpolates from global positions. Along axis 0
 * a rank takes the nh/2 samples it needs on either side of its block from whichever ranks
 * hold them (one persistent exchange, overlapped with the interior); along another axis the
 * convolution is local. PLM_ERR_INVALID_ARG on every rank for an even nh, positions that are
 * not regular and increasing or outside [0, dims[axis]), a wrong hs_bytes, or arguments (or
 * filters) that differ between ranks.
 * @param[in]  comm       communicator
 * @param[in]  dtype      element type (any of the four)
 * @param[in]  ndim       number of dimensions of the model
 * @param[in]  dims       global shape of the model, C order \len{ndim}
 * @param[in]  local_rows this rank's rows along axis 0, or -1 on every rank for the default split
 * @param[in]  axis       the axis of the convolution (negative counts from the end)
 * @param[in]  nfilt      number of filters, >= 1
 * @param[in]  nh         taps of each filter, odd
 * @param[in]  hs         the filters, nfilt x nh elements of dtype, row-major, host memory,
 *                        copied; equal on every rank \mem{host}
 * @param[in]  hs_bytes   must equal nfilt * nh * plm_dtype_size(dtype)
 * @param[in]  ih         the filters' positions along the axis, regularly spaced \len{nfilt}
 * @param[out] out        new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_nonstationary_convolve1d(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                                     int64_t local_rows, int axis, int64_t nfilt, int64_t nh,
                                                     const void *hs, int64_t hs_bytes, const int64_t *ih,
                                                     plm_op_t *out);

/* ------------------------------------------------------------------------------------------ */
/* Distributed matrix multiplication                                                          */
/* ------------------------------------------------------------------------------------------ */

/** MatrixMult kinds: PyLops-MPI's kind="block" and kind="summa". */
typedef enum plm_matmul_kind {
    PLM_MATMUL_BLOCK = 0, /**< kind="block": A split by rows, X and Y by columns */
    PLM_MATMUL_SUMMA = 1, /**< kind="summa": A, X and Y split in 2-D blocks (SUMMA) */
    PLM_MATMUL_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_matmul_kind_t;

/**
 * Y = A X with A (n x k), X (k x m), Y (n x m), on a grid_rows x grid_cols process grid
 * (rank = row * grid_cols + col). Any rank count works: grid_rows = 0 picks the largest
 * divisor of the rank count not above its square root (6 ranks: 2 x 3; a prime: 1 x P);
 * otherwise grid_rows must divide it. A dimension of d points split in q blocks gives block
 * i the range [min(d, i b), min(d, (i+1) b)) with b = ceil(d / q) (trailing blocks may be
 * empty). For rank `rank`, writes (each may be NULL):
 * - grid: {grid_rows, grid_cols, row, col};
 * - a, x, y: {row_begin, row_end, col_begin, col_end} of this rank's block of A, X and Y.
 * SUMMA: A block (row, col) of n split in grid_rows and k in grid_cols; X block (row, col)
 * of k split in grid_rows and m in grid_cols; Y block (row, col) of n in grid_rows and m in
 * grid_cols. Block: A rows block col of n split in grid_cols, all k columns; X and Y all
 * rows and column block row of m split in grid_rows (X is held by the grid_cols ranks of a
 * grid row alike). PLM_ERR_INVALID_ARG for an unknown kind, nranks < 1, a rank outside
 * 0..nranks-1, a grid_rows neither 0 nor a divisor of nranks, or a negative size.
 * @param[in]  kind      block or SUMMA
 * @param[in]  nranks    number of ranks
 * @param[in]  rank      the rank asked about, 0..nranks-1
 * @param[in]  grid_rows rows of the process grid, or 0 to pick
 * @param[in]  n         rows of A and Y
 * @param[in]  k         columns of A, rows of X
 * @param[in]  m         columns of X and Y
 * @param[out] grid      {grid_rows, grid_cols, row, col}; may be NULL
 * @param[out] a         {row_begin, row_end, col_begin, col_end} of the block of A; may be NULL
 * @param[out] x         {row_begin, row_end, col_begin, col_end} of the block of X; may be NULL
 * @param[out] y         {row_begin, row_end, col_begin, col_end} of the block of Y; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_matmul_blocks(plm_matmul_kind_t kind, int nranks, int rank, int grid_rows, int64_t n,
                                       int64_t k, int64_t m, int grid[4], int64_t a[4], int64_t x[4], int64_t y[4]);
/**
 * Distributed matrix multiplication (MPIMatrixMult), dtype any of the four. a: this rank's
 * block of A (see plm_matmul_blocks), row-major, host memory, copied; may be NULL where that
 * block is empty. kind, grid_rows, dtype, n, k and m must be equal on every rank. Domain and
 * range are 1-D SCATTER of this rank's X and Y blocks, row-major (the global vector is the
 * blocks in rank order, not the row-major matrix); host memory.
 * - SUMMA: the forward broadcasts panels of A along grid rows and of X along grid columns
 *   and accumulates their products; the adjoint broadcasts A panels along rows and reduces
 *   the products along columns. The next panel's communication overlaps this panel's gemm.
 * - block: y block = all of A times the X block: a local gemm, then an allgatherv along the
 *   grid row; the adjoint reduces along it. X and Y are replicated across a grid row, so
 *   domain and range carry the mask {col of each rank}: reductions (dot, norms, solvers)
 *   count one copy. Inputs must hold equal copies (the results do).
 * @param[in]  comm      communicator
 * @param[in]  kind      block or SUMMA
 * @param[in]  grid_rows rows of the process grid, or 0 to pick (plm_matmul_blocks())
 * @param[in]  dtype     element type
 * @param[in]  n         rows of A and Y
 * @param[in]  k         columns of A, rows of X
 * @param[in]  m         columns of X and Y
 * @param[in]  a         this rank's block of A, host memory (NULL with a_bytes 0 where it is
 *                       empty) \mem{host}
 * @param[in]  a_bytes   must equal the block's element count * plm_dtype_size(dtype)
 *                       (PLM_ERR_INVALID_ARG on every rank otherwise)
 * @param[out] out       new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_matrix_mult(plm_comm_t comm, plm_matmul_kind_t kind, int grid_rows, plm_dtype_t dtype,
                                        int64_t n, int64_t k, int64_t m, const void *a, int64_t a_bytes,
                                        plm_op_t *out);

/* ------------------------------------------------------------------------------------------ */
/* Fredholm1 and MDC: kernels split along their first axis, vectors BROADCAST                 */
/* ------------------------------------------------------------------------------------------ */

/**
 * Fredholm integral of the first kind (MPIFredholm1): y[k] = G[k] x[k] for every slice k, with
 * G[k] (nx x ny), x[k] (ny x nz), y[k] (nx x nz). G is distributed along its first (slice)
 * axis: each rank passes its nsl consecutive slices, rank 0 the first ones, then rank 1's, and
 * so on; any count >= 0 per rank works (PyLops-MPI refuses a rank with exactly one slice; here
 * a rank may own 0, 1 or many). The total is the sum over the ranks. Domain: a 1-D BROADCAST
 * vector of total * ny * nz elements, the C-order (total, ny, nz) array; range: BROADCAST,
 * (total, nx, nz). Forward: each rank multiplies its own slices (one gemm each) and one
 * allgatherv of the slices' results fills y on every rank; the adjoint is the same with G^H.
 * Device arrays run on the device: G is uploaded once per device (by the first device apply)
 * and this rank's slices are one strided-batched cuBLAS gemm.
 * @param[in]  comm      communicator
 * @param[in]  dtype     element type of G, x and y (any of the four)
 * @param[in]  nsl       this rank's slice count, >= 0
 * @param[in]  nx        rows of every slice (y's middle axis); equal on every rank
 * @param[in]  ny        columns of every slice (x's middle axis); equal on every rank
 * @param[in]  nz        the last axis of x and y (PyLops' nz); equal on every rank
 * @param[in]  g         this rank's slices, (nsl, nx, ny) C order, host memory, copied (NULL
 *                       with g_bytes 0 where nsl nx ny is 0) \mem{host}
 * @param[in]  g_bytes   must equal nsl * nx * ny * plm_dtype_size(dtype) (PLM_ERR_INVALID_ARG
 *                       on every rank otherwise)
 * @param[in]  save_gt   non-zero: keep G^H too (twice the memory) for the adjoint's gemm;
 *                       zero: the adjoint multiplies by G conjugate-transposed in the gemm
 * @param[in]  usematmul PyLops' choice between matmul and a loop of dots; accepted as a hint:
 *                       both compute one gemm per slice here
 * @param[out] out       new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_fredholm1(plm_comm_t comm, plm_dtype_t dtype, int64_t nsl, int64_t nx, int64_t ny,
                                      int64_t nz, const void *g, int64_t g_bytes, int save_gt, int usematmul,
                                      plm_op_t *out);
/**
 * Multi-dimensional convolution (MPIMDC): y = F1^H I1^H Fredholm I F x, with x the model
 * (nt, nr, nv) and y the data (nt, ns, nv), both 1-D BROADCAST vectors of the C-order arrays,
 * real (float32 for complex64 G, float64 for complex128 G). F and F1: PyLops' real FFT along
 * time (norm "ortho", bins 1 .. (nt-1)/2 times sqrt 2), F with ifftshift before it when
 * twosided (the model's time axis is centred on zero lag); I: the first nfreq of the
 * nt/2 + 1 bins (I^H pads zeros); Fredholm: plm_op_fredholm1() over the frequencies with G
 * times dr dt sqrt(nt) (unless prescaled), conjugated when conj. G is distributed along its
 * first (frequency) axis like Fredholm1's slices: each rank passes nf consecutive frequencies
 * (0, 1 or many), rank 0 the lowest; they must sum to min(nfreq, nt/2 + 1) (nfreq above
 * nt/2 + 1 is clipped, as in PyLops-MPI). The time FFTs are local (every rank holds x and y
 * whole), through FFTW plans made here; the one communication per apply is Fredholm's
 * allgatherv. Device arrays run on the device (cuFFT plans and G made once per device by the
 * first device apply, Fredholm1's batched cuBLAS gemm). PLM_ERR_NOT_SUPPORTED on every rank
 * in builds without FFTW.
 * @param[in]  comm      communicator
 * @param[in]  dtype     element type of G: PLM_COMPLEX64 or PLM_COMPLEX128
 * @param[in]  nt        time samples of x and y, >= 1 (odd when twosided)
 * @param[in]  nv        virtual sources (the last axis of x and y), >= 1
 * @param[in]  nfreq     frequencies kept, >= 1 (clipped to nt/2 + 1)
 * @param[in]  nf        this rank's frequency count, >= 0
 * @param[in]  ns        sources (y's middle axis, G's rows), >= 1
 * @param[in]  nr        receivers (x's middle axis, G's columns), >= 1
 * @param[in]  dt        time sampling (finite)
 * @param[in]  dr        receiver sampling (finite)
 * @param[in]  twosided  non-zero: x holds negative and positive times (nt odd)
 * @param[in]  conj      non-zero: convolve with the complex conjugate of G
 * @param[in]  prescaled non-zero: G already carries the dr dt sqrt(nt) factor
 * @param[in]  save_gt   as in plm_op_fredholm1() (PyLops-MPI's default is on)
 * @param[in]  g         this rank's frequencies, (nf, ns, nr) C order, host memory, copied
 *                       (NULL with g_bytes 0 where nf is 0) \mem{host}
 * @param[in]  g_bytes   must equal nf * ns * nr * plm_dtype_size(dtype)
 * @param[out] out       new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_mdc(plm_comm_t comm, plm_dtype_t dtype, int64_t nt, int64_t nv, int64_t nfreq, int64_t nf,
                                int64_t ns, int64_t nr, double dt, double dr, int twosided, int conj, int prescaled,
                                int save_gt, const void *g, int64_t g_bytes, plm_op_t *out);

/** Release an operator handle. Parts held by composites live on.
 *  @param[in,out] op address of the handle; set to NULL
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_destroy(plm_op_t *op);
/** Local: the matrix shape. Distributed: the global sizes of range (rows) and domain (cols).
 *  @param[in]  op   the operator
 *  @param[out] rows number of rows
 *  @param[out] cols number of columns
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_shape(plm_const_op_t op, int64_t *rows, int64_t *cols);
/** Element type of the operator.
 *  @param[in]  op    the operator
 *  @param[out] dtype the element type
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_dtype(plm_const_op_t op, plm_dtype_t *dtype);
/** Whether op is a local building block or a distributed operator.
 *  @param[in]  op       the operator
 *  @param[out] is_local 1 for a local building block, 0 for a distributed operator
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_is_local(plm_const_op_t op, int *is_local);
/**
 * Whether applying op to arrays in `memory` computes there with no host copy of the data
 * (*native = 1): every operator of the library does, on host and device memory alike, except
 * on device memory NonStationaryConvolve1D (host arrays only) and the one FFT layout cuFFT's
 * real passes do not take (plm_op_fftnd(): computed on host copies); otherwise only a
 * callback operator declared for the other memory space
 * (plm_op_callback() on device arrays, plm_op_callback_device() on host arrays), or a composite
 * holding one, stages its data (*native = 0).
 * @param[in]  op     the operator
 * @param[in]  memory memory space of the arrays
 * @param[out] native 1 or 0
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_op_native(plm_const_op_t op, plm_memory_t memory, int *native);
/* plm_op_domain(), plm_op_range(): the layouts of x and of y = Op x. */
/** The layout of x in y = Op x; make arrays on it with plm_array_create_from_layout().
 *  Plain distributed operators only (stacked ones: plm_op_domain_part()).
 *  @param[in]  op     the operator
 *  @param[out] domain new handle; release with plm_layout_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_domain(plm_const_op_t op, plm_layout_t *domain);
/** The layout of y in y = Op x; make arrays on it with plm_array_create_from_layout().
 *  Plain distributed operators only (stacked ones: plm_op_range_part()).
 *  @param[in]  op    the operator
 *  @param[out] range new handle; release with plm_layout_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_range(plm_const_op_t op, plm_layout_t *range);

/** New array of the operator's dtype on its domain (uninitialised).
 *  @param[in]  op     the operator
 *  @param[in]  memory memory space of the array
 *  @param[out] x      new array; destroy with plm_array_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_new_domain_array(plm_const_op_t op, plm_memory_t memory, plm_array_t *x);
/** New array of the operator's dtype on its range (uninitialised).
 *  @param[in]  op     the operator
 *  @param[in]  memory memory space of the array
 *  @param[out] y      new array; destroy with plm_array_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_op_new_range_array(plm_const_op_t op, plm_memory_t memory, plm_array_t *y);

/**
 * y = Op x: x on the domain, y on the range (layouts checked in O(1): made from them, or equal
 * splits; PLM_ERR_SIZE_MISMATCH otherwise), the operator's dtype, different arrays. The apply
 * runs where the arrays are: host memory, or CUDA device memory (kernels, cuBLAS and the
 * communicator's device backend, all on the communicator's stream; see plm_op_native()). Its
 * scratch is made at the first apply in a memory space and reused by the next ones of the
 * same handle (another thread applying at the same time gets its own). Arrays in a mix of
 * host and device memory: the device ones are copied to host twins and back.
 * @param[in]  op the operator
 * @param[in]  x  array on the domain
 * @param[out] y  array on the range; receives Op x
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{op}
 */
PLM_API plm_status_t plm_op_apply(plm_const_op_t op, plm_const_array_t x, plm_array_t y);
/** x = Op^H y: y on the range, x on the domain (as plm_op_apply()).
 *  @param[in]  op the operator
 *  @param[in]  y  array on the range
 *  @param[out] x  array on the domain; receives Op^H y
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{op} */
PLM_API plm_status_t plm_op_apply_adjoint(plm_const_op_t op, plm_const_array_t y, plm_array_t x);
/** plm_op_apply() on stacks: member i of x on domain part i, of y on range part i (any
 *  distributed operator; a plain one takes stacks of one member).
 *  @param[in]  op the operator
 *  @param[in]  x  stack on the domain
 *  @param[out] y  stack on the range; receives Op x
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{op} */
PLM_API plm_status_t plm_op_apply_stacked(plm_const_op_t op, plm_const_stacked_t x, plm_stacked_t y);
/** plm_op_apply_adjoint() on stacks: member i of y on range part i, of x on domain part i.
 *  @param[in]  op the operator
 *  @param[in]  y  stack on the range
 *  @param[out] x  stack on the domain; receives Op^H y
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{op} */
PLM_API plm_status_t plm_op_apply_adjoint_stacked(plm_const_op_t op, plm_const_stacked_t y, plm_stacked_t x);

/**
 * Dot test: with u on the domain and v on the range filled with pseudo-random values (the
 * same for every rank count; on a masked layout by index within the mask group, so data
 * replicated across groups are equal), compares yy = (Op u)^H v with xx = u^H (Op^H v);
 * *passed = |xx - yy| <= rtol max(|xx|, |yy|).
 * @param[in]  op     the operator
 * @param[in]  rtol   relative tolerance
 * @param[out] passed 1 or 0
 * @param[out] yy     (Op u)^H v as two doubles (re, im); may be NULL \len{2}
 * @param[out] xx     u^H (Op^H v) as two doubles (re, im); may be NULL \len{2}
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{op}
 */
PLM_API plm_status_t plm_op_dottest(plm_const_op_t op, double rtol, int *passed, double *yy, double *xx);

/* ------------------------------------------------------------------------------------------ */
/* Solvers                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* Solvers run where their arrays are (host or CUDA device memory; y and x in one space): work
 * vectors, the operator's scratch and every reduction are made in that space before the
 * solve's agreement, and no host copy of device data is made. Masked operators (mask groups):
 * each group runs its own solve (its own reductions, step sizes and stopping rule, as a solve
 * on that group alone would) while the loop runs until every group has stopped; a group that
 * stopped keeps its x, and groups holding the same data stay bitwise equal. The info object on
 * each rank reports the solve of that rank's group. */

/** An object a solver fills: iterations, stopping reason, residual norms and the cost
 *  history. Reusable across solves.
 *  @param[out] info new object; destroy with plm_solver_info_destroy()
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_solver_info_create(plm_solver_info_t *info);
/** Destroy an info object (and its callback's ctx, plm_solver_info_set_callback()).
 *  @param[in,out] info address of the handle; set to NULL
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_solver_info_destroy(plm_solver_info_t *info);
/** Whether later solves with this info print an iteration table.
 *  @param[in,out] info the info object
 *  @param[in]     show 1: rank 0 prints an iteration table during solves, like PyLops'
 *                      show=True (the first 10 iterations, every 10th, the last 10); 0: no
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_solver_info_set_show(plm_solver_info_t info, int show);

/**
 * A per-iteration callback: called after each iteration, on the ranks whose info has one set
 * (some ranks may have none), with the iteration number (from 1), the current solution x (the
 * array passed to the solve; device arrays are read through plm_array_get_local_read) and the
 * current cost (CG/CGLS: r2norm; ISTA/FISTA: the objective). Return 0 to go on; non-zero on
 * any rank stops the solve on every rank after that iteration. The answer travels with the
 * next iteration's first reduction (no extra communication per iteration).
 */
typedef int (*plm_solver_callback_fn)(void *ctx, int64_t iteration, plm_const_array_t x, double cost);
/**
 * Sets (or, with fn NULL, clears) the callback used by later solves with this info. The info
 * takes ctx: destroy(ctx) (destroy may be NULL) runs when the callback is replaced or cleared
 * and when info is destroyed. With fn NULL, ctx and destroy are ignored; if this call fails,
 * ctx stays the caller's.
 * @param[in,out] info    the info object
 * @param[in]     fn      the callback, or NULL to clear it
 * @param[in]     ctx     passed to fn and destroy \opaque
 * @param[in]     destroy destroy(ctx) when the callback goes; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_solver_info_set_callback(plm_solver_info_t info, plm_solver_callback_fn fn, void *ctx,
                                                  void (*destroy)(void *ctx));

/** Why a solve stopped. PLM_STOP_TOLERANCE and PLM_STOP_MAX_ITERATIONS are PyLops' istop 1 and 2. */
typedef enum plm_stop_reason {
    PLM_STOP_NONE = 0,           /**< no solve has run with this info yet */
    PLM_STOP_TOLERANCE = 1,      /**< the stopping rule's tolerance was met */
    PLM_STOP_MAX_ITERATIONS = 2, /**< niter iterations ran */
    PLM_STOP_CALLBACK = 3,       /**< a stop callback (on some rank) returned non-zero */
    PLM_STOP_BREAKDOWN = 4,      /**< a step's denominator was zero (CG: p^H Op p; CGLS: ||Op p||^2
                                      + damp^2 ||p||^2): x is the last iterate, no NaN made */
    PLM_STOP_NAN = 5,            /**< a NaN or infinity appeared in the solver's reductions (from
                                      the data, the operator or overflow); x holds it */
    PLM_STOP_DIVERGED = 6,       /**< ISTA/FISTA with monitorres: the residual norm grew (the solve
                                      also returns PLM_ERR_NOT_CONVERGED) */
    PLM_STOP_FORCE_INT32 = 0x7fffffff /**< not a reason: keeps the enum 32 bits wide */
} plm_stop_reason_t;

/** Why the last solve with this info stopped.
 *  @param[in]  info   the info object
 *  @param[out] reason the reason (PLM_STOP_NONE before the first solve)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_solver_info_reason(plm_const_solver_info_t info, plm_stop_reason_t *reason);
/** Iterations of the last solve with this info.
 *  @param[in]  info       the info object
 *  @param[out] iterations number of iterations
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_solver_info_iterations(plm_const_solver_info_t info, int64_t *iterations);
/** CGLS: r1norm = ||Op^H (y - Op x) - damp^2 x||^2 at the end (PyLops' definition, a squared
 *  normal-equations residual), r2norm = sqrt(||y - Op x||^2 + damp^2 ||x||^2).
 *  CG: r1norm = ||y - Op x||^2, r2norm = ||y - Op x||.
 *  @param[in]  info   the info object
 *  @param[out] r1norm r1norm of the last solve
 *  @param[out] r2norm r2norm of the last solve
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_solver_info_norms(plm_const_solver_info_t info, double *r1norm, double *r2norm);
/** ||y - Op x|| before the first iteration and after each: iterations + 1 values.
 *  @param[in]  info      the info object
 *  @param[out] cost      room for n values, or NULL to ask \len{n}
 *  @param[in]  n         values that fit at cost
 *  @param[out] n_written how many were written (with cost NULL: how many there are)
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \notcollective */
PLM_API plm_status_t plm_solver_info_cost(plm_const_solver_info_t info, double *cost, int64_t n, int64_t *n_written);

/**
 * Conjugate gradient for a square Hermitian positive definite operator (domain == range):
 * x holds x0 on entry and the solution on return; stops after niter iterations or when
 * ||y - Op x||^2 <= tol (PyLops' rule: tol compares with the squared norm). A solve that
 * does not meet tol still returns PLM_SUCCESS (PLM_STOP_MAX_ITERATIONS).
 * @param[in]     op    the operator
 * @param[in]     y     data, on the range
 * @param[in,out] x     x0 on entry, the solution on return; on the domain
 * @param[in]     niter maximum number of iterations
 * @param[in]     tol   tolerance on ||y - Op x||^2
 * @param[in,out] info  filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{op}
 */
PLM_API plm_status_t plm_solve_cg(plm_const_op_t op, plm_const_array_t y, plm_array_t x, int64_t niter, double tol,
                                  plm_solver_info_t info);
/** plm_solve_cg() on stacks (members on the operator's parts; the callback gets x = NULL).
 *  @param[in]     op    the operator
 *  @param[in]     y     data, a stack on the range parts
 *  @param[in,out] x     x0 on entry, the solution on return; a stack on the domain parts
 *  @param[in]     niter maximum number of iterations
 *  @param[in]     tol   as in plm_solve_cg()
 *  @param[in,out] info  filled with the solve's report; may be NULL
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{op} */
PLM_API plm_status_t plm_solve_cg_stacked(plm_const_op_t op, plm_const_stacked_t y, plm_stacked_t x, int64_t niter,
                                          double tol, plm_solver_info_t info);
/** plm_solve_cgls() on stacks (members on the operator's parts; the callback gets x = NULL).
 *  @param[in]     op    the operator
 *  @param[in]     y     data, a stack on the range parts
 *  @param[in,out] x     x0 on entry, the solution on return; a stack on the domain parts
 *  @param[in]     niter maximum number of iterations
 *  @param[in]     damp  as in plm_solve_cgls()
 *  @param[in]     tol   as in plm_solve_cgls()
 *  @param[in,out] info  filled with the solve's report; may be NULL
 *  @returns PLM_SUCCESS, or an error status (plm_last_error())
 *  \collective{op} */
PLM_API plm_status_t plm_solve_cgls_stacked(plm_const_op_t op, plm_const_stacked_t y, plm_stacked_t x,
                                            int64_t niter, double damp, double tol, plm_solver_info_t info);

/**
 * CGLS: minimises ||y - Op x||^2 + damp^2 ||x||^2. x holds x0 on entry and the solution on
 * return; stops after niter iterations or when ||Op^H r - damp^2 x||^2 < tol (PyLops' rule).
 * Unlike PyLops, damp is squared everywhere (PyLops uses it unsquared in the first residual).
 *
 * @param[in]     op    the operator
 * @param[in]     y     data, on the range
 * @param[in,out] x     x0 on entry, the solution on return; on the domain
 * @param[in]     niter maximum number of iterations
 * @param[in]     damp  damping
 * @param[in]     tol   tolerance on ||Op^H r - damp^2 x||^2
 * @param[in,out] info  filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{op}
 */
PLM_API plm_status_t plm_solve_cgls(plm_const_op_t op, plm_const_array_t y, plm_array_t x, int64_t niter,
                                    double damp, double tol, plm_solver_info_t info);

/** Thresholds of ISTA / FISTA (PyLops' threshkind). */
typedef enum plm_thresh {
    PLM_THRESH_SOFT = 0, /**< max(|x| - t, 0) x / |x| */
    PLM_THRESH_HARD = 1, /**< 0 where |x| <= sqrt(2 t) */
    PLM_THRESH_HALF = 2, /**< the half-threshold of Xu et al. (PyLops' "half") */
    PLM_THRESH_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_thresh_t;

/**
 * ISTA for min 0.5 ||y - Op x||^2 + eps ||x||_1 (PyLops' ista): x holds x0 and gets the
 * solution; step alpha (<= 0: 1 / |lambda_max(Op^H Op)| from 30 power iterations); threshold
 * eps alpha / 2 times decay[k] at iteration k (decay: niter values, or NULL for ones); stops
 * after niter iterations or when ||x - x_old|| <= tol. monitorres = 1: a residual norm that
 * grows fails the solve with PLM_ERR_NOT_CONVERGED. The cost history holds
 * 0.5 ||r||^2 + eps ||x||_1 per iteration; r1norm is the last ||x - x_old||, r2norm ||r||.
 * @param[in]     op    the operator
 * @param[in]     y     data, on the range
 * @param[in,out] x     x0 on entry, the solution on return; on the domain
 * @param[in]     niter maximum number of iterations
 * @param[in]     eps        weight of the L1 term
 * @param[in]     alpha      step; <= 0 for 1 / |lambda_max(Op^H Op)|
 * @param[in]     kind       the threshold
 * @param[in]     decay      niter factors of the threshold, or NULL for ones \len{niter}
 * @param[in]     monitorres 1: fail when the residual norm grows; 0: no check
 * @param[in]     tol        tolerance on ||x - x_old||
 * @param[in,out] info       filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or PLM_ERR_NOT_CONVERGED when monitorres = 1 and the residual norm
 *          grew, or another error status (plm_last_error())
 * \collective{op}
 */
PLM_API plm_status_t plm_solve_ista(plm_const_op_t op, plm_const_array_t y, plm_array_t x, int64_t niter, double eps,
                                    double alpha, plm_thresh_t kind, const double *decay, int monitorres, double tol,
                                    plm_solver_info_t info);
/** FISTA (PyLops' fista): ISTA with Nesterov's momentum; the cost uses the residual after the
 *  update.
 *  @param[in]     op         the operator
 *  @param[in]     y          data, on the range
 *  @param[in,out] x          x0 on entry, the solution on return; on the domain
 *  @param[in]     niter      as in plm_solve_ista()
 *  @param[in]     eps        as in plm_solve_ista()
 *  @param[in]     alpha      as in plm_solve_ista()
 *  @param[in]     kind       as in plm_solve_ista()
 *  @param[in]     decay      as in plm_solve_ista() \len{niter}
 *  @param[in]     monitorres as in plm_solve_ista()
 *  @param[in]     tol        as in plm_solve_ista()
 *  @param[in,out] info       filled with the solve's report; may be NULL
 *  @returns as plm_solve_ista()
 *  \collective{op} */
PLM_API plm_status_t plm_solve_fista(plm_const_op_t op, plm_const_array_t y, plm_array_t x, int64_t niter, double eps,
                                     double alpha, plm_thresh_t kind, const double *decay, int monitorres, double tol,
                                     plm_solver_info_t info);

/**
 * Largest eigenvalue (by magnitude) of a square operator by power iteration, from a start
 * vector drawn from seed (the same values on every rank count, unlike PyLops-MPI); stops
 * after niter iterations or when |l - l_old| < tol |l| (|.| of complex values, where PyLops
 * compares complex numbers).
 * @param[in]  op         a square operator
 * @param[in]  niter      maximum number of iterations
 * @param[in]  tol        relative tolerance
 * @param[in]  seed       seed of the start vector
 * @param[out] eig        two doubles: the eigenvalue (re, im), b^H Op b for the last b \len{2}
 * @param[out] iterations iterations run; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{op}
 */
PLM_API plm_status_t plm_power_iteration(plm_const_op_t op, int64_t niter, double tol, uint64_t seed, double *eig,
                                         int64_t *iterations);

/* ==== Distributed FFT (MPIFFTND, MPIFFT2D) and fft shifts ================================ */

/** Normalisation of the FFT operator (PyLops' norm). */
typedef enum plm_fft_norm {
    PLM_FFT_NORM_NONE = 0, /**< norm="none": the forward unscaled, the adjoint its exact adjoint */
    PLM_FFT_NORM_1_N = 1,  /**< norm="1/n": both directions scaled by 1/N, N the product of the FFT lengths */
    PLM_FFT_NORM_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_fft_norm_t;

/**
 * N-D FFT over the chosen axes of an array distributed along axis 0 (PyLops-MPI's MPIFFTND;
 * MPIFFT2D is this with naxes = 2), slab decomposition. The model x is the N-D array of
 * global shape dims (C order) split along axis 0 with the default split (the first
 * dims[0] % P ranks get one extra row; a rank may have none), passed as a 1-D SCATTER vector
 * like the stencil operators' models (plm_op_domain()). The output y has global shape dimsd
 * = dims, except that with real = 1 the last FFT axis has n / 2 + 1 bins; it is split along
 * one axis, the output axis (plm_op_fft_range()), with the default split, again as a 1-D
 * SCATTER vector of the C-order blocks: axis 0 when 0 is not among axes (then the operator
 * needs no communication); otherwise the first axis not among axes, or axis 1 when every
 * axis is transformed (one all-to-all per apply; an FFT along axis 0 needs ndim >= 2).
 * plm_op_fftnd_ex() can keep the output split along axis 0 instead (PyLops-MPI's output).
 * Conventions as PyLops-MPI's: y = sum_k x_k exp(-2 pi i j.k / n) over the axes ("none"),
 * times 1/N with PLM_FFT_NORM_1_N; the adjoint is the exact adjoint (dot test) in both
 * norms. real = 1: x's real part is transformed (r2c along the last of axes), the bins
 * [1, 1 + (n - 1) / 2) of that axis are multiplied by sqrt(2) and the adjoint returns a real
 * result (imaginary parts zero), so forward and adjoint are adjoints as real-linear maps.
 * A real dtype (PLM_FLOAT32 / PLM_FLOAT64) gives the complex operator of that precision that
 * keeps the real part of x (and of the adjoint's result), as PyLops' floating dtypes do. The
 * operator's dtype, and its arrays', is always complex (PLM_COMPLEX64 or PLM_COMPLEX128).
 * ifftshift_before[i] rolls x by -(n / 2) along axes[i] before the transform,
 * fftshift_after[i] rolls y by n / 2 (n the output length) after it; the adjoint undoes them.
 * Local FFTs through FFTW plans made here, once; the exchange through the library's
 * communication layer. Device arrays run on the device: cuFFT plans made once per device
 * by the first device apply, the exchange on device buffers through the communicator's
 * device backend. One layout is staged through host buffers instead (plm_op_native() gives
 * 0 for device memory there): real = 1 with the last FFT axis followed by axes whose
 * extents multiply with its length to an odd number (cuFFT's real passes need rows of an
 * even number of reals). A build without FFTW returns PLM_ERR_NOT_SUPPORTED on every rank.
 * @param[in]  comm             communicator
 * @param[in]  dtype            PLM_COMPLEX64 / PLM_COMPLEX128, or PLM_FLOAT32 / PLM_FLOAT64 (see above)
 * @param[in]  ndim             number of dimensions
 * @param[in]  dims             global shape, C order \len{ndim}
 * @param[in]  naxes            number of FFT axes, 1..ndim
 * @param[in]  axes             the FFT axes (-ndim..ndim-1, distinct), in order: with real = 1
 *                              the last one is the r2c axis \len{naxes}
 * @param[in]  sampling         naxes sampling steps (finite, non-zero) for the frequencies, or
 *                              NULL (all 1) \len{naxes}
 * @param[in]  norm             the normalisation
 * @param[in]  real             1 for a real-input transform (see above), else 0
 * @param[in]  ifftshift_before naxes flags (0/1), or NULL (none) \len{naxes}
 * @param[in]  fftshift_after   naxes flags (0/1), or NULL (none) \len{naxes}
 * @param[out] out              new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_fftnd(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims, int naxes,
                                  const int *axes, const double *sampling, plm_fft_norm_t norm, int real,
                                  const int *ifftshift_before, const int *fftshift_after, plm_op_t *out);

/** Where an FFT operator leaves its output (plm_op_fftnd_ex()). */
typedef enum plm_fft_output {
    PLM_FFT_OUTPUT_FEWEST_EXCHANGES = 0, /**< plm_op_fftnd()'s split: axis 0 when axis 0 is not
                                              transformed, else the first axis off the transform
                                              (axis 1 when every axis is): one all-to-all */
    PLM_FFT_OUTPUT_AXIS0 = 1,            /**< split along axis 0 as the model (PyLops-MPI's output
                                              vector): a second all-to-all per apply when axis 0 is
                                              transformed, planned with the operator */
    PLM_FFT_OUTPUT_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_fft_output_t;

/**
 * plm_op_fftnd() with the choice of the output's split: PLM_FFT_OUTPUT_AXIS0 gives the output
 * split along axis 0 (plm_op_fft_range() then reports axis 0) whatever the axes, through a
 * second all-to-all made with the operator (no allocation per apply). Costs less than
 * plm_op_fftnd() followed by plm_array_redistribute(), which allocates its output and buffers
 * on every call. Arguments as plm_op_fftnd(), plus:
 * @param[in]  comm             communicator
 * @param[in]  dtype            as plm_op_fftnd()
 * @param[in]  ndim             number of dimensions
 * @param[in]  dims             global shape, C order \len{ndim}
 * @param[in]  naxes            number of FFT axes, 1..ndim
 * @param[in]  axes             the FFT axes \len{naxes}
 * @param[in]  sampling         naxes sampling steps, or NULL (all 1) \len{naxes}
 * @param[in]  norm             the normalisation
 * @param[in]  real             1 for a real-input transform, else 0
 * @param[in]  ifftshift_before naxes flags (0/1), or NULL (none) \len{naxes}
 * @param[in]  fftshift_after   naxes flags (0/1), or NULL (none) \len{naxes}
 * @param[in]  output           where the output is split; the same on every rank
 * @param[out] out              new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_fftnd_ex(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims, int naxes,
                                     const int *axes, const double *sampling, plm_fft_norm_t norm, int real,
                                     const int *ifftshift_before, const int *fftshift_after,
                                     plm_fft_output_t output, plm_op_t *out);

/**
 * The output of an FFT operator (plm_op_fftnd()): its global shape and the axis it is split
 * along (each rank's block is the default split of dimsd[axis], C order).
 * @param[in]  op    the FFT operator
 * @param[in]  ndim  the operator's number of dimensions
 * @param[out] dimsd the output's global shape \len{ndim}
 * @param[out] axis  the distributed axis of the output
 * @returns PLM_SUCCESS, or an error status (plm_last_error()); PLM_ERR_INVALID_ARG for
 *          another kind of operator or another ndim
 * \notcollective
 */
PLM_API plm_status_t plm_op_fft_range(plm_const_op_t op, int ndim, int64_t *dimsd, int *axis);

/**
 * The frequencies of FFT axis i of an FFT operator: numpy.fft.fftfreq(n, sampling[i])
 * (rfftfreq for the last axis when real), fftshift-ed when fftshift_after[i] is set.
 * @param[in]  op the FFT operator
 * @param[in]  i  the index into the operator's axes (0..naxes-1)
 * @param[in]  n  the number of frequencies: the output length dimsd[axes[i]]
 * @param[out] f  n frequencies \len{n}
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_op_fft_frequencies(plm_const_op_t op, int i, int64_t n, double *f);

/**
 * fftshift (inverse = 0: roll by n / 2) or ifftshift (inverse = 1: by -(n / 2)) of a
 * distributed array along the given axes (PyLops-MPI's fftshift_nd / ifftshift_nd), into a
 * new array of x's layout, dtype and memory space: unlike the reference the distribution
 * stays. Along the distributed axis of a SCATTER array the slices move between ranks (one
 * all-to-all); any ndim >= 1. axes, naxes and inverse must be equal on every rank.
 * @param[in]  x       the array
 * @param[in]  naxes   number of axes; 0 (with axes NULL) for every axis
 * @param[in]  axes    the axes (-ndim..ndim-1, distinct) \len{naxes}
 * @param[in]  inverse 0 for fftshift, 1 for ifftshift
 * @param[out] out     new array; destroy with plm_array_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_fftshift(plm_const_array_t x, int naxes, const int *axes, int inverse, plm_array_t *out);

/* ==== Proximal operators and solvers ==================================================== */

typedef struct plm_prox_s *plm_prox_t;             /**< proximal operator */
typedef const struct plm_prox_s *plm_const_prox_t; /**< proximal operator, read-only */

/**
 * L1 proximal operator (pyproximal's L1 without g): f(x) = sigma sum |x_i|; prox with step
 * tau is the soft threshold by tau sigma (complex values on |x_i|, the phase kept).
 * @param[in]  sigma multiplier, finite and >= 0
 * @param[out] out   the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_create_l1(double sigma, plm_prox_t *out);

/**
 * L0 proximal operator (pyproximal's L0): f(x) = number of non-zeros (sigma does not scale
 * the value, as in the reference); prox with step tau is the hard threshold by tau sigma:
 * x_i = 0 where |x_i| <= sqrt(2 tau sigma).
 * @param[in]  sigma multiplier, finite and >= 0
 * @param[out] out   the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_create_l0(double sigma, plm_prox_t *out);

/**
 * out = prox_{tau f}(x). out may be x (in place). tau must be equal on every rank.
 * @param[in]  prox the proximal operator
 * @param[in]  x    the point
 * @param[in]  tau  the step, finite and > 0
 * @param[out] out  the result, an array of x's layout, dtype and memory space
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_prox_apply(plm_const_prox_t prox, plm_const_array_t x, double tau, plm_array_t out);

/**
 * f(x), reduced over x's mask group (through plm_array_norm()'s reductions), the same on
 * every rank of the group.
 * @param[in]  prox  the proximal operator
 * @param[in]  x     the point
 * @param[out] value host memory; f(x)
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_prox_value(plm_const_prox_t prox, plm_const_array_t x, double *value);

/**
 * Frees a proximal operator and sets *prox to NULL; NULL or *prox NULL does nothing.
 * @param[in,out] prox the proximal operator
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_destroy(plm_prox_t *prox);

/* ==== Proximal operators and solvers, part 2: Box, L2, user callbacks, gradient, solvers === */

/**
 * Box proximal operator (pyproximal's Box): the indicator of [lower, upper]; prox with any
 * tau is the projection min(max(x, lower), upper) (NaN stays NaN; lower > upper gives
 * upper). Real dtypes only (a complex array fails plm_prox_apply with PLM_ERR_DTYPE_MISMATCH).
 * Its value (plm_prox_value) is 1 when every element of the array lies in [lower, upper]
 * (NaN does not), else 0: PyLops-MPI's logical AND over the ranks.
 * @param[in]  lower lower bound; -INFINITY for none; not NaN
 * @param[in]  upper upper bound; INFINITY for none; not NaN
 * @param[out] out   the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_create_box(double lower, double upper, plm_prox_t *out);

/** Which inner solver the L2 proximal operator with an operator uses (PyLops-MPI's MPIL2 solver). */
typedef enum plm_l2_solver {
    PLM_L2_CGLS = 0, /**< CGLS on [sqrt(tau sigma) Op; I] x = [sqrt(tau sigma) b; x - tau alpha q] (the default) */
    PLM_L2_CG = 1,   /**< CG on (I + tau sigma Op^H Op) x = x + tau sigma Op^H b - tau alpha q */
    PLM_L2_SOLVER_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_l2_solver_t;

/**
 * L2 proximal operator (PyLops-MPI's MPIL2): f(x) = sigma/2 ||Op x - b||^2 + alpha Re(q^T x),
 * with Op x replaced by x when op is NULL, b by 0 when b is NULL and the q term dropped when q
 * is NULL. Its prox solves the regularised system with op (niter iterations of CG or CGLS
 * with tolerance tol, from x0, PyLops-MPI's defaults being niter 10, tol 1e-4) and is closed
 * form without op: (x + tau sigma b - tau alpha q) / (1 + tau sigma). Its gradient is
 * sigma Op^H (Op x - b) (+ alpha q when qgrad). b, q and x0 are copied (the prox keeps its own
 * warm start: with warm = 1 each prox with op starts from the previous solution, so the prox
 * is not reentrant). Unlike the reference, op without b is refused (PyLops-MPI silently
 * ignores op then).
 * @param[in]  op     the operator, or NULL; a plain distributed operator
 * @param[in]  b      data on op's range (on x's layout without op), or NULL
 * @param[in]  q      on op's domain (x's layout), or NULL
 * @param[in]  sigma  multiplier of the L2 term, finite
 * @param[in]  alpha  multiplier of the q term, finite
 * @param[in]  qgrad  1: the gradient has the alpha q term; 0: not
 * @param[in]  niter  iterations of the inner solver, >= 0
 * @param[in]  tol    tolerance of the inner solver (as plm_solve_cg / plm_solve_cgls)
 * @param[in]  x0     start of the inner solver on op's domain; required with op, else NULL
 * @param[in]  warm   1: warm start from the last prox's solution; 0: always from x0
 * @param[in]  solver the inner solver
 * @param[out] out    the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_create_l2(plm_const_op_t op, plm_const_array_t b, plm_const_array_t q, double sigma,
                                        double alpha, int qgrad, int64_t niter, double tol, plm_const_array_t x0,
                                        int warm, plm_l2_solver_t solver, plm_prox_t *out);

/** A user proximal step on one rank's local block: out = prox_{tau f}(x), n elements of dtype
 *  in host memory (out does not overlap x). Return 0 on success; anything else fails the call
 *  with PLM_ERR_CALLBACK on every rank. */
typedef int (*plm_prox_fn)(void *ctx, const void *x, int64_t n, double tau, void *out, plm_dtype_t dtype);
/** A user proximal value on a slice of one rank's local block (n elements of dtype in host
 *  memory): *value is that slice's part of f. The parts of the ranks of x's mask group are
 *  summed, so f must be separable (a sum over elements). Return 0 on success. */
typedef int (*plm_prox_value_fn)(void *ctx, const void *x, int64_t n, double *value, plm_dtype_t dtype);
/** A user gradient on one rank's local block: grad = grad f(x), n elements of dtype in host
 *  memory. Return 0 on success. */
typedef int (*plm_prox_grad_fn)(void *ctx, const void *x, int64_t n, void *grad, plm_dtype_t dtype);

/**
 * A proximal operator defined by user functions on local data (host arrays only: device
 * arrays fail with PLM_ERR_NOT_SUPPORTED). prox runs on each rank's whole local block; value
 * on the rank's share of the group's elements (SCATTER: its local block; BROADCAST: its share
 * of the replicated rows, as plm_array_norm()), summed over the mask group; grad (may be
 * NULL: no gradient) on the whole local block. A non-zero return on any rank fails the call
 * with PLM_ERR_CALLBACK on every rank. The functions may not call collective functions.
 * destroy(ctx) (may be NULL) runs when the operator is destroyed; if this call fails, ctx
 * stays the caller's.
 * @param[in]  prox    the proximal step; not NULL
 * @param[in]  value   the value, or NULL (plm_prox_value then fails with PLM_ERR_NOT_SUPPORTED)
 * @param[in]  grad    the gradient, or NULL
 * @param[in]  ctx     passed to the functions and destroy \opaque
 * @param[in]  destroy destroy(ctx) when the operator goes; may be NULL
 * @param[out] out     the new proximal operator; NULL on failure
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective */
PLM_API plm_status_t plm_prox_create_callback(plm_prox_fn prox, plm_prox_value_fn value, plm_prox_grad_fn grad,
                                              void *ctx, void (*destroy)(void *ctx), plm_prox_t *out);

/**
 * plm_prox_apply() on a stack, member by member (PyLops-MPI's MPIProxOperator.prox on a
 * StackedDistributedArray): member i of out = prox_{tau f}(member i of x), for L1, L0, Box
 * and user proximal operators (a user prox runs once per member); L2 fails with
 * PLM_ERR_NOT_SUPPORTED on every rank. out may be x (member i of out may be member i of x,
 * no other member of x). tau must be equal on every rank.
 * @param[in]  prox the proximal operator
 * @param[in]  x    the point, a stack
 * @param[in]  tau  the step, finite and > 0
 * @param[out] out  the result, a stack matching x member by member (layout, dtype, memory space)
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_prox_apply_stacked(plm_const_prox_t prox, plm_const_stacked_t x, double tau,
                                            plm_stacked_t out);

/**
 * plm_prox_value() on a stack (PyLops-MPI's MPIProxOperator on a StackedDistributedArray):
 * L1, L0 and user values summed over the members, Box 1 when every member lies in
 * [lower, upper] (the reference's `all`), else 0; every member reduced over its own mask
 * group, all in one agreement; the same on every rank of a member's group. L2 fails with
 * PLM_ERR_NOT_SUPPORTED on every rank.
 * @param[in]  prox  the proximal operator
 * @param[in]  x     the point, a stack
 * @param[out] value host memory; f(x)
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_prox_value_stacked(plm_const_prox_t prox, plm_const_stacked_t x, double *value);

/**
 * out = grad f(x) for a proximal operator with a gradient (L2, or a user operator with grad);
 * others fail with PLM_ERR_NOT_SUPPORTED. out must not be x.
 * @param[in]  prox the proximal operator
 * @param[in]  x    the point
 * @param[out] out  the gradient, an array of x's layout, dtype and memory space
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_prox_grad(plm_const_prox_t prox, plm_const_array_t x, plm_array_t out);

/** Acceleration of plm_solve_proximal_gradient() (pyproximal's acceleration). */
typedef enum plm_accel {
    PLM_ACCEL_NONE = 0,         /**< omega = 0 */
    PLM_ACCEL_VANDENBERGHE = 1, /**< omega = k / (k + 3) at iteration k (from 0) */
    PLM_ACCEL_FISTA = 2,        /**< omega = (t_k - 1) / t_{k+1}, t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2, t_0 = 1 */
    PLM_ACCEL_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_accel_t;

/**
 * (Accelerated) proximal gradient (PyLops-MPI's ProximalGradient) for
 * min f(x) + epsg g(x): with eta = 1, x = prox_{epsg_k tau g}(y - tau grad f(y)), else
 * x = x + eta (prox_{epsg_k tau g}(x - tau grad f(x)) - x); then y = x + omega (x - x_old).
 * tau is required (no backtracking). With tol > 0 it stops when |1 - J / J_old| < tol,
 * J = f(x) + epsg_k g(x). x must not be masked. Every iteration calls the info's callback
 * (cost: J when it is computed, else NaN); with show, rank 0 prints PyLops-MPI's table
 * (Itn, x[0], f, g, J, tau). The cost history holds J per iteration when tol > 0 or some
 * rank shows, else nothing.
 * @param[in]     proxf the smooth term, with a gradient (plm_prox_grad())
 * @param[in]     proxg the proximal term
 * @param[in,out] x     x0 on entry, the solution on return
 * @param[in]     tau   the step, finite and > 0
 * @param[in]     epsg  multipliers of g: one value, or niter values (one per iteration) \len{n_epsg}
 * @param[in]     n_epsg 1 or niter
 * @param[in]     eta   relaxation, in (0, 1]
 * @param[in]     niter iterations, >= 0
 * @param[in]     acceleration the acceleration
 * @param[in]     tol   tolerance on the relative change of J; <= 0: none
 * @param[in,out] info  filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_solve_proximal_gradient(plm_const_prox_t proxf, plm_const_prox_t proxg, plm_array_t x,
                                                 double tau, const double *epsg, int64_t n_epsg, double eta,
                                                 int64_t niter, plm_accel_t acceleration, double tol,
                                                 plm_solver_info_t info);

/**
 * ADMM for an L2 misfit (PyLops-MPI's ADMML2): min 0.5 ||Op x - b||^2 + g(z) s.t. A x = z.
 * Each iteration: x from inner_niter CGLS iterations (tolerance inner_tol, warm-started from x)
 * on [Op; A / sqrt(tau)] x = [b; (z - u) / sqrt(tau)], then z = prox_{tau g}(A x + u) (gfirst:
 * the z-step first) and u = u + A x - z, with u = 0 at the start. The callback gets x and, when
 * computed, J = 0.5 ||Op x - b||^2 + g(A x) (else NaN); with show, rank 0 prints PyLops-MPI's
 * table (Itn, x[0], f, g, J) and the cost history holds J. x and z must not be masked.
 * @param[in]     proxg  the proximal term g
 * @param[in]     op     the misfit operator (plain, distributed)
 * @param[in]     b      data on op's range
 * @param[in]     A      the regularisation operator (plain, distributed), with op's domain
 * @param[in,out] x      x0 on entry, the solution on return; on op's domain
 * @param[in,out] z      on A's range: z0 on entry when use_z0 = 1 (else overwritten by A x0);
 *                       the auxiliary variable on return
 * @param[in]     use_z0 1: z holds z0; 0: z0 = A x0
 * @param[in]     tau    the step, finite and > 0
 * @param[in]     niter  iterations, >= 0
 * @param[in]     gfirst 1: the z-step before the x-step in each iteration
 * @param[in]     inner_niter CGLS iterations of each x-step (PyLops-MPI's default 10)
 * @param[in]     inner_tol   CGLS tolerance of each x-step (PyLops-MPI's default 1e-4)
 * @param[in,out] info   filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_solve_admml2(plm_const_prox_t proxg, plm_const_op_t op, plm_const_array_t b,
                                      plm_const_op_t A, plm_array_t x, plm_array_t z, int use_z0, double tau,
                                      int64_t niter, int gfirst, int64_t inner_niter, double inner_tol,
                                      plm_solver_info_t info);

/**
 * plm_solve_admml2() with z a stack (PyLops-MPI's ADMML2 with an MPIStackedVStack A and a
 * StackedDistributedArray z, as in total-variation problems with A = [D1; D2]): A is a stacked
 * vstack (plm_op_stacked_vstack(); a plain distributed operator takes a stack of one member)
 * with op's domain, member i of z on A's range part i; the x-step runs CGLS on
 * [Op; A_1 / sqrt(tau); ...; A_k / sqrt(tau)], the z-step is plm_prox_apply_stacked() and
 * g(A x) plm_prox_value_stacked(), so g is L1, L0, Box or a user operator (L2:
 * PLM_ERR_NOT_SUPPORTED). Everything else as plm_solve_admml2(): x and z's members must not
 * be masked.
 * @param[in]     proxg  the proximal term g
 * @param[in]     op     the misfit operator (plain, distributed)
 * @param[in]     b      data on op's range
 * @param[in]     A      the regularisation operator: a stacked vstack with op's domain
 * @param[in,out] x      x0 on entry, the solution on return; on op's domain
 * @param[in,out] z      a stack on A's range: z0 on entry when use_z0 = 1 (else overwritten by
 *                       A x0); the auxiliary variable on return
 * @param[in]     use_z0 1: z holds z0; 0: z0 = A x0
 * @param[in]     tau    the step, finite and > 0
 * @param[in]     niter  iterations, >= 0
 * @param[in]     gfirst 1: the z-step before the x-step in each iteration
 * @param[in]     inner_niter CGLS iterations of each x-step (PyLops-MPI's default 10)
 * @param[in]     inner_tol   CGLS tolerance of each x-step (PyLops-MPI's default 1e-4)
 * @param[in,out] info   filled with the solve's report; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x} */
PLM_API plm_status_t plm_solve_admml2_stacked(plm_const_prox_t proxg, plm_const_op_t op, plm_const_array_t b,
                                              plm_const_op_t A, plm_array_t x, plm_stacked_t z, int use_z0,
                                              double tau, int64_t niter, int gfirst, int64_t inner_niter,
                                              double inner_tol, plm_solver_info_t info);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PYLOPSMPI_H */
