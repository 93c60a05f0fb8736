#include "comm/select.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace plm::comm {

plm_backend_t select_backend(Space space, const PolicyState &st)
{
    if (space != Space::device) return PLM_BACKEND_MPI_HOST;  // host and pinned host
    if (st.forced != PLM_BACKEND_AUTO) return st.forced;
    if (st.nccl_attached && st.nccl_enabled) return PLM_BACKEND_NCCL;
    if (st.cuda_aware) return PLM_BACKEND_MPI_CUDA_AWARE;
    return PLM_BACKEND_MPI_STAGED;
}

namespace {
int parse_flag(const char *v)
{
    if (!v) return -1;
    if (std::strcmp(v, "0") == 0) return 0;
    if (std::strcmp(v, "1") == 0) return 1;
    return -1;
}
}  // namespace

CudaAwareDecision decide_cuda_aware(int config_value, const char *env_value, int vendor)
{
    if (config_value == 0 || config_value == 1) return {config_value == 1, PLM_CUDA_AWARE_FROM_CONFIG};
    int env = parse_flag(env_value);
    if (env >= 0) return {env == 1, PLM_CUDA_AWARE_FROM_ENV};
    if (vendor == 0 || vendor == 1) return {vendor == 1, PLM_CUDA_AWARE_FROM_VENDOR};
    return {false, PLM_CUDA_AWARE_FROM_DEFAULT};
}

bool nccl_enabled_from_env(const char *pylops_mpi_nccl, const char *nccl_pylops_mpi)
{
    return parse_flag(pylops_mpi_nccl) != 0 && parse_flag(nccl_pylops_mpi) != 0;
}

double nccl_timeout_from_env(const char *value)
{
    if (!value) return kNcclTimeoutDefault;
    char *end = nullptr;
    const double v = std::strtod(value, &end);
    if (end == value) return kNcclTimeoutDefault;
    while (*end == ' ' || *end == '\t') ++end;
    return *end == '\0' && std::isfinite(v) && v > 0 ? v : kNcclTimeoutDefault;
}

}  // namespace plm::comm
