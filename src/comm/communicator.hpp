// A library communicator: a private duplicate of the user's MPI communicator (errors
// return, never abort), the state the backend policy reads (CUDA-awareness and its source,
// an optional NCCL communicator, the device and the stream), and one backend object per
// memory space, chosen once at creation and agreed across ranks.
//
// Health: a family (a communicator, its splits and mask groups) shares one Poison. A failure
// after an agreement that cannot be agreed poisons it (fail_unagreed()); every later
// agreement on it then fails on every rank.
//
// Teardown: where the device backend holds NCCL communicators, destroying a communicator is
// collective: its ranks meet in two small reductions (each bounded by PYLOPS_MPI_NCCL_TIMEOUT)
// that also carry poisoning, then close the NCCL state in one order - the mask groups' by
// mask, then its own - finalising it when every rank is healthy and present, aborting it
// otherwise. It never waits longer than that.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

#include "comm/backend.hpp"
#include "comm/select.hpp"

namespace plm::comm {

struct Config {
    plm_backend_t backend = PLM_BACKEND_AUTO;
    int cuda_aware = -1;
    int device = -1;
    void *stream = nullptr;
    void *nccl_comm = nullptr;
};

// Field checks of plm_comm_config_set_*; each throws PLM_ERR_INVALID_ARG.
void check_config_backend(int backend);
void check_config_cuda_aware(int cuda_aware);
void check_config_device(int device);

class Agreement;

class Communicator {
public:
    // Collective on user (a usable intra-communicator); cfg nullptr: the defaults. Duplicates it; a bad config on any
    // rank, or prior (an error the caller found before), fails on every rank. Ranks whose
    // CUDA-awareness decisions differ all take the safe one (not CUDA-aware).
    static std::shared_ptr<Communicator> create(MPI_Comm user, const Config *cfg,
                                                const std::optional<Error> &prior = std::nullopt);
    ~Communicator();
    Communicator(const Communicator &) = delete;
    Communicator &operator=(const Communicator &) = delete;

    // Collective: ranks with the same color form the result, ordered by (key, rank), with its
    // device backend's state (an NCCL communicator) made now. Called on every rank before
    // ag.run() and outside ag.check() (every rank takes part, also one whose checks failed:
    // it joins no group). Its failures become ag's error, so they are agreed; nullptr on a
    // rank that failed. The result shares this communicator's health (Poison). Once ag.run()
    // has returned, call mark_agreed() on it; dropped without (the call failed), its device
    // state is aborted rather than closed in step with the other ranks.
    std::shared_ptr<Communicator> split(Agreement &ag, int color, int key) const;
    // The same with an agreement of its own (throws on every rank alike).
    std::shared_ptr<Communicator> split(int color, int key) const;
    // The call that made this communicator agreed on it: its teardown meets the other ranks
    // and closes its device state in step (see the file comment). Until then teardown aborts
    // the device state at once: a communicator made in a failed call never waits for peers.
    void mark_agreed() { agreed_ = true; }

    int rank() const { return view_.rank; }
    int size() const { return view_.size; }
    MPI_Comm mpi() const { return view_.mpi; }
    const CommView &view() const { return view_; }
    const Config &config() const { return cfg_; }
    const PolicyState &policy() const { return policy_; }
    plm_cuda_aware_source_t cuda_aware_source() const { return cuda_aware_source_; }
    // The CUDA device of this rank: config.device, else node-local rank modulo the devices
    // visible; -1 when there is none (host-only build, no GPU).
    int device() const { return device_id_; }
    // The stream device work on this communicator's arrays is ordered on: the user's
    // (config.stream or set_stream), else one the library creates on first use and destroys
    // with the communicator. Host-only builds and machines without a device: the null handle.
    Stream stream() const;
    // Switches to stream (nullptr: back to the library's own) after the current one has
    // finished its work, so work queued before stays ordered before work queued after.
    void set_stream(void *stream);

