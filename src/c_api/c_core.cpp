// Status strings, last error, version, dtype and backend queries.
#include "c_api/guard.hpp"
#include "comm/backend.hpp"

using namespace plm;

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

namespace {
// The backends compiled in (whether this machine can run them: plm_backend_available).
constexpr unsigned kBackendsBuilt = PLM_BACKEND_BIT(PLM_BACKEND_MPI_HOST)
#ifdef PLM_HAVE_CUDA
                                    | PLM_BACKEND_BIT(PLM_BACKEND_MPI_CUDA_AWARE) | PLM_BACKEND_BIT(PLM_BACKEND_MPI_STAGED)
#endif
#ifdef PLM_HAVE_NCCL
                                    | PLM_BACKEND_BIT(PLM_BACKEND_NCCL)
#endif
    ;
}  // namespace

PLM_API const plm_version_t *plm_version(void)
{
    static const plm_version_t v = {PLM_VERSION_MAJOR, PLM_VERSION_MINOR, PLM_VERSION_PATCH, PLM_GIT_HASH,
                                    kBackendsBuilt};
    return &v;
}

PLM_API unsigned plm_version_number(void) { return PLM_VERSION_CODE; }

PLM_API plm_status_t plm_check_version(int major, int minor)
{
    return detail::guard([&] {
        const bool ok = major == PLM_VERSION_MAJOR && (PLM_VERSION_MAJOR > 0 || minor == PLM_VERSION_MINOR);
        PLM_REQUIRE(ok, PLM_ERR_NOT_SUPPORTED, "header version %d.%d cannot use library %s (%s must match)", major,
                    minor, PLM_VERSION_STRING, PLM_VERSION_MAJOR > 0 ? "major" : "major.minor");
    });
}

PLM_API size_t plm_dtype_size(plm_dtype_t dtype)
{
    switch (enum_value(dtype)) {
    case PLM_FLOAT32: return 4;
    case PLM_FLOAT64: return 8;
    case PLM_COMPLEX64: return 8;
    case PLM_COMPLEX128: return 16;
    }
    return 0;
}

PLM_API const char *plm_backend_name(plm_backend_t backend)
{
    switch (enum_value(backend)) {
    case PLM_BACKEND_AUTO: return "auto";
    case PLM_BACKEND_MPI_HOST: return "mpi_host";
    case PLM_BACKEND_MPI_CUDA_AWARE: return "mpi_cuda_aware";
    case PLM_BACKEND_MPI_STAGED: return "mpi_staged";
    case PLM_BACKEND_NCCL: return "nccl";
    }
    return "invalid";
}

PLM_API plm_status_t plm_backend_available(plm_backend_t backend, int *yes)
{
    return detail::guard([&] {
        PLM_REQUIRE(yes, PLM_ERR_INVALID_ARG, "yes is NULL");
        *yes = 0;
        const int b = enum_value(backend);
        PLM_REQUIRE(b >= PLM_BACKEND_MPI_HOST && b <= PLM_BACKEND_NCCL, PLM_ERR_INVALID_ARG,
                    "%d is not a concrete plm_backend_t", b);
        *yes = comm::backend_built(backend);
    });
}

PLM_API plm_status_t plm_memory_available(plm_memory_t memory, int *yes)
{
    return detail::guard([&] {
        PLM_REQUIRE(yes, PLM_ERR_INVALID_ARG, "yes is NULL");
        *yes = 0;
        *yes = space_ops(space_from_public(enum_value(memory))) != nullptr;
    });
}

}  // extern "C"
