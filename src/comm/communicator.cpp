#include "comm/communicator.hpp"
#include "comm/agreement.hpp"

#include <cstdlib>
#include <cstring>
#include <utility>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace plm::comm {

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

namespace {

// This rank's index among the ranks of comm on its node. Collective on comm.
int node_local_rank(MPI_Comm comm)
{
    MPI_Comm node = MPI_COMM_NULL;
    mpi_check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    int local = 0;
    const int rc = MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    mpi_check(rc, "MPI_Comm_rank");
    return local;
}

// config.device, else the device of an attached NCCL communicator, else node-local rank
// modulo the visible devices (PyLops-MPI's rule); -1 without a device.
int choose_device(const Config &cfg, int node_rank)
{
    const int n = device_count();
    if (n == 0) return -1;
    const int wanted = cfg.device;
    PLM_REQUIRE(wanted < n, PLM_ERR_INVALID_ARG, "plm_comm_config_t.device %d, but %d CUDA device(s) are visible",
                wanted, n);
#ifdef PLM_HAVE_NCCL
    if (cfg.nccl_comm) {
        const int d = nccl_comm_device(cfg.nccl_comm);
        PLM_REQUIRE(wanted < 0 || wanted == d, PLM_ERR_INVALID_ARG,
                    "plm_comm_config_t.device %d, but the attached NCCL communicator is on device %d", wanted, d);
        return d;
    }
#endif
    return wanted >= 0 ? wanted : node_rank % n;
}

}  // namespace

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
    c.backend = static_cast<plm_backend_t>(backend);
    c.cuda_aware = cfg->cuda_aware;
    c.device = cfg->device;
    c.stream = cfg->stream;
    c.nccl_comm = cfg->nccl_comm;
    return c;
}