    // What the policy picks for buffers in space s.
    plm_backend_t backend_for(Space s) const { return select_backend(s, policy_); }
    // The backend object for space s; PLM_ERR_BACKEND_UNAVAILABLE when it is not in this build.
    Backend &backend(Space s) const;
    // The execution context of work on this communicator's arrays in space s; for device
    // memory it also makes this communicator's device current.
    Exec exec(Space s) const;
    // The sub-communicator of the ranks sharing this rank's id in mask (one id per rank),
    // made by prepare_mask_group(), cached per mask and freed with this communicator, so an
    // array's destroy never frees MPI state. Not collective: PLM_ERR_INTERNAL if not made.
    const Communicator &mask_group(const std::vector<int> &mask) const;
    // Makes now what collectives on the mask group of `mask` in memory space s will need: the
    // group (an MPI_Comm_split over this communicator, on the first call for a mask) and, for
    // device memory, its device backend's state (an NCCL communicator, made among the group's
    // ranks). Collective on this communicator. Call it on every rank, before ag.run() and
    // outside ag.check(): a rank whose checks failed still takes part. A failure (on some
    // ranks, or in some groups only) becomes ag's error, so the agreement fails on every rank.
    // mask must have one id >= 0 per rank (else ag's error), or be empty: no mask group, but
    // the rank takes part all the same. When the mask is not agreed yet (a user's argument),
    // one small reduction over this communicator first checks that every rank passed the same
    // one (so a rank without a mask must call too) and has not failed. mask_agreed (it comes
    // from an existing layout, the same on every rank): no communication at all once the
    // group is ready.
    // Returns whether the group is ready on every rank (false: ag holds an error on some rank,
    // so anything that needs the group must not run, on any rank).
    bool prepare_mask_group(Agreement &ag, const std::vector<int> &mask, Space s, bool mask_agreed = false) const;
    // n consecutive private tags for a persistent plan, taken at its first start. Ranks start
    // plans in the same order, so a plan gets the same tags on every rank.
    int next_plan_tags(int n) const;
    // Makes the operations on this communicator (and its splits and mask groups) in space s
    // that stage at most `bytes` at any one time allocate nothing (Backend::reserve: the
    // host-staged backend's staging memory; nothing elsewhere). Not collective; call it inside
    // an agreement's check(). How much an operation stages: the bytes it moves out of and
    // into device memory - allreduce, reduce, bcast: count elements; allgatherv: the extent
    // of the receive blocks; alltoallv: the send extent plus the receive extent; point-to-
    // point and exchanges: the bytes of their messages - summed over operations in flight
    // together. Throws (PLM_ERR_OUT_OF_MEMORY...) when it cannot.
    void reserve(Space s, std::size_t bytes) const;

    // Health (see the file comment). Not collective.
    bool poisoned() const { return poison_ && poison_->set(); }
    Poison &poison() const { return *poison_; }
    const std::shared_ptr<Poison> &poison_ptr() const { return poison_; }
    // The error of a poisoned communicator; nullopt while healthy.
    std::optional<Error> poison_error() const;
    // Code after an agreement reports a failure it cannot agree on through this: poisons and
    // throws (comm/backend.hpp). unagreed(f) runs f and routes any exception it throws here.
    [[noreturn]] void fail_unagreed(const Error &e) const;
    template <typename F> decltype(auto) unagreed(F &&f) const
    {
        try {
            return f();
        } catch (const Error &e) {
            fail_unagreed(e);
        } catch (const std::bad_alloc &) {
            fail_unagreed(Error(PLM_ERR_OUT_OF_MEMORY, "out of memory after the agreement"));
        } catch (const std::exception &e) {
            fail_unagreed(Error(PLM_ERR_INTERNAL, e.what()));
        }
    }
    // Polls the device state for errors it raised on its own (NCCL's asynchronous errors,
    // which poison) and returns the poisoning status: PLM_SUCCESS while healthy. Not
    // collective.
    plm_status_t async_error() const;
    // plm_comm_abort: aborts the device state (ncclCommAbort) of this communicator and its
    // mask groups, then MPI_Abort(errorcode) on its MPI communicator. Returns only if
    // MPI_Abort does.
    void abort(int errorcode) const noexcept;

    // Tests: replaces the device backend (say, a fake one that records preparation and
    // teardown), as if the policy had made it.
    void replace_device_backend(std::unique_ptr<Backend> b) { device_ = std::move(b); }

private:
    Communicator() = default;
    void make_backends();
    // A new communicator over the sub-communicator raw (which it owns once this returns; on a
    // throw the caller still owns raw), sharing this one's configuration, health and backends'
    // split state. Allocates; not collective.
    std::shared_ptr<Communicator> adopt_split(MPI_Comm raw) const;
    // MPI_Comm_split (collective on this communicator; MPI_UNDEFINED joins no group) and
    // adopt_split(), then, when `device`, the group's device state, made only when every
    // member got its communicator. Never throws: a failure on this rank is returned in err.
    std::shared_ptr<Communicator> split_raw(int color, int key, bool device, std::optional<Error> &err) const;
    void close_device_state() noexcept;
    bool meet() noexcept;

    CommView view_{};
    std::shared_ptr<Poison> poison_;
    std::unique_ptr<Backend> host_, device_;
    mutable int next_tag_ = 0;
    mutable std::mutex groups_lock_;
    mutable std::map<std::vector<int>, std::shared_ptr<Communicator>> groups_;
    mutable bool device_ready_ = false;  // mask groups: device state prepared on every rank
    bool leak_mpi_ = false;              // a teardown step timed out: MPI may still use the handle
    bool agreed_ = false;                // made in a call that agreed on it (mark_agreed())
    Config cfg_{};
    int device_id_ = -1;
    bool devices_everywhere_ = false;  // every rank has a device (agreed at creation)
    mutable void *own_stream_ = nullptr;  // created on first use, destroyed with the communicator
    const Communicator *stream_owner_ = nullptr;  // mask groups: the parent, whose stream they use
    PolicyState policy_{};
    plm_cuda_aware_source_t cuda_aware_source_ = PLM_CUDA_AWARE_FROM_DEFAULT;
};

// What the MPI library says about CUDA support: 1, 0, or -1 when it has no query.
int vendor_cuda_aware_query();

}  // namespace plm::comm
