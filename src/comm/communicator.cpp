#include "comm/communicator.hpp"
#include "comm/distributed.hpp"

#include <cstdlib>
#include <cstring>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace plm::comm {

void mpi_check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    PLM_FAIL(PLM_ERR_MPI, "%s: %.*s", what, len, text);
}

int vendor_cuda_aware_query()
{
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    return MPIX_Query_cuda_support() ? 1 : 0;
#elif defined(MPIX_GPU_SUPPORT_CUDA)
    int yes = 0;
    if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes) == MPI_SUCCESS) return yes ? 1 : 0;
    return -1;
#else
    return -1;
#endif
}

Config read_config(const plm_comm_config_t *cfg)
{
    Config c;
    if (!cfg) return c;
    PLM_REQUIRE(cfg->struct_size >= offsetof(plm_comm_config_t, nccl_comm) + sizeof(void *), PLM_ERR_INVALID_ARG,
                "plm_comm_config_t.struct_size %zu is smaller than any released layout", cfg->struct_size);
    PLM_REQUIRE(cfg->magic == PLM_CONFIG_MAGIC, PLM_ERR_INVALID_ARG,
                "plm_comm_config_t has a bad magic (0x%x): initialise it with PLM_COMM_CONFIG_INITIALIZER "
                "or plm_comm_config_init()",
                cfg->magic);
    const int backend = enum_value(cfg->backend);
    PLM_REQUIRE(backend >= PLM_BACKEND_AUTO && backend <= PLM_BACKEND_NCCL, PLM_ERR_INVALID_ARG,
                "plm_comm_config_t.backend %d is not a plm_backend_t", backend);
    PLM_REQUIRE(backend != PLM_BACKEND_MPI_HOST, PLM_ERR_INVALID_ARG,
                "plm_comm_config_t.backend cannot force mpi_host for device memory");
    PLM_REQUIRE(cfg->cuda_aware >= -1 && cfg->cuda_aware <= 1, PLM_ERR_INVALID_ARG,
                "plm_comm_config_t.cuda_aware must be -1, 0 or 1 (got %d)", cfg->cuda_aware);
    PLM_REQUIRE(cfg->device >= -1, PLM_ERR_INVALID_ARG, "plm_comm_config_t.device must be >= -1");
    PLM_REQUIRE(backend != PLM_BACKEND_NCCL || cfg->nccl_comm, PLM_ERR_INVALID_ARG,
                "plm_comm_config_t.backend is NCCL but no nccl_comm is attached");
    c.backend = static_cast<plm_backend_t>(backend);
    c.cuda_aware = cfg->cuda_aware;
    c.device = cfg->device;
    c.stream = cfg->stream;
    c.nccl_comm = cfg->nccl_comm;
    return c;
}

std::shared_ptr<Communicator> Communicator::create(MPI_Comm user, const plm_comm_config_t *user_cfg)
{
    PLM_REQUIRE(user != MPI_COMM_NULL, PLM_ERR_INVALID_ARG, "MPI communicator is MPI_COMM_NULL");
    int inter = 0;
    mpi_check(MPI_Comm_test_inter(user, &inter), "MPI_Comm_test_inter");
    PLM_REQUIRE(!inter, PLM_ERR_INVALID_ARG, "inter-communicators are not supported");

    std::shared_ptr<Communicator> c(new Communicator());
    mpi_check(MPI_Comm_dup(user, &c->view_.mpi), "MPI_Comm_dup");
    // From here the destructor frees the duplicate if anything below throws.
    mpi_check(MPI_Comm_set_errhandler(c->view_.mpi, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    mpi_check(MPI_Comm_rank(c->view_.mpi, &c->view_.rank), "MPI_Comm_rank");
    mpi_check(MPI_Comm_size(c->view_.mpi, &c->view_.size), "MPI_Comm_size");
    Config cfg;
    Distributed().agree(*c, capture([&] { cfg = read_config(user_cfg); }));
    c->cfg_ = cfg;
    c->view_.nccl = cfg.nccl_comm;
    c->view_.stream = cfg.stream;

    CudaAwareDecision d = decide_cuda_aware(cfg.cuda_aware, std::getenv("PYLOPS_MPI_CUDA_AWARE"),
                                            vendor_cuda_aware_query());
    c->cuda_aware_source_ = d.source;
    c->policy_.forced = cfg.backend;
    c->policy_.cuda_aware = d.yes;
    c->policy_.nccl_attached = cfg.nccl_comm != nullptr;
    c->policy_.nccl_enabled = nccl_enabled_from_env(std::getenv("PYLOPS_MPI_NCCL"), std::getenv("NCCL_PYLOPS_MPI"));
    return c;
}

std::shared_ptr<Communicator> Communicator::split(int color, int key) const
{
    PLM_REQUIRE(color >= 0, PLM_ERR_INVALID_ARG, "split color must be non-negative (got %d)", color);
    MPI_Comm sub = MPI_COMM_NULL;
    mpi_check(MPI_Comm_split(view_.mpi, color, key, &sub), "MPI_Comm_split");
    std::shared_ptr<Communicator> c(new Communicator());
    c->view_.mpi = sub;
    mpi_check(MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    mpi_check(MPI_Comm_rank(sub, &c->view_.rank), "MPI_Comm_rank");
    mpi_check(MPI_Comm_size(sub, &c->view_.size), "MPI_Comm_size");
    c->cfg_ = cfg_;
    // An NCCL communicator belongs to the parent's ranks; the NCCL backend splits it itself.
    c->cfg_.nccl_comm = nullptr;
    c->view_.nccl = nullptr;
    c->view_.stream = view_.stream;
    c->policy_ = policy_;
    c->policy_.nccl_attached = false;
    c->cuda_aware_source_ = cuda_aware_source_;
    return c;
}

Communicator::~Communicator()
{
    if (view_.mpi == MPI_COMM_NULL) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    // Freeing after MPI_Finalize is erroneous; the handle is gone with MPI then anyway.
    if (!finalized) MPI_Comm_free(&view_.mpi);
}

}  // namespace plm::comm
