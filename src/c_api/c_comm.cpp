// Communicator entry points (pylopsmpi/comm.h), and which backends and memory spaces exist.
#include <cstring>
#include <memory>

#include "c_api/guard.hpp"
#include "comm/backend.hpp"

using namespace plm;
using detail::guard;

namespace {

plm_comm_config_s &config_of(plm_comm_config_s *h)
{
    PLM_REQUIRE(h && h->magic == detail::kConfigMagic, PLM_ERR_INVALID_ARG,
                "plm_comm_config_t is not a valid config object (NULL or destroyed)");
    return *h;
}

// Throws; the entry points wrap it in guard().
void create(MPI_Comm mpi, plm_const_comm_config_t cfg, plm_comm_t *out)
{
    // An unusable MPI handle cannot be agreed on; every other error is.
    comm::require_user_comm(mpi);
    std::unique_ptr<plm_comm_s> h;
    comm::Config config;
    std::optional<Error> local = comm::capture([&] {
        detail::clear_out(out, "out");
        if (cfg) config = config_of(const_cast<plm_comm_config_s *>(cfg)).config;
        h.reset(new plm_comm_s());
    });
    // Collective: every rank duplicates (a rank with bad arguments with the defaults), then
    // all agree on the new communicator; a failure frees it on every rank.
    std::shared_ptr<comm::Communicator> c = comm::Communicator::create(mpi, &config, local);
    h->magic = detail::kCommMagic;
    h->comm = std::move(c);
    *out = h.release();
}

// Runs set on a valid config object.
template <typename F> plm_status_t set_config(plm_comm_config_t cfg, F &&set)
{
    return guard([&] { set(config_of(cfg).config); });
}

#ifdef PLM_HAVE_CUDA
constexpr bool kCudaBuilt = true;
#else
constexpr bool kCudaBuilt = false;
#endif
#ifdef PLM_HAVE_NCCL
constexpr bool kNcclBuilt = true;
#else
constexpr bool kNcclBuilt = false;
#endif
}  // namespace

