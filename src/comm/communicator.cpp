#include "comm/communicator.hpp"
#include "core/sim.hpp"
#include "comm/agreement.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

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
    PLM_REQUIRE(wanted < n, PLM_ERR_INVALID_ARG, "config device %d, but %d CUDA device(s) are visible",
                wanted, n);
#ifdef PLM_HAVE_NCCL
    if (cfg.nccl_comm) {
        const int d = nccl_comm_device(cfg.nccl_comm);
        PLM_REQUIRE(wanted < 0 || wanted == d, PLM_ERR_INVALID_ARG,
                    "config device %d, but the attached NCCL communicator is on device %d", wanted, d);
        return d;
    }
#endif
    return wanted >= 0 ? wanted : node_rank % n;
}

}  // namespace

void check_config_backend(int backend)
{
    PLM_REQUIRE(backend >= PLM_BACKEND_AUTO && backend <= PLM_BACKEND_NCCL, PLM_ERR_INVALID_ARG,
                "backend %d is not a plm_backend_t", backend);
    PLM_REQUIRE(backend != PLM_BACKEND_MPI_HOST, PLM_ERR_INVALID_ARG,
                "the config cannot force mpi_host for device memory (host memory always uses it)");
}

void check_config_cuda_aware(int cuda_aware)
{
    PLM_REQUIRE(cuda_aware >= -1 && cuda_aware <= 1, PLM_ERR_INVALID_ARG, "cuda_aware must be -1, 0 or 1 (got %d)",
                cuda_aware);
}

void check_config_device(int device)
{
    PLM_REQUIRE(device >= -1, PLM_ERR_INVALID_ARG, "device must be >= -1 (got %d)", device);
}

std::shared_ptr<Communicator> Communicator::create(MPI_Comm user, const Config *user_cfg,
                                                  const std::optional<Error> &prior)
{
    // The duplicate lives in a communicator on the stack until the agreement: a rank whose
    // allocations fail still takes part in the duplication and the agreement.
    Communicator tmp;
    mpi_check(MPI_Comm_dup(user, &tmp.view_.mpi), "MPI_Comm_dup");
    // From here tmp's destructor frees the duplicate if anything below throws.
    mpi_check(MPI_Comm_set_errhandler(tmp.view_.mpi, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    mpi_check(MPI_Comm_rank(tmp.view_.mpi, &tmp.view_.rank), "MPI_Comm_rank");
    mpi_check(MPI_Comm_size(tmp.view_.mpi, &tmp.view_.size), "MPI_Comm_size");
#ifdef PLM_SMPI
    {  // sampled computation's sampler is world rank 0 (core/sim.hpp)
        int world = 0;
        mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &world), "MPI_Comm_rank");
        sim::set_world_rank(world);
    }
#endif

    Agreement ag(tmp, "comm_create");
    ag.add_error(prior);
    std::shared_ptr<Communicator> c;
    ag.check([&] {
        c.reset(new Communicator());
        c->poison_ = std::make_shared<Poison>();
    });
    Config cfg;
    if (user_cfg) cfg = *user_cfg;
    // A forced backend or an attached NCCL communicator on some ranks only is an error; a
    // rank whose environment or MPI says otherwise about CUDA-awareness is outvoted.
    ag.fold(cfg.backend);
    ag.fold(cfg.nccl_comm != nullptr);
    const CudaAwareDecision d =
        decide_cuda_aware(cfg.cuda_aware, std::getenv("PYLOPS_MPI_CUDA_AWARE"), vendor_cuda_aware_query());
    const bool nccl_on = nccl_enabled_from_env(std::getenv("PYLOPS_MPI_NCCL"), std::getenv("NCCL_PYLOPS_MPI"));
    // Every rank takes part in the node split, whatever its checks found.
    const int node_rank = cuda_built() ? node_local_rank(tmp.view_.mpi) : 0;
    int device = -1;
    ag.check([&] { device = choose_device(cfg, node_rank); });
    const size_t lo = ag.add_lanes(3, LaneOp::min), hi = ag.add_lanes(1, LaneOp::max);
    ag.set(lo, d.yes);
    ag.set(lo + 1, nccl_on);
    ag.set(lo + 2, device >= 0);
    ag.set(hi, d.yes);
    ag.run();

    c->view_ = tmp.view_;
    c->view_.poison = c->poison_.get();
    tmp.view_.mpi = MPI_COMM_NULL;  // c owns the duplicate now
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
    // The backends follow from the agreed policy: a second agreement, inside whose check they
    // are made (NCCL's creation fails on every rank alike), so nothing is made after one.
    Agreement made(*c, "comm_create (backends)");
    made.check([&] { c->make_backends(); });
    made.run();
    c->agreed_ = true;
    return c;
}

