// Communicator entry points.
#include <cstring>
#include <memory>

#include "c_api/guard.hpp"

using namespace plm;
using detail::guard;

namespace {

// Throws; the entry points wrap it in guard().
void create(MPI_Comm mpi, const plm_comm_config_t *cfg, plm_comm_t *out)
{
    // An unusable MPI handle cannot be agreed on; every other error is.
    comm::require_user_comm(mpi);
    std::unique_ptr<plm_comm_s> h;
    std::optional<Error> local = comm::capture([&] {
        detail::clear_out(out, "out");
        comm::read_config(cfg);
        h.reset(new plm_comm_s());
    });
    // Collective: every rank duplicates (a rank with bad arguments with the defaults), then
    // all agree on the new communicator; a failure frees it on every rank.
    std::shared_ptr<comm::Communicator> c = comm::Communicator::create(mpi, local ? nullptr : cfg, local);
    h->magic = detail::kCommMagic;
    h->comm = std::move(c);
    *out = h.release();
}

}  // namespace

extern "C" {

PLM_API size_t plm_comm_config_struct_size(void) { return sizeof(plm_comm_config_t); }

PLM_API plm_status_t plm_comm_config_init(plm_comm_config_t *cfg, size_t struct_size)
{
    return guard([&] {
        PLM_REQUIRE(cfg, PLM_ERR_INVALID_ARG, "cfg is NULL");
        PLM_REQUIRE(struct_size >= offsetof(plm_comm_config_t, nccl_comm) + sizeof(void *), PLM_ERR_INVALID_ARG,
                    "struct_size %zu is smaller than any released plm_comm_config_t", struct_size);
        const plm_comm_config_t def = PLM_COMM_CONFIG_INITIALIZER;
        std::memset(cfg, 0, struct_size);
        std::memcpy(cfg, &def, struct_size < sizeof def ? struct_size : sizeof def);
        cfg->struct_size = struct_size;
    });
}

PLM_API plm_status_t plm_comm_create(MPI_Comm mpi_comm, const plm_comm_config_t *config, plm_comm_t *out)
{
    return guard([&] {
        if (out) *out = nullptr;
        create(mpi_comm, config, out);
    });
}

// pylopsmpi_ffi.h (scripts/gen-api) writes MPI_Fint as int for FFIs that cannot include mpi.h.
static_assert(sizeof(MPI_Fint) == sizeof(int), "pylopsmpi_ffi.h declares MPI_Fint as int");

PLM_API plm_status_t plm_comm_create_f(MPI_Fint mpi_comm, const plm_comm_config_t *config, plm_comm_t *out)
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

PLM_API plm_status_t plm_comm_get_async_error(plm_const_comm_t comm, plm_status_t *error, char *message, size_t size)
{
    return guard([&] {
        if (message && size) message[0] = '\0';
        PLM_REQUIRE(error, PLM_ERR_INVALID_ARG, "error is NULL");
        *error = PLM_SUCCESS;
        const comm::Communicator &c = detail::comm_of(comm);
        *error = c.async_error();
        if (message && size) c.poison().message(message, size);
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

}  // extern "C"
