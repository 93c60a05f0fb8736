// A library communicator: a private duplicate of the user's MPI communicator (errors
// return, never abort), the state the backend policy reads (CUDA-awareness and its source,
// an optional NCCL communicator, the device and the stream), and one backend object per
// memory space, chosen once at creation and agreed across ranks.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
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

// Reads a user config (validating struct_size, magic and field values); nullptr -> defaults.
Config read_config(const plm_comm_config_t *cfg);

class Communicator {
public:
    // Collective on user (a usable intra-communicator). Duplicates it; a bad config on any
    // rank, or prior (an error the caller found before), fails on every rank. Ranks whose
    // CUDA-awareness decisions differ all take the safe one (not CUDA-aware).
    static std::shared_ptr<Communicator> create(MPI_Comm user, const plm_comm_config_t *cfg,
                                                const std::optional<Error> &prior = std::nullopt);
    ~Communicator();
    Communicator(const Communicator &) = delete;
    Communicator &operator=(const Communicator &) = delete;

    // Collective: ranks with the same color form the result, ordered by (key, rank). eager:
    // the device backend's state is made now, agreed over this communicator (mask groups
    // make it at their first device collective instead).
    std::shared_ptr<Communicator> split(int color, int key, bool eager = true) const;

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
    // The sub-communicator of the ranks sharing this rank's id in mask (one id per rank), made
    // by prepare_mask_group(): cached with this communicator (freed with it, so an array's
    // destroy never frees MPI state). PLM_ERR_INTERNAL when it was never prepared.
    const Communicator &mask_group(const std::vector<int> &mask) const;
    // Makes the group of mask unless it exists: collective on this communicator. The group
    // stays pending (usable by mask_group) until commit_mask_groups() keeps it, or
    // drop_mask_groups() discards it, so that every rank's cache holds the same groups even
    // when making one failed on some rank (comm::finish_collective calls them).
    void prepare_mask_group(const std::vector<int> &mask) const;
    void commit_mask_groups() const noexcept;
    void drop_mask_groups() const noexcept;
    // Counts a completed agreement on this communicator and returns the count (the same on
    // every rank: every agreement is collective over all of them). Plans derive their tags
    // from it (Agreement::plan_tags).
    uint64_t count_agreement() const { return ++agreements_; }

private:
    Communicator() = default;
    bool device_backend_wanted() const;
    void make_device_backend();
    CommView view_{};
    std::unique_ptr<Backend> host_, device_;
    mutable std::atomic<uint64_t> agreements_{0};
    mutable std::mutex groups_lock_;
    mutable std::map<std::vector<int>, std::shared_ptr<Communicator>> groups_, pending_groups_;
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