extern "C" {

PLM_API plm_status_t plm_comm_config_create(plm_comm_config_t *out)
{
    return guard([&] {
        detail::clear_out(out, "out");
        std::unique_ptr<plm_comm_config_s> h(new plm_comm_config_s());
        h->magic = detail::kConfigMagic;
        *out = h.release();
    });
}

PLM_API plm_status_t plm_comm_config_destroy(plm_comm_config_t *config)
{
    return guard([&] {
        if (!config || !*config) return;
        config_of(*config).magic = 0;
        delete *config;
        *config = nullptr;
    });
}

PLM_API plm_status_t plm_comm_config_set_backend(plm_comm_config_t config, plm_backend_t backend)
{
    return set_config(config, [&](comm::Config &c) {
        comm::check_config_backend(enum_value(backend));
        c.backend = backend;
    });
}

PLM_API plm_status_t plm_comm_config_set_cuda_aware(plm_comm_config_t config, int cuda_aware)
{
    return set_config(config, [&](comm::Config &c) {
        comm::check_config_cuda_aware(cuda_aware);
        c.cuda_aware = cuda_aware;
    });
}

PLM_API plm_status_t plm_comm_config_set_device(plm_comm_config_t config, int device)
{
    return set_config(config, [&](comm::Config &c) {
        comm::check_config_device(device);
        c.device = device;
    });
}

PLM_API plm_status_t plm_comm_config_set_stream(plm_comm_config_t config, void *stream)
{
    return set_config(config, [&](comm::Config &c) { c.stream = stream; });
}

PLM_API plm_status_t plm_comm_config_set_nccl_comm(plm_comm_config_t config, void *nccl_comm)
{
    return set_config(config, [&](comm::Config &c) { c.nccl_comm = nccl_comm; });
}

PLM_API plm_status_t plm_comm_create(MPI_Comm mpi_comm, plm_const_comm_config_t config, plm_comm_t *out)
{
    return guard([&] {
        if (out) *out = nullptr;
        create(mpi_comm, config, out);
    });
}

PLM_API plm_status_t plm_comm_create_f(MPI_Fint mpi_comm, plm_const_comm_config_t config, plm_comm_t *out)
{
    return guard([&] {
        if (out) *out = nullptr;
        create(comm::comm_from_fortran(mpi_comm), config, out);
    });
}

PLM_API plm_status_t plm_comm_destroy(plm_comm_t *comm)
{
    return guard([&] {
        if (!comm || !*comm) return;
        detail::comm_of(*comm);
        PLM_REQUIRE(!(*comm)->borrowed, PLM_ERR_INVALID_ARG,
                    "this plm_comm_t was lent by plm_array_get_comm() and must not be destroyed");
        (*comm)->magic = 0;
        delete *comm;
        *comm = nullptr;
    });
}

PLM_API plm_status_t plm_comm_rank(plm_const_comm_t comm, int *rank)
{
    return guard([&] {
        PLM_REQUIRE(rank, PLM_ERR_INVALID_ARG, "rank is NULL");
        *rank = detail::comm_of(comm).rank();
    });
}

PLM_API plm_status_t plm_comm_size(plm_const_comm_t comm, int *size)
{
    return guard([&] {
        PLM_REQUIRE(size, PLM_ERR_INVALID_ARG, "size is NULL");
        *size = detail::comm_of(comm).size();
    });
}

PLM_API plm_status_t plm_comm_get_mpi(plm_const_comm_t comm, MPI_Comm *mpi_comm)
{
    return guard([&] {
        PLM_REQUIRE(mpi_comm, PLM_ERR_INVALID_ARG, "mpi_comm is NULL");
        *mpi_comm = detail::comm_of(comm).mpi();
    });
}

PLM_API plm_status_t plm_comm_get_mpi_f(plm_const_comm_t comm, MPI_Fint *mpi_comm)
{
    return guard([&] {
        PLM_REQUIRE(mpi_comm, PLM_ERR_INVALID_ARG, "mpi_comm is NULL");
        *mpi_comm = MPI_Comm_c2f(detail::comm_of(comm).mpi());
    });
}

PLM_API plm_status_t plm_comm_split(plm_comm_t comm, int color, int key, plm_comm_t *out)
{
    return guard([&] {
        if (out) *out = nullptr;
        comm::Communicator &c = detail::comm_of(comm);
        comm::Agreement ag(c, "comm_split");
        std::unique_ptr<plm_comm_s> h;
        ag.check([&] {
            detail::clear_out(out, "out");
            h.reset(new plm_comm_s());
        });
        // Made before the agreement ends (every rank takes part); its failures are agreed.
        std::shared_ptr<comm::Communicator> sub = c.split(ag, color, key);
        ag.run();
        sub->mark_agreed();
        h->magic = detail::kCommMagic;
        h->comm = std::move(sub);
        *out = h.release();
    });
}

PLM_API plm_status_t plm_comm_get_backend(plm_const_comm_t comm, plm_memory_t memory, plm_backend_t *backend)
{
    return guard([&] {
        PLM_REQUIRE(backend, PLM_ERR_INVALID_ARG, "backend is NULL");
        const comm::Communicator &c = detail::comm_of(comm);
        const Space s = space_from_public(enum_value(memory));
        const plm_backend_t b = c.backend_for(s);
        *backend = b;
        PLM_REQUIRE(comm::backend_built(b), PLM_ERR_BACKEND_UNAVAILABLE,
                    "the policy picks %s for %s memory, which is not in this build", plm_backend_name(b),
                    space_name(s));
    });
}

PLM_API plm_status_t plm_comm_get_cuda_aware(plm_const_comm_t comm, int *yes, plm_cuda_aware_source_t *source)
{
    return guard([&] {
        PLM_REQUIRE(yes, PLM_ERR_INVALID_ARG, "yes is NULL");
        const comm::Communicator &c = detail::comm_of(comm);
        *yes = c.policy().cuda_aware ? 1 : 0;
        if (source) *source = c.cuda_aware_source();
    });
}

PLM_API plm_status_t plm_comm_get_device(plm_const_comm_t comm, int *device)
{
    return guard([&] {
        PLM_REQUIRE(device, PLM_ERR_INVALID_ARG, "device is NULL");
        *device = detail::comm_of(comm).device();
    });
}

PLM_API plm_status_t plm_comm_get_stream(plm_const_comm_t comm, void **stream)
{
    return guard([&] {
        PLM_REQUIRE(stream, PLM_ERR_INVALID_ARG, "stream is NULL");
        *stream = nullptr;
        const comm::Communicator &c = detail::comm_of(comm);
        require_space(Space::device);
        *stream = c.stream().handle;
    });
}

PLM_API plm_status_t plm_comm_set_stream(plm_comm_t comm, void *stream)
{
    return guard([&] {
        comm::Communicator &c = detail::comm_of(comm);
        require_space(Space::device);
        c.set_stream(stream);
    });
}

PLM_API plm_status_t plm_comm_get_async_error(plm_const_comm_t comm, plm_status_t *error, char *message, int64_t size)
{
    return guard([&] {
        if (message && size > 0) message[0] = '\0';
        PLM_REQUIRE(error, PLM_ERR_INVALID_ARG, "error is NULL");
        PLM_REQUIRE(size >= 0, PLM_ERR_INVALID_ARG, "size %lld is negative", static_cast<long long>(size));
        *error = PLM_SUCCESS;
        const comm::Communicator &c = detail::comm_of(comm);
        *error = c.async_error();
        if (message && size > 0) c.poison().message(message, static_cast<size_t>(size));
    });
}

PLM_API plm_status_t plm_comm_abort(plm_comm_t comm, int errorcode)
{
    return guard([&] {
        const comm::Communicator &c = detail::comm_of(comm);
        comm::require_mpi_usable();
        c.abort(errorcode);
        PLM_FAIL(PLM_ERR_MPI, "MPI_Abort returned");
    });
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

PLM_API plm_status_t plm_backend_compiled(plm_backend_t backend, int *yes)
{
    return detail::guard([&] {
        PLM_REQUIRE(yes, PLM_ERR_INVALID_ARG, "yes is NULL");
        *yes = 0;
        const int b = enum_value(backend);
        PLM_REQUIRE(b >= PLM_BACKEND_MPI_HOST && b <= PLM_BACKEND_NCCL, PLM_ERR_INVALID_ARG,
                    "%d is not a concrete plm_backend_t", b);
        *yes = b == PLM_BACKEND_MPI_HOST || (b == PLM_BACKEND_NCCL ? kNcclBuilt : kCudaBuilt);
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