std::shared_ptr<Communicator> Communicator::create(MPI_Comm user, const plm_comm_config_t *user_cfg,
                                                  const std::optional<Error> &prior)
{
    // The collective first: every rank duplicates, whatever its arguments. Until the new
    // communicator exists, a shell on the stack owns the duplicate (its destructor frees it if
    // anything below throws) and the agreement runs on it.
    Communicator shell;
    mpi_check(MPI_Comm_dup(user, &shell.view_.mpi), "MPI_Comm_dup");
    mpi_check(MPI_Comm_set_errhandler(shell.view_.mpi, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    mpi_check(MPI_Comm_rank(shell.view_.mpi, &shell.view_.rank), "MPI_Comm_rank");
    mpi_check(MPI_Comm_size(shell.view_.mpi, &shell.view_.size), "MPI_Comm_size");

    Agreement ag(shell, "comm_create");
    ag.add_error(prior);
    Config cfg;
    std::shared_ptr<Communicator> c;
    ag.check([&] {
        cfg = read_config(user_cfg);
        c.reset(new Communicator());
        c->host_ = make_mpi_host(shell.view_);
    });
    // A forced backend or an attached NCCL communicator on some ranks only is an error; a
    // rank whose environment or MPI says otherwise about CUDA-awareness is outvoted.
    ag.fold(cfg.backend);
    ag.fold(cfg.nccl_comm != nullptr);
    const CudaAwareDecision d =
        decide_cuda_aware(cfg.cuda_aware, std::getenv("PYLOPS_MPI_CUDA_AWARE"), vendor_cuda_aware_query());
    const bool nccl_on = nccl_enabled_from_env(std::getenv("PYLOPS_MPI_NCCL"), std::getenv("NCCL_PYLOPS_MPI"));
    // Every rank takes part in the node split, whatever its checks found.
    const int node_rank = cuda_built() ? node_local_rank(shell.view_.mpi) : 0;
    int device = -1;
    ag.check([&] { device = choose_device(cfg, node_rank); });
    const size_t lo = ag.add_lanes(3, LaneOp::min), hi = ag.add_lanes(1, LaneOp::max);
    ag.set(lo, d.yes);
    ag.set(lo + 1, nccl_on);
    ag.set(lo + 2, device >= 0);
    ag.set(hi, d.yes);
    ag.run();

    c->view_ = std::exchange(shell.view_, CommView{});  // c owns the duplicate from here
    c->agreements_ = 1;                                 // this agreement, as on every rank
    c->cfg_ = cfg;
    c->device_id_ = device;
    // Device backends only where every rank has a device (their creation is collective).
    c->devices_everywhere_ = ag.get(lo + 2) == 1;
    c->policy_.forced = cfg.backend;
    c->policy_.cuda_aware = ag.get(lo) == 1;
    c->cuda_aware_source_ = ag.get(lo) == ag.get(hi) ? d.source : PLM_CUDA_AWARE_FROM_AGREEMENT;
    // Forcing NCCL without a communicator of one's own asks the library to make one.
    c->policy_.nccl_attached = cfg.nccl_comm != nullptr || cfg.backend == PLM_BACKEND_NCCL;
    c->policy_.nccl_enabled = ag.get(lo + 1) == 1;
    if (c->device_backend_wanted())  // collective (NCCL) and allocating: a second agreement
        finish_collective(*c, "comm_create (device backend)", {}, [&] {
            c->make_device_backend();
            return true;
        });
    return c;
}

bool Communicator::device_backend_wanted() const { return devices_everywhere_ && backend_built(backend_for(Space::device)); }

void Communicator::make_device_backend()
{
    const plm_backend_t b = backend_for(Space::device);
    // backend() reports it when device memory is used.
    if (!device_backend_wanted()) return;
    if (b == PLM_BACKEND_MPI_CUDA_AWARE) device_ = make_mpi_cuda_aware(view_);
    if (b == PLM_BACKEND_MPI_STAGED)
        device_ = make_mpi_staged(view_, Space::device, space_ops(Space::pinned) ? Space::pinned : Space::host);
#ifdef PLM_HAVE_NCCL
    // Collective, and fails on every rank alike (a shared GPU, a failed initialisation).
    if (b == PLM_BACKEND_NCCL) device_ = make_nccl(view_, cfg_.nccl_comm, device_id_);
#endif
}

Stream Communicator::stream() const
{
    if (stream_owner_) return stream_owner_->stream();
    if (cfg_.stream || device_id_ < 0) return Stream{cfg_.stream};
    std::lock_guard<std::mutex> g(groups_lock_);
    if (!own_stream_) own_stream_ = create_stream(device_id_);
    return Stream{own_stream_};
}

void Communicator::set_stream(void *stream)
{
    // Work queued so far finishes before work queued on the new stream. A library stream
    // not made yet has nothing queued: it is not created just to be waited for.
    void *current = cfg_.stream ? cfg_.stream : own_stream_;
    if (current) require_space(Space::device).synchronize(Stream{current});
    cfg_.stream = stream;
}

Exec Communicator::exec(Space s) const
{
    if (s != Space::device) return Exec{s, device_id_, {}};
    use_device(device_id_);
    return Exec{s, device_id_, stream()};
}

Backend &Communicator::backend(Space s) const
{
    Backend *b = s == Space::device ? device_.get() : host_.get();
    PLM_REQUIRE(b, PLM_ERR_BACKEND_UNAVAILABLE,
                "backend %s chosen for %s memory is not available (not in this build, or not every rank has a "
                "CUDA device)",
                plm_backend_name(backend_for(s)), space_name(s));
    return *b;
}

const Communicator &Communicator::mask_group(const std::vector<int> &mask) const
{
    std::lock_guard<std::mutex> g(groups_lock_);
    for (auto *m : {&groups_, &pending_groups_}) {
        auto it = m->find(mask);
        if (it != m->end()) return *it->second;
    }
    PLM_FAIL(PLM_ERR_INTERNAL, "the group of a mask was used before it was made");
}

void Communicator::prepare_mask_group(const std::vector<int> &mask) const
{
    {
        std::lock_guard<std::mutex> g(groups_lock_);
        if (groups_.count(mask) || pending_groups_.count(mask)) return;
    }
    // The same on every rank (the caches agree), so every rank splits, or none.
    std::shared_ptr<Communicator> sub = split(mask[static_cast<size_t>(rank())], rank(), false);
    sub->stream_owner_ = this;  // group traffic of this communicator's arrays stays ordered on its stream
    std::lock_guard<std::mutex> g(groups_lock_);
    pending_groups_.emplace(mask, std::move(sub));
}

void Communicator::commit_mask_groups() const noexcept
{
    std::lock_guard<std::mutex> g(groups_lock_);
    while (!pending_groups_.empty()) groups_.insert(pending_groups_.extract(pending_groups_.begin()));  // moves nodes
}

void Communicator::drop_mask_groups() const noexcept
{
    std::lock_guard<std::mutex> g(groups_lock_);
    pending_groups_.clear();
}

std::shared_ptr<Communicator> Communicator::split(int color, int key, bool eager) const
{
    PLM_REQUIRE(color >= 0, PLM_ERR_INVALID_ARG, "split color must be non-negative (got %d)", color);
    // The collective first (every rank reaches it), then what may fail on one rank alone; the
    // new MPI communicator is freed if that fails.
    MPI_Comm sub = MPI_COMM_NULL;
    mpi_check(MPI_Comm_split(view_.mpi, color, key, &sub), "MPI_Comm_split");
    std::shared_ptr<Communicator> c;
    const std::optional<Error> err = capture([&] {
        try {
            c.reset(new Communicator());
        } catch (...) {
            MPI_Comm_free(&sub);
            throw;
        }
        c->view_.mpi = sub;  // from here its destructor frees it
        mpi_check(MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
        mpi_check(MPI_Comm_rank(sub, &c->view_.rank), "MPI_Comm_rank");
        mpi_check(MPI_Comm_size(sub, &c->view_.size), "MPI_Comm_size");
        c->cfg_ = cfg_;
        c->cfg_.nccl_comm = nullptr;  // the parent's; an NCCL backend's split makes the sub's own
        c->policy_ = policy_;
        c->cuda_aware_source_ = cuda_aware_source_;
        // Each backend makes its own state for the sub-communicator (the split hook).
        c->host_ = host_->split(c->view_);
        c->device_id_ = device_id_;
        c->devices_everywhere_ = devices_everywhere_;
        if (device_) c->device_ = device_->split(c->view_);
    });
    if (!eager || !device_) {
        if (err) throw *err;  // the caller's agreement carries it
        return c;
    }
    // The device state now (an NCCL initialisation, in each group; fails in some groups only):
    // agreed over all of this communicator, with whatever failed above.
    Agreement ag(*this, "comm_split (device backend)");
    ag.add_error(err);
    if (!err) ag.add_error(capture([&] { c->device_->prepare(); }));
    ag.run();
    return c;
}

Communicator::~Communicator()
{
    // Mask groups and backends go first: their state may refer to the MPI communicator.
    pending_groups_.clear();
    groups_.clear();
    host_.reset();
    device_.reset();
    destroy_stream(own_stream_);
    if (view_.mpi == MPI_COMM_NULL) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    // Freeing after MPI_Finalize is erroneous; the handle is gone with MPI then anyway.
    if (!finalized) MPI_Comm_free(&view_.mpi);
}

}  // namespace plm::comm
