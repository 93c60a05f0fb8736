// Status strings, last error, version and dtype queries (pylopsmpi/status.h).
#include <algorithm>
#include <cstring>
#include <string>

#include "c_api/guard.hpp"

using namespace plm;

// The ABI promises 32-bit enums (their *_FORCE_INT32 members) and that a Fortran MPI handle is
// a C int (the API description writes MPI_Fint as int for FFIs that cannot include mpi.h).
static_assert(sizeof(plm_status_t) == 4 && sizeof(plm_dtype_t) == 4 && sizeof(plm_memory_t) == 4 &&
                  sizeof(plm_partition_t) == 4 && sizeof(plm_backend_t) == 4 &&
                  sizeof(plm_cuda_aware_source_t) == 4 && sizeof(plm_deriv_kind_t) == 4 &&
                  sizeof(plm_matmul_kind_t) == 4 && sizeof(plm_thresh_t) == 4 && sizeof(plm_stop_reason_t) == 4,
              "public enums must be 32 bits wide");
static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint must be a C int");

extern "C" {

PLM_API const char *plm_status_string(plm_status_t status)
{
    switch (enum_value(status)) {
    case PLM_SUCCESS: return "PLM_SUCCESS: success";
    case PLM_ERR_INVALID_ARG: return "PLM_ERR_INVALID_ARG: invalid argument";
    case PLM_ERR_OUT_OF_MEMORY: return "PLM_ERR_OUT_OF_MEMORY: out of memory";
    case PLM_ERR_NOT_SUPPORTED: return "PLM_ERR_NOT_SUPPORTED: not supported";
    case PLM_ERR_BACKEND_UNAVAILABLE: return "PLM_ERR_BACKEND_UNAVAILABLE: backend or memory space unavailable";
    case PLM_ERR_MPI: return "PLM_ERR_MPI: MPI call failed";
    case PLM_ERR_CUDA: return "PLM_ERR_CUDA: CUDA call failed";
    case PLM_ERR_NCCL: return "PLM_ERR_NCCL: NCCL call failed";
    case PLM_ERR_SIZE_MISMATCH: return "PLM_ERR_SIZE_MISMATCH: shapes, layouts or lengths do not match";
    case PLM_ERR_NOT_CONVERGED: return "PLM_ERR_NOT_CONVERGED: solver did not converge";
    case PLM_ERR_INTERNAL: return "PLM_ERR_INTERNAL: internal error";
    case PLM_ERR_DTYPE_MISMATCH: return "PLM_ERR_DTYPE_MISMATCH: dtypes cannot be combined";
    case PLM_ERR_CALLBACK: return "PLM_ERR_CALLBACK: a user callback returned non-zero";
    }
    return "unknown plm_status_t";
}

PLM_API const char *plm_last_error(void) { return detail::last_error(); }

PLM_API void plm_clear_last_error(void) { detail::record_error(""); }

PLM_API plm_status_t plm_last_error_copy(char *buf, int64_t size, int64_t *length)
{
    // The message is read before guard() runs: a failure here records its own message.
    const std::string message = detail::last_error();
    return detail::guard([&] {
        PLM_REQUIRE(size >= 0, PLM_ERR_INVALID_ARG, "size %lld is negative", static_cast<long long>(size));
        PLM_REQUIRE(buf || size == 0, PLM_ERR_INVALID_ARG, "buf is NULL but size is %lld",
                    static_cast<long long>(size));
        if (length) *length = static_cast<int64_t>(message.size());
        if (size == 0) return;
        const size_t n = std::min(message.size(), static_cast<size_t>(size - 1));
        std::memcpy(buf, message.data(), n);
        buf[n] = '\0';
    });
}

PLM_API plm_status_t plm_version(int *major, int *minor, int *patch)
{
    if (major) *major = PLM_VERSION_MAJOR;
    if (minor) *minor = PLM_VERSION_MINOR;
    if (patch) *patch = PLM_VERSION_PATCH;
    return PLM_SUCCESS;
}

PLM_API const char *plm_version_string(void) { return PLM_VERSION_STRING; }

PLM_API const char *plm_git_hash(void) { return PLM_GIT_HASH; }

PLM_API int plm_max_ndim(void) { return PLM_MAX_NDIM; }

PLM_API plm_status_t plm_check_version(int major, int minor)
{
    return detail::guard([&] {
        const bool ok = major == PLM_VERSION_MAJOR && (PLM_VERSION_MAJOR > 0 || minor == PLM_VERSION_MINOR);
        PLM_REQUIRE(ok, PLM_ERR_NOT_SUPPORTED, "header version %d.%d cannot use library %s (%s must match)", major,
                    minor, PLM_VERSION_STRING, PLM_VERSION_MAJOR > 0 ? "major" : "major.minor");
    });
}

PLM_API int64_t plm_dtype_size(plm_dtype_t dtype)
{
    switch (enum_value(dtype)) {
    case PLM_FLOAT32: return 4;
    case PLM_FLOAT64: return 8;
    case PLM_COMPLEX64: return 8;
    case PLM_COMPLEX128: return 16;
    }
    return 0;
}

PLM_API plm_status_t plm_dtype_promote(plm_dtype_t a, plm_dtype_t b, plm_dtype_t *out)
{
    return detail::guard([&] {
        PLM_REQUIRE(out, PLM_ERR_INVALID_ARG, "out is NULL");
        *out = to_public(promote(from_public(enum_value(a)), from_public(enum_value(b))));
    });
}

}  // extern "C"
