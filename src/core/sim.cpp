// The SMPI build's sampled computation (core/sim.hpp). Compiled in every build; empty outside
// the SMPI one.
#include "core/sim.hpp"

#ifdef PLM_SMPI

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

// SimGrid's C entry points (libsimgrid), declared here so that core/ does not include the
// simulator's <mpi.h>.
extern "C" {
void smpi_execute_benched(double duration);
void *smpi_shared_malloc(std::size_t size, const char *file, int line);
void smpi_shared_free(void *data);
int smpi_shared_known_call(const char *func, const char *input);
void *smpi_shared_get_call(const char *func, const char *input);
void *smpi_shared_set_call(const char *func, const char *input, void *data);
}

namespace plm::sim {

namespace {

// Kernel times by key, shared by every simulated rank (one process): found through SimGrid's
// process-wide table of shared calls, since this library's own globals are per rank.
// A kernel's samples: rank 0's first kSamples wall-clock times per unit of work, and their
// median (robust to a preemption or a cold first call on a busy machine).
constexpr int kSamples = 16;
struct Entry {
    uint64_t key;  // 0: free
    int count;
    double cost;  // the median of the samples so far, seconds per unit of work
    double t[kSamples];
};
constexpr std::size_t kEntries = 1 << 13;  // open addressing; the study uses a few hundred keys
struct Table {
    Entry e[kEntries];
};

Entry *insert(Table &t, uint64_t key);

// PLM_SMPI_SAMPLE_TABLE names a file that keeps the entries across runs, one "key cost" line
// each: read when the table is made (the entries read are final), rewritten by save_samples().
// Runs of one study that share it charge the same kernel the same time, so their differences
// are communication, not the noise of each run's own samples.
const char *table_file()
{
    const char *f = std::getenv("PLM_SMPI_SAMPLE_TABLE");
    return f && *f ? f : nullptr;
}

void load(Table &t)
{
    const char *name = table_file();
    FILE *f = name ? std::fopen(name, "r") : nullptr;
    if (!f) return;
    unsigned long long key = 0;
    double cost = 0;
    while (std::fscanf(f, "%llx %lg", &key, &cost) == 2)
        if (Entry *e = key ? insert(t, key) : nullptr) {
            e->count = kSamples;
            e->cost = cost;
        }
    std::fclose(f);
}

Table *shared_table()
{
    static Table *t = nullptr;  // this rank's copy of the pointer
    if (t) return t;
    if (smpi_shared_known_call("pylopsmpi", "kernel times")) {
        t = static_cast<Table *>(smpi_shared_get_call("pylopsmpi", "kernel times"));
    } else {
        t = static_cast<Table *>(std::calloc(1, sizeof(Table)));
        if (!t) throw std::bad_alloc();
        load(*t);
        smpi_shared_set_call("pylopsmpi", "kernel times", t);
    }
    return t;
}

uint64_t mix(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

// The hash of a site's text (each rank's copy of the program has its own string addresses),
// cached by address: hashing ~50 characters per kernel call would show in the simulated time.
uint64_t site_hash(const char *site)
{
    struct Slot {
        const char *site;
        uint64_t hash;
    };
    static Slot cache[256];  // per rank
    Slot &c = cache[(reinterpret_cast<uintptr_t>(site) >> 3) % 256];
    if (c.site == site) return c.hash;
    uint64_t h = 1469598103934665603ull;
    for (const char *p = site; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
    c = {site, h};
    return h;
}

// The key of a site, the sizes that are not work, and work's size class (its bit length);
// never 0.
uint64_t key_of(const char *site, std::initializer_list<int64_t> sizes, int64_t work)
{
    uint64_t h = site_hash(site);
    for (int64_t v : sizes) h = mix(h, static_cast<uint64_t>(v));
    int bits = 0;
    for (uint64_t w = static_cast<uint64_t>(work > 0 ? work : 0); w; w >>= 1) ++bits;
    h = mix(h, static_cast<uint64_t>(bits));
    return h ? h : 1;
}

Entry *insert(Table &t, uint64_t key)
{
    for (std::size_t i = key % kEntries, n = 0; n < kEntries; i = (i + 1) % kEntries, ++n) {
        Entry &e = t.e[i];
        if (e.key == key) return &e;
        if (e.key == 0) {
            e.key = key;
            return &e;
        }
    }
    return nullptr;  // full: such kernels are timed call by call
}

Entry *find(uint64_t key, bool make)
{
    Table &t = *shared_table();
    if (make) return insert(t, key);
    for (std::size_t i = key % kEntries, n = 0; n < kEntries; i = (i + 1) % kEntries, ++n) {
        Entry &e = t.e[i];
        if (e.key == key) return &e;
        if (e.key == 0) return nullptr;
    }
    return nullptr;
}

// A steady clock read through the vDSO (~25 ns; thread CPU time is a system call, ~0.5 us,
// which would dominate the many microsecond-long kernels).
double now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void add_sample(Entry &e, double dt)
{
    e.t[e.count++] = dt;
    double v[kSamples];
    std::copy(e.t, e.t + e.count, v);
    const int mid = (e.count - 1) / 2;  // the lower median: noise only ever adds time
    std::nth_element(v, v + mid, v + e.count);
    e.cost = v[mid];
}

int g_world_rank = -1;  // per rank (dlopen privatization)
double g_debt = 0;      // skipped kernels' time not charged yet (charge())

bool is_sampler() { return g_world_rank == 0; }

// This rank's shared allocations (few: one per large array), so release() knows them.
constexpr int kMaxShared = 4096;
void *g_shared[kMaxShared];
int g_nshared = 0;

}  // namespace

bool sampling() noexcept
{
    static const int on = [] {
        const char *v = std::getenv("PLM_SMPI_SAMPLE");
        return v && *v && std::strcmp(v, "0") != 0 ? 1 : 0;
    }();
    return on != 0;
}

void set_world_rank(int rank) noexcept
{
    if (g_world_rank < 0) g_world_rank = rank;
}

void sampled(const char *site, std::initializer_list<int64_t> sizes, int64_t work, void (*run)(void *), void *ctx)
{
    const uint64_t key = key_of(site, sizes, work);
    const double units = static_cast<double>(work > 0 ? work : 1);
    const auto timed = [&] {
        const double t0 = now();
        run(ctx);
        return now() - t0;
    };
    if (is_sampler()) {
        Entry *e = find(key, true);
        if (!e) {  // the table is full: this call's own time
            g_debt += timed();
            return;
        }
        if (e->count < kSamples) {
            add_sample(*e, timed() / units);
        } else {
            run(ctx);  // enough samples: no clock reads
        }
        g_debt += e->cost * units;
        return;
    }
    const Entry *e = find(key, false);
    if (!e || e->count == 0) {  // rank 0 has not run it (yet): this call's own time
        g_debt += timed();
        return;
    }
    g_debt += e->cost * units;
}

void charge()
{
    // Below 10 ns it waits for more: SimGrid's solver works to a precision of 1e-9, and tiny
    // executions have crashed it (MaxMin::do_solve, SimGrid 3.32).
    if (g_debt < 1e-8) return;
    // Plus under 10 ns that differ between ranks: SimGrid 3.32's solver crashes now and then
    // (MaxMin::do_solve) when many ranks' actions end at exactly the same time.
    const double jitter = 1e-8 * static_cast<double>((static_cast<unsigned>(g_world_rank) * 2654435761u) % 1000u) / 1000.0;
    const double t = g_debt + jitter;
    g_debt = 0;
    smpi_execute_benched(t);
}

void *alloc(std::size_t bytes)
{
    if (!sampling() || bytes < kShareBytes || g_world_rank < 0) return nullptr;
    if (is_sampler()) {
        void *p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (p) std::memset(p, 0, bytes);  // touched now, not in a timed kernel
        return p;
    }
    if (g_nshared == kMaxShared) return nullptr;
    void *p = smpi_shared_malloc(bytes, __FILE__, __LINE__);
    if (p) g_shared[g_nshared++] = p;
    return p;
}

bool release(void *p) noexcept
{
    for (int i = g_nshared - 1; i >= 0; --i)
        if (g_shared[i] == p) {
            g_shared[i] = g_shared[--g_nshared];
            smpi_shared_free(p);
            return true;
        }
    return false;
}

void save_samples()
{
    const char *name = table_file();
    if (!name || !is_sampler()) return;
    FILE *f = std::fopen(name, "w");
    if (!f) return;
    const Table &t = *shared_table();
    for (const Entry &e : t.e)
        if (e.key && e.count > 0) std::fprintf(f, "%llx %.9e\n", static_cast<unsigned long long>(e.key), e.cost);
    std::fclose(f);
}

}  // namespace plm::sim

extern "C" void plm_smpi_save_samples(void) { plm::sim::save_samples(); }

#endif
