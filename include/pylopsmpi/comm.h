/**
 * @file pylopsmpi/comm.h
 * @brief plm_comm_t: a duplicated MPI communicator, its backends, device and stream.
 *
 * Part of the C API: include pylopsmpi.h, whose conventions hold here.
 */
#ifndef PYLOPSMPI_COMM_H
#define PYLOPSMPI_COMM_H

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup plm_comm Communicator
 *  @brief plm_comm_t: a duplicated MPI communicator, its backends, device and stream.
 *  @{ */

/* ------------------------------------------------------------------------------------------ */
/* Memory spaces and backends                                                                 */
/* ------------------------------------------------------------------------------------------ */

/** Where an array's local data lives. */
typedef enum plm_memory {
    PLM_MEMORY_HOST = 0,   /**< host memory */
    PLM_MEMORY_DEVICE = 1, /**< CUDA device memory; PLM_ERR_BACKEND_UNAVAILABLE in host-only builds and
                               where no CUDA device is visible (plm_memory_available()) */
    PLM_MEMORY_FORCE_INT32 = 0x7fffffff /**< not a memory space: keeps the enum 32 bits wide */
} plm_memory_t;

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

/* ------------------------------------------------------------------------------------------ */
/* Communicator handles                                                                       */
/* ------------------------------------------------------------------------------------------ */

typedef struct plm_comm_s *plm_comm_t;                     /**< communicator */
typedef const struct plm_comm_s *plm_const_comm_t;         /**< communicator, read-only */
typedef struct plm_comm_config_s *plm_comm_config_t;       /**< options of plm_comm_create() */
typedef const struct plm_comm_config_s *plm_const_comm_config_t; /**< options, read-only */

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
 * config on one rank fails every rank.
 *
 * What is checked, on the ranks that passed it (locally: there is no communicator to agree on,
 * so the other ranks may then wait in the duplicate): MPI_COMM_NULL and inter-communicators are
 * PLM_ERR_INVALID_ARG, and so is a handle for which MPI's own MPI_Comm_test_inter() returns
 * an error (asked with errors returned, not fatal).
 * What C cannot check: a value that is not an MPI_Comm of this MPI at all - the integer of
 * mpi4py's comm.py2f() or of a Fortran handle, another MPI's handle, garbage - is undefined
 * behaviour inside MPI; with Open MPI, whose MPI_Comm is a pointer, it crashes the process
 * before the library can look at it. Languages other than C pass the Fortran handle to
 * plm_comm_create_f(), which MPI can look up and refuse.
 * @param[in]  mpi_comm any intra-communicator
 * @param[in]  config   options (plm_comm_config_create()), or NULL for the defaults
 * @param[out] out      new communicator; free with plm_comm_destroy() before MPI_Finalize
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{mpi_comm}
 */
PLM_API plm_status_t plm_comm_create(MPI_Comm mpi_comm, plm_const_comm_config_t config, plm_comm_t *out);

/** plm_comm_create() from a Fortran handle: the way languages other than C pass a
 *  communicator. An integer that MPI_Comm_f2c() maps to no communicator (MPI's table has no
 *  such entry), or to MPI_COMM_NULL or an inter-communicator, is PLM_ERR_INVALID_ARG on the
 *  ranks that passed it (locally), never an abort.
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

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PYLOPSMPI_COMM_H */