void Communicator::make_backends()
{
    host_ = make_mpi_host(view_);
    const plm_backend_t b = backend_for(Space::device);
    // backend() reports it when device memory is used.
    if (!devices_everywhere_ || !backend_built(b)) return;
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

void Communicator::reserve(Space s, std::size_t bytes) const
{
    if (s == Space::device && device_) device_->reserve(bytes);
}

const Communicator &Communicator::mask_group(const std::vector<int> &mask) const
{
    std::lock_guard<std::mutex> g(groups_lock_);
    auto it = groups_.find(mask);
    // Never made here: a split that some ranks reach and others do not would hang.
    PLM_REQUIRE(it != groups_.end(), PLM_ERR_INTERNAL, "the group of a mask was used before prepare_mask_group");
    return *it->second;
}

namespace {

// One multiply-xorshift step per value, as the agreement's fingerprint.
uint64_t fingerprint(const std::vector<int> &v)
{
    uint64_t h = 1469598103934665603ull ^ v.size();
    for (int x : v) {
        h = (h ^ static_cast<uint64_t>(static_cast<int64_t>(x))) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    return h;
}

}  // namespace

bool Communicator::prepare_mask_group(Agreement &ag, const std::vector<int> &mask, Space s, bool mask_agreed) const
{
    alloc::Allowed allowed;  // part of the caller's checks: failures are agreed
    // An empty mask is "no mask group": nothing to make, but a rank passing one still takes
    // part, so ranks that differ in having a mask are found out together.
    bool valid = mask.empty() || mask.size() == static_cast<size_t>(size());
    for (int m : mask) valid = valid && m >= 0;
    if (!valid)
        ag.add_error(capture([&] {
            PLM_FAIL(PLM_ERR_INVALID_ARG, "mask has %zu entries (one id >= 0 per rank of %d expected)", mask.size(),
                     size());
        }));
    const bool device = s == Space::device && device_;
    bool have = mask.empty();
    if (valid && !have) {
        std::lock_guard<std::mutex> g(groups_lock_);
        auto it = groups_.find(mask);
        have = it != groups_.end() && (!device || it->second->device_ready_);
    }
    // An agreed mask finds the same cache on every rank (groups are only ever made here, on
    // every rank alike).
    if (mask_agreed && have) return true;
    // Otherwise every rank learns whether all may go on: none failed, the same mask, and
    // whether some rank still lacks the group.
    const uint64_t h = fingerprint(mask);
    int64_t in[4] = {ag.ok() && valid ? 0 : 1, static_cast<int64_t>(h), static_cast<int64_t>(~h), have ? 0 : 1}, out[4];
    const int rc = MPI_Allreduce(in, out, 4, MPI_INT64_T, MPI_MAX, view_.mpi);
    if (rc != MPI_SUCCESS) {
        ag.add_error(capture([&] { mpi_check(rc, "MPI_Allreduce (mask group)"); }));
        return false;
    }
    if (out[0]) return false;  // a failed rank: its error fails ag.run() on every rank
    if (out[1] != ~out[2]) {
        ag.add_error(capture([&] {
            PLM_FAIL(PLM_ERR_INVALID_ARG, "ranks passed different masks (they must be equal on every rank)");
        }));
        return false;
    }
    if (!out[3] || mask.empty()) return true;  // every rank has it ready, or no rank has a mask
    // Made on every rank; the device state among each group's ranks (all of them are here).
    bool made = false;
    std::optional<Error> err;
    std::shared_ptr<Communicator> grp;
    {
        std::lock_guard<std::mutex> g(groups_lock_);
        auto it = groups_.find(mask);
        made = it == groups_.end();
        if (!made) grp = it->second;
    }
    if (made) {
        grp = split_raw(mask[static_cast<size_t>(rank())], rank(), device, err);
        if (grp)
            err = capture([&] {
                grp->stream_owner_ = this;
                std::lock_guard<std::mutex> g(groups_lock_);
                groups_.emplace(mask, grp);
            });
    } else if (device && grp->device_) {
        err = capture([&] { grp->device_->prepare(); });  // every member has the group: all are here
    }
    // The outcome over all ranks, so the cache stays the same everywhere: a group made in a
    // call that failed somewhere is dropped on every rank, and "ready" is set everywhere or
    // nowhere.
    int ok = err ? 0 : 1, all = 0;
    const int rc2 = MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, view_.mpi);
    if (rc2 != MPI_SUCCESS && !err) err = capture([&] { mpi_check(rc2, "MPI_Allreduce (mask group)"); });
    {
        std::lock_guard<std::mutex> g(groups_lock_);
        auto it = groups_.find(mask);
        if (it != groups_.end()) {
            if (all && device) it->second->device_ready_ = true;
            if (all) it->second->agreed_ = true;
            if (!all && made) groups_.erase(it);  // not agreed: its device state is aborted
        }
    }
    ag.add_error(err);
    return all != 0;
}

int Communicator::next_plan_tags(int n) const
{
    // Tags kPlanTagBase.. are the plans'; they wrap well below the MPI minimum of 32767.
    constexpr int kPlanTagBase = 1000, kPlanTags = 30000;
    if (next_tag_ + n > kPlanTags) next_tag_ = 0;
    const int t = kPlanTagBase + next_tag_;
    next_tag_ += n;
    return t;
}

std::shared_ptr<Communicator> Communicator::adopt_split(MPI_Comm raw) const
{
    std::shared_ptr<Communicator> c(new Communicator());
    CommView v{raw, 0, 1, poison_.get()};
    mpi_check(MPI_Comm_set_errhandler(raw, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    mpi_check(MPI_Comm_rank(raw, &v.rank), "MPI_Comm_rank");
    mpi_check(MPI_Comm_size(raw, &v.size), "MPI_Comm_size");
    c->poison_ = poison_;
    c->cfg_ = cfg_;
    c->cfg_.nccl_comm = nullptr;  // the parent's; an NCCL backend's split makes the sub's own
    c->policy_ = policy_;
    c->cuda_aware_source_ = cuda_aware_source_;
    // Each backend makes its own state for the sub-communicator (the split hook).
    c->host_ = host_->split(v);
    c->device_id_ = device_id_;
    c->devices_everywhere_ = devices_everywhere_;
    if (device_) c->device_ = device_->split(v);
    c->view_ = v;  // last: from here c frees raw
    return c;
}

std::shared_ptr<Communicator> Communicator::split_raw(int color, int key, bool device, std::optional<Error> &err) const
{
    MPI_Comm raw = MPI_COMM_NULL;
    err = capture([&] { mpi_check(MPI_Comm_split(view_.mpi, color, key, &raw), "MPI_Comm_split"); });
    if (raw == MPI_COMM_NULL) return nullptr;
    std::shared_ptr<Communicator> sub;
    err = capture([&] { sub = adopt_split(raw); });
    // The device state is made among the group's ranks: only when every one of them has its
    // communicator (a rank whose allocation failed above must not leave the others waiting).
    int ok = err ? 0 : 1, all = 0;
    const int rc = MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, raw);
    if (rc != MPI_SUCCESS && !err) err = capture([&] { mpi_check(rc, "MPI_Allreduce (split)"); });
    if (!err && all && device && sub->device_) err = capture([&] { sub->device_->prepare(); });
    if (!sub) MPI_Comm_free(&raw);
    if (err) sub.reset();
    return sub;
}

std::shared_ptr<Communicator> Communicator::split(Agreement &ag, int color, int key) const
{
    alloc::Allowed allowed;  // part of the caller's checks: failures are agreed
    if (color < 0)
        ag.add_error(capture([&] { PLM_FAIL(PLM_ERR_INVALID_ARG, "split color must be non-negative (got %d)", color); }));
    // Every rank takes part; one that failed a check so far joins no group.
    std::optional<Error> err;
    std::shared_ptr<Communicator> sub = split_raw(ag.ok() ? color : MPI_UNDEFINED, key, true, err);
    ag.add_error(err);
    return sub;
}

std::shared_ptr<Communicator> Communicator::split(int color, int key) const
{
    Agreement ag(*this, "comm_split");
    std::shared_ptr<Communicator> sub = split(ag, color, key);
    ag.run();
    if (sub) sub->mark_agreed();
    return sub;
}

std::optional<Error> Communicator::poison_error() const
{
    if (!poisoned()) return std::nullopt;
    return poison_->error();
}

void Communicator::fail_unagreed(const Error &e) const { comm::fail_unagreed(poison_.get(), e); }

plm_status_t Communicator::async_error() const
{
    if (!poison_->set()) {
        if (device_) device_->async_error();  // poisons on an error
        std::lock_guard<std::mutex> g(groups_lock_);
        for (auto &kv : groups_)
            if (kv.second->device_) kv.second->device_->async_error();
    }
    return poison_->status();
}

void Communicator::abort(int errorcode) const noexcept
{
    {
        std::lock_guard<std::mutex> g(groups_lock_);
        for (auto &kv : groups_)
            if (kv.second->device_) kv.second->device_->abort();
    }
    if (device_) device_->abort();
    MPI_Abort(view_.mpi, errorcode);
}

namespace {

// One bounded MPI_MAX reduction of flag: the result, or -1 when it failed or did not complete
// within `seconds` (then MPI may still write its memory, which is left alone).
int bounded_max(MPI_Comm comm, int flag, double seconds) noexcept
{
    struct Flags {
        int mine, all;
    };
    Flags *f = new (std::nothrow) Flags{flag, 0};
    if (!f) return -1;
    MPI_Request r = MPI_REQUEST_NULL;
    if (MPI_Iallreduce(&f->mine, &f->all, 1, MPI_INT, MPI_MAX, comm, &r) != MPI_SUCCESS) {
        delete f;
        return -1;
    }
    bool failed = false;
    const bool done = poll_for(
        [&] {
            int ready = 0;
            if (MPI_Test(&r, &ready, MPI_STATUS_IGNORE) != MPI_SUCCESS) failed = true;
            return ready != 0 || failed;
        },
        seconds);
    if (!done) {
        // f stays: the reduction is still posted. Kept where leak checkers see it.
        static std::atomic<Flags *> abandoned[16];
        for (auto &slot : abandoned) {
            Flags *none = nullptr;
            if (slot.compare_exchange_strong(none, f)) break;
        }
        return -1;
    }
    const int all = failed ? -1 : f->all;
    delete f;
    return all;
}

}  // namespace

bool Communicator::meet() noexcept
{
    int init = 0, done = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&done);
    if (!init || done) return false;
    const double limit = nccl_timeout_from_env(std::getenv("PYLOPS_MPI_NCCL_TIMEOUT"));
    // Two rounds: a rank that arrives after the others gave up finds the first completed by
    // their stale contributions, but nobody joins its second, so it gives up too.
    const int first = bounded_max(view_.mpi, poisoned() ? 1 : 0, limit);
    const int second = first < 0 ? -1 : bounded_max(view_.mpi, first, limit);
    if (first < 0 || second < 0) leak_mpi_ = true;  // a reduction may still be posted on it
    return first == 0 && second == 0;
}

void Communicator::close_device_state() noexcept
{
    if (!device_ || !device_->needs_ordered_close()) return;
    const bool orderly = agreed_ && meet();
    // One order on every rank: the groups by mask (the map's order), then this one.
    for (auto &kv : groups_)
        if (kv.second->device_) kv.second->device_->close(orderly);
    device_->close(orderly);
}

Communicator::~Communicator()
{
    close_device_state();
    // Mask groups and backends go first: their state may refer to the MPI communicator.
    groups_.clear();
    host_.reset();
    device_.reset();
    destroy_stream(own_stream_);
    if (view_.mpi == MPI_COMM_NULL || leak_mpi_) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    // Freeing after MPI_Finalize is erroneous; the handle is gone with MPI then anyway.
    if (!finalized) MPI_Comm_free(&view_.mpi);
}

}  // namespace plm::comm
