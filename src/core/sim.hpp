// The simulator seam of the SMPI build (cmake/Smpi.cmake); in every other build compute() is
// a plain call and the rest does not exist.
//
// Sampled computation, for timing studies of up to 1024 simulated ranks on a small machine
// (scripts/smpi-run --sample, which sets PLM_SMPI_SAMPLE=1 and turns SMPI's own measurement of
// computation off; docs/scaling.md):
// - world rank 0, the sampler, runs every kernel for real on its own memory (its large buffers
//   are touched when allocated, so no sample pays first-touch page faults) and records the
//   time of its first 16 calls of each kernel by call site, shape and size class (work within
//   a factor of 2), in a table all simulated ranks share;
// - every other rank skips a kernel whose site, shape and size class rank 0 has run; a kernel
//   rank 0 has not run yet runs for real, timed. Its large host buffers (>= kShareBytes) come
//   from SMPI's shared malloc: all of them map one small physical block, and SMPI skips the
//   copy of messages to or from them;
// - every rank, rank 0 included, is charged for each kernel the median of rank 0's samples per
//   unit of work times its own work. The charges add up and go to the simulator
//   (smpi_execute_benched) at the rank's next MPI call (charge(), which src/comm calls before
//   each), in the order the computation happened.
// Data on ranks other than 0 are therefore meaningless (results are wrong on purpose); control
// flow that depends on them sees the values the reductions carry (rank 0's partials and
// zeros). What every rank pays for a kernel is what the same kernel at the same sizes cost on
// rank 0's private memory: faithful for kernels whose time depends on their sizes only (all of
// the library's: fixed loops, BLAS and FFTW on given shapes), not for the memory bandwidth the
// ranks of one node would share (not modelled). The library's bookkeeping between kernels is
// not charged (SMPI's measurement of it costs more than it does: several microseconds of
// timer overhead per MPI call on a virtual machine).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#define PLM_SIM_STR2(x) #x
#define PLM_SIM_STR(x) PLM_SIM_STR2(x)
// The call site of a kernel, the first part of its sampling key.
#define PLM_SIM_SITE __FILE__ ":" PLM_SIM_STR(__LINE__)

namespace plm::sim {

#ifdef PLM_SMPI
// Whether computation is sampled (PLM_SMPI_SAMPLE set to a value other than 0), read once.
bool sampling() noexcept;
// Runs run(ctx) under sampling (see the file comment): key, the site and what the cost
// depends on besides `work`, the amount the cost is proportional to (elements, rows; 1 when
// the key says it all).
void sampled(const char *site, std::initializer_list<int64_t> key, int64_t work, void (*run)(void *), void *ctx);
// Large host allocations under sampling: rank 0's touched, the other ranks' shared (see the
// file comment). alloc() returns nullptr when the plain allocator is to be used; release()
// returns whether p was one of this rank's shared allocations (and frees it).
constexpr std::size_t kShareBytes = 64 * 1024;
void *alloc(std::size_t bytes);
bool release(void *p) noexcept;
// The world rank of this simulated rank, set when the first communicator is made.
void set_world_rank(int rank) noexcept;
// Charges the skipped kernels' time now; src/comm calls it before each MPI operation.
void charge();
// Rank 0 writes the samples to the file PLM_SMPI_SAMPLE_TABLE names (if any), for later runs
// to charge the same times; extern "C" plm_smpi_save_samples() for the benchmarks.
void save_samples();
#endif

// Before an MPI operation: the time of the computation sampled since the last one
// (charge()); nothing outside sampled SMPI runs.
inline void before_mpi()
{
#ifdef PLM_SMPI
    if (sampling()) charge();
#endif
}

// One stretch of local computation (a kernel) at `site`: f() itself outside sampled SMPI runs.
// Its cost depends on `key` (shapes, the dtype) and is proportional to `work` (rows,
// elements): ranks are charged rank 0's median cost per unit of work, for the same key and a
// work within a factor of 2 (a fixed per-call cost would make smaller calls look cheaper).
template <typename F> inline void compute(const char *site, std::initializer_list<int64_t> key, int64_t work, F &&f)
{
#ifdef PLM_SMPI
    if (sampling()) {
        using Fn = std::remove_reference_t<F>;
        sampled(site, key, work, [](void *p) { (*static_cast<Fn *>(p))(); }, &f);
        return;
    }
#else
    (void)site, (void)key, (void)work;
#endif
    f();
}

}  // namespace plm::sim
