// The one collective-call discipline. Every collective entry point builds an Agreement on
// the whole communicator of its array (never a mask group), checks its local arguments
// into it, allocates what it needs, folds every rank-independent argument into its
// fingerprint, adds the reduction lanes of the operation itself, and calls run(): one
// MPI_Allreduce that carries the error, the fingerprint and the payload together. Only
// when some rank failed does a second call (a broadcast of that rank's message) follow.
//
// Allocation rule (core/alloc.hpp): check() may allocate, and run() marks the thread as past
// its agreement, after which the call must not allocate. An agreement of up to kInlineWords
// words lives inside the object, so one built or re-run after another agreement (an apply's
// outcome, a solver's per-iteration reductions) allocates nothing. A larger one keeps its
// words on the heap: if growing them fails on one rank, that rank keeps only the header.
//
// Lengths: the first reduction always has kFirstWords words (the header, the first lanes,
// padding), and the word count is part of the fingerprint, so ranks never reduce vectors of
// different lengths: a rank whose lanes differ (or that is short) fails the first reduction on
// every rank. An agreement with more words reduces the rest in a second call.
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "comm/distributed.hpp"
#include "core/alloc.hpp"

namespace plm::comm {

// How a payload lane combines across ranks. max and min propagate NaN (MPI_MAX/MIN need not).
enum class LaneOp : int64_t { sum = 3, max = 4, min = 5, imax = 6 };  // imax: int64 bits, max

class Agreement {
public:
    Agreement(const Communicator &c, const char *what);

    const Communicator &comm() const { return c_; }
    bool ok() const { return !local_; }
    // This rank's local error, if any (to carry it into another agreement as it is).
    const std::optional<Error> &local_error() const { return local_; }

    // Runs f; an Error it throws becomes this rank's local error (the first one is kept).
    // Skipped once the rank has failed, so later checks may rely on earlier ones. f may
    // allocate: its failures are agreed.
    template <typename F> bool check(F &&f)
    {
        if (!local_) {
            alloc::Allowed allowed;
            local_ = capture(std::forward<F>(f));
        }
        return !local_;
    }

    // Adopts an error found before the agreement existed.
    void add_error(const std::optional<Error> &e)
    {
        if (!local_ && e) local_ = e;
    }

    // Folds a rank-independent argument into the fingerprint (doubles by bit pattern).
    void fold(int64_t v);
    void fold_double(double v);
    template <typename C> void fold_all(const C &values)
    {
        fold(static_cast<int64_t>(values.size()));
        for (auto v : values) fold(static_cast<int64_t>(v));
    }

    // n payload lanes combined with op, set to op's identity; returns the first's index.
    size_t add_lanes(size_t n, LaneOp op);
    void set(size_t i, double v);
    // A lane's value after run().
    double get(size_t i) const;
    // The same for LaneOp::imax lanes, whose words hold int64 values.
    void set_int(size_t i, int64_t v);
    int64_t get_int(size_t i) const;

    // Gathers one int64 per rank through the agreement itself (size() lanes): returns the
    // first lane; after run(), gathered(first, r) is rank r's value on every rank.
    size_t add_gather(int64_t mine);
    int64_t gathered(size_t first, int r) const;

    // The one reduction. Throws on every rank: the lowest failing rank's error (its own
    // error on that rank, "on rank r: ..." elsewhere), or INVALID_ARG when ranks folded
    // different arguments. Returns normally on every rank otherwise.
    void run();

    // Makes a run agreement ready to run again with the same fingerprint and lanes (set to
    // their identities) and no error: loops re-run one agreement per step without allocating.
    void rearm();

    // One reduced element: how it combines (an op code) and its 64 bits.
    struct Word {
        int64_t op;
        int64_t bits;
    };
    static constexpr size_t kInlineWords = 32;
    // The first reduction's length on every rank: small (16 x 16 bytes costs about what 4
    // words do), and at most kInlineWords.
    static constexpr size_t kFirstWords = 16;
    static_assert(kFirstWords <= kInlineWords, "the first reduction runs in the inline words");

private:
    Word *words() { return heap_.empty() ? inline_.data() : heap_.data(); }
    const Word *words() const { return heap_.empty() ? inline_.data() : heap_.data(); }
    bool have(size_t i) const { return !short_ && kHeaderWords + i < n_; }  // lane i is stored here
    void reduce(Word *w, size_t n);
    void raise(int64_t first);  // throws the error of rank first
    static constexpr size_t kHeaderWords = 3;

    const Communicator &c_;
    const char *what_;
    std::optional<Error> local_;
    uint64_t hash_ = 1469598103934665603ull;
    size_t n_ = 0;                             // words in use: the header, then the lanes
    bool short_ = false;                       // growing the words failed on this rank
    std::array<Word, kInlineWords> inline_{};  // the words while they fit
    std::vector<Word> heap_;                   // the words once they do not
};

// The second agreement of a collective call whose objects depend on what its first one
// gathered (every rank's sizes, local shapes): the masks' groups first (made on every rank,
// agreed by prepare_mask_group itself, with their device state wherever the communicator
// has a device backend, so a device collective on a group never makes it after an
// agreement), then build() (it may allocate), agreed. Returns what build() returns. masks:
// agreed already (from arguments the first agreement checked).
template <typename F>
auto finish_collective(const Communicator &c, const char *what,
                       std::initializer_list<const std::vector<int> *> masks, F &&build)
{
    Agreement fin(c, what);
    bool ready = true;  // false on every rank when a group failed on some
    for (const std::vector<int> *m : masks) ready = c.prepare_mask_group(fin, *m, Space::device, true) && ready;
    decltype(build()) out;
    if (ready) fin.check([&] { out = build(); });
    fin.run();
    return out;
}

// Same ranks in the same order (MPI_Comm_compare IDENT or CONGRUENT). Not collective.
bool same_ranks(const Communicator &a, const Communicator &b);

// Throws INVALID_ARG before MPI_Init or after MPI_Finalize. Not collective.
void require_mpi_usable();

// Checks a user's MPI communicator handle (MPI_COMM_NULL, an inter-communicator, a handle
// MPI does not know) with MPI errors returned instead of aborting. Not collective: an
// unusable handle cannot be agreed on.
void require_user_comm(MPI_Comm c);

// MPI_Comm_f2c that refuses a Fortran handle MPI does not know instead of aborting.
MPI_Comm comm_from_fortran(MPI_Fint f);

}  // namespace plm::comm
