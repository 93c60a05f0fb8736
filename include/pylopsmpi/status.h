/**
 * @file pylopsmpi/status.h
 * @brief Status codes and the last error, the library version, dtypes and sizes.
 *
 * Part of the C API: include pylopsmpi.h, whose conventions hold here.
 */
#ifndef PYLOPSMPI_STATUS_H
#define PYLOPSMPI_STATUS_H

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

/** @defgroup plm_status Status, errors, version and element types
 *  @brief Status codes and the last error, the library version, dtypes and sizes.
 *  @{ */

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
/* Element types and sizes                                                                    */
/* ------------------------------------------------------------------------------------------ */

/** Element types of arrays. */
typedef enum plm_dtype {
    PLM_FLOAT32 = 0,    /**< float (32-bit IEEE 754) */
    PLM_FLOAT64 = 1,    /**< double (64-bit IEEE 754) */
    PLM_COMPLEX64 = 2,  /**< two float32, real then imaginary (C99 float _Complex layout) */
    PLM_COMPLEX128 = 3, /**< two float64, real then imaginary (C99 double _Complex layout) */
    PLM_DTYPE_FORCE_INT32 = 0x7fffffff /**< not a dtype: keeps the enum 32 bits wide */
} plm_dtype_t;

/**
 * The dtype of an operation on two dtypes: NumPy's promotion (numpy.result_type), the rule
 * of every call of this library that mixes dtypes. The wider precision, complex when either
 * is: float32 and float64 give float64, float32 and complex64 complex64, float64 and
 * complex64 complex128, a dtype with itself that dtype. A value converts to another dtype
 * without loss when the promotion of the two is that other dtype (float32 to float64, a real
 * dtype to a complex one of its precision or more, complex64 to complex128); the library
 * converts only that way and never truncates: where a result would not fit its output
 * (float64 data into a float32 array, a complex result into a real array), the call fails
 * with PLM_ERR_DTYPE_MISMATCH. Applies (plm_op_apply()) promote likewise.
 * @param[in]  a   a dtype
 * @param[in]  b   a dtype
 * @param[out] out the promoted dtype
 * @returns PLM_SUCCESS, or PLM_ERR_INVALID_ARG for an unknown dtype or a NULL out
 * \notcollective
 */
PLM_API plm_status_t plm_dtype_promote(plm_dtype_t a, plm_dtype_t b, plm_dtype_t *out);

/** Largest number of dimensions of an array. */
#define PLM_MAX_NDIM 8

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

/** The null value of every handle type. */
#define PLM_NULL_HANDLE NULL

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PYLOPSMPI_STATUS_H */
