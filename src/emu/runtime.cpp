// The emulated CUDA runtime (see emu.hpp for the model): device memory, pinned memory, deferred
// streams and events, kernel launches (threads of a block as fibers), errors, fault injection.
#include "emu.hpp"

#include <execinfo.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "plm_device_emu.h"

// A few bytes of thread-local state in the static TLS block (initial-exec: no lookup per
// access); the fiber pools are allocated per thread.
#define PLM_TLS thread_local __attribute__((tls_model("initial-exec")))
__thread uint3 threadIdx __attribute__((tls_model("initial-exec")));
__thread uint3 blockIdx __attribute__((tls_model("initial-exec")));
__thread dim3 blockDim __attribute__((tls_model("initial-exec")));
__thread dim3 gridDim __attribute__((tls_model("initial-exec")));

namespace plm_emu {

namespace {

// ---------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------

long env_long(const char *name, long fallback)
{
    const char *v = std::getenv(name);
    if (!v || !*v) return fallback;
    char *end = nullptr;
    const long x = std::strtol(v, &end, 10);
    return end && *end == '\0' ? x : fallback;
}

struct Settings {
    int devices = static_cast<int>(std::clamp(env_long("PLM_EMU_DEVICES", 8), 0L, 64L));
    size_t memory = static_cast<size_t>(std::max(env_long("PLM_EMU_MEMORY_MB", 8192), 1L)) << 20;
    bool protect = env_long("PLM_EMU_PROTECT", 1) != 0;
    bool poison = env_long("PLM_EMU_POISON", 1) != 0;
    std::atomic<bool> eager{env_long("PLM_EMU_EAGER", 0) != 0};
};
Settings &settings()
{
    static Settings s;
    return s;
}

constexpr size_t kAlign = 256;   // cudaMalloc's alignment
constexpr size_t kCanary = 256;  // bytes after each device allocation, checked when it is freed
constexpr unsigned char kCanaryByte = 0xCD, kFreshByte = 0xFF, kFreedByte = 0xEE;
constexpr size_t kDiscard = 4 << 20;  // freed blocks this large give their pages back

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// ---------------------------------------------------------------------------------------
// Errors and counters
// ---------------------------------------------------------------------------------------

std::atomic<cudaError_t> g_sticky{cudaSuccess};
PLM_TLS cudaError_t t_last = cudaSuccess;
PLM_TLS int t_device = 0;
long long g_kernel_fault = 0, g_nccl_fault = 0;
std::atomic<long long> g_kernels{0}, g_ops{0}, g_syncs{0}, g_faults{0};

cudaError_t record(cudaError_t e)
{
    if (e != cudaSuccess) t_last = e;
    return e;
}

// ---------------------------------------------------------------------------------------
// Device memory: one reserved region, protected outside the runtime's own work.
// ---------------------------------------------------------------------------------------

void ensure_handler();

struct Block {
    size_t bytes;  // asked for
    size_t span;   // taken from the region (aligned bytes + canary)
    int device;
};

class Heap {
public:
    bool ready() const { return base_ != nullptr; }
    bool contains(const void *p) const
    {
        const auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(base_);
        return base_ && a >= b && a < b + cap_;
    }

    void *alloc(size_t bytes, int device)
    {
        init();
        ensure_handler();
        const size_t span = round_up(std::max<size_t>(bytes, 1), kAlign) + kCanary;
        size_t off = SIZE_MAX;
        for (auto it = free_.begin(); it != free_.end(); ++it)
            if (it->second >= span) {
                off = it->first;
                const size_t rest = it->second - span;
                free_.erase(it);
                if (rest) free_[off + span] = rest;
                break;
            }
        if (off == SIZE_MAX) {
            if (span > cap_ - top_) return nullptr;
            off = top_;
            top_ += span;
        }
        char *p = base_ + off;
        live_[reinterpret_cast<uintptr_t>(p)] = Block{bytes, span, device};
        Access a;
        if (settings().poison) std::memset(p, kFreshByte, bytes);
        std::memset(p + bytes, kCanaryByte, span - bytes);  // the canary: everything past the end
        return p;
    }

    // false: p is not the start of a live allocation.
    bool release(void *p)
    {
        auto it = live_.find(reinterpret_cast<uintptr_t>(p));
        if (it == live_.end()) return false;
        const Block b = it->second;
        live_.erase(it);
        {
            Access a;
            const char *tail = static_cast<char *>(p) + b.bytes;
            const size_t n = b.span - b.bytes;
            for (size_t i = 0; i < n; ++i)
                if (static_cast<unsigned char>(tail[i]) != kCanaryByte) {
                    std::fprintf(stderr,
                                 "[emulated device, pid %d] device memory corrupted: %zu bytes past the end of the "
                                 "%zu-byte allocation at %p were overwritten (a kernel or copy wrote out of bounds)\n",
                                 static_cast<int>(getpid()), i, b.bytes, p);
                    std::abort();
                }
            if (settings().poison && b.bytes < kDiscard) std::memset(p, kFreedByte, b.bytes);
        }
        if (b.bytes >= kDiscard) {  // give the pages back (they read as zeros until reused)
            const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
            const auto lo = round_up(reinterpret_cast<uintptr_t>(p), page);
            const auto hi = (reinterpret_cast<uintptr_t>(p) + b.span) / page * page;
            if (hi > lo) madvise(reinterpret_cast<void *>(lo), hi - lo, MADV_DONTNEED);
        }
        size_t off = static_cast<size_t>(static_cast<char *>(p) - base_), span = b.span;
        auto next = free_.find(off + span);
        if (next != free_.end()) {
            span += next->second;
            free_.erase(next);
        }
        auto prev = free_.lower_bound(off);
        if (prev != free_.begin()) {
            --prev;
            if (prev->first + prev->second == off) {
                off = prev->first;
                span += prev->second;
                free_.erase(prev);
            }
        }
        if (off + span == top_)
            top_ = off;
        else
            free_[off] = span;
        return true;
    }

    // The live allocation holding p, or nullptr.
    const Block *find(const void *p, uintptr_t *start = nullptr) const
    {
        const auto a = reinterpret_cast<uintptr_t>(p);
        auto it = live_.upper_bound(a);
        if (it == live_.begin()) return nullptr;
        --it;
        if (a >= it->first + std::max<size_t>(it->second.bytes, 1)) return nullptr;
        if (start) *start = it->first;
        return &it->second;
    }

    size_t capacity() const { return cap_; }
    size_t used() const
    {
        size_t u = 0;
        for (const auto &kv : live_) u += kv.second.span;
        return u;
    }

    // The protection. Device memory is PROT_NONE; while the runtime works (open() on this
    // thread, or hold() for work in flight), a touch of it faults into on_segv, which opens
    // the chunk touched and notes it; the last close or release protects the noted chunks
    // again. So each window costs a fault per chunk its work touches, not a pass over all
    // of device memory.
    void open()
    {
        if (t_depth++ == 0) ensure_handler();
    }
    void close()
    {
        if (--t_depth == 0 && holders_.load() == 0) reprotect();
    }
    void hold()
    {
        ensure_handler();
        holders_.fetch_add(1);
    }
    void release()
    {
        if (holders_.fetch_sub(1) == 1 && t_depth == 0) reprotect();
    }

    // From the SIGSEGV handler: opens the chunk of addr when the runtime is at work.
    bool open_chunk(void *addr)
    {
        if (t_depth == 0 && holders_.load() == 0) return false;
        const auto a = reinterpret_cast<uintptr_t>(addr), b = reinterpret_cast<uintptr_t>(base_);
        if (a >= b + top_) return false;  // past every allocation: a wild access
        const uintptr_t c = b + (a - b) / kChunk * kChunk;
        const size_t len = std::min<size_t>(kChunk, b + cap_ - c);
        if (mprotect(reinterpret_cast<void *>(c), len, PROT_READ | PROT_WRITE) != 0) return false;
        const size_t k = nopen_.fetch_add(1);
        if (k < kMaxOpen)
            open_[k] = c;
        else
            overflow_ = true;
        return true;
    }

private:
    static constexpr size_t kChunk = 256 << 10;
    static constexpr size_t kMaxOpen = 4096;
    static PLM_TLS int t_depth;

    void init();
    void reprotect()
    {
        if (!settings().protect || !base_) return;
        const size_t n = std::min(nopen_.load(), kMaxOpen);
        if (overflow_) {
            mprotect(base_, round_up(top_, kChunk), PROT_NONE);
        } else {
            for (size_t k = 0; k < n; ++k)
                mprotect(reinterpret_cast<void *>(open_[k]),
                         std::min<size_t>(kChunk, reinterpret_cast<uintptr_t>(base_) + cap_ - open_[k]), PROT_NONE);
        }
        nopen_ = 0;
        overflow_ = false;
    }

    char *base_ = nullptr;
    size_t cap_ = 0, top_ = 0;
    std::atomic<int> holders_{0};
    std::atomic<size_t> nopen_{0};
    bool overflow_ = false;
    uintptr_t open_[kMaxOpen] = {};
    std::map<size_t, size_t> free_;     // offset -> bytes
    std::map<uintptr_t, Block> live_;   // start -> block
};

PLM_TLS int Heap::t_depth = 0;

Heap g_heap;
std::map<uintptr_t, size_t> g_pinned;  // cudaMallocHost allocations

struct sigaction g_old_segv;

// Host code (outside the runtime's work) touched device memory: say where, then let the
// previous handler (MPI's, or the default) report the fault.
void on_segv(int sig, siginfo_t *info, void *ctx)
{
    if (g_heap.contains(info->si_addr) && g_heap.open_chunk(info->si_addr)) return;  // the runtime's own work
    if (g_heap.contains(info->si_addr)) {
        char text[256];
        const int n = std::snprintf(text, sizeof text,
                                    "[emulated device, pid %d] host code touched device memory at %p: on a GPU this "
                                    "is an invalid host access. Backtrace:\n",
                                    static_cast<int>(getpid()), info->si_addr);
        if (n > 0) (void)!write(2, text, static_cast<size_t>(std::min<int>(n, sizeof text - 1)));
        void *frames[64];
        backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
    }
    sigaction(SIGSEGV, &g_old_segv, nullptr);
    if (!(g_old_segv.sa_flags & SA_SIGINFO) && g_old_segv.sa_handler != SIG_DFL && g_old_segv.sa_handler != SIG_IGN)
        g_old_segv.sa_handler(sig);
    else if (g_old_segv.sa_flags & SA_SIGINFO)
        g_old_segv.sa_sigaction(sig, info, ctx);
    // SIG_DFL: returning re-runs the access, which now ends the process.
}

void Heap::init()
{
    if (base_) return;
    cap_ = settings().memory;
    const int prot = settings().protect ? PROT_NONE : PROT_READ | PROT_WRITE;
    void *p = mmap(nullptr, cap_, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        cap_ = 0;
        return;
    }
    base_ = static_cast<char *>(p);
    ensure_handler();
}

// Installs on_segv in front of whatever handler is there. Others come and go (MPI_Init installs
// its own, test frameworks one per test), so this runs whenever the runtime opens device memory.
void ensure_handler()
{
    if (!settings().protect) return;
    struct sigaction cur {};
    sigaction(SIGSEGV, nullptr, &cur);
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_segv) return;
    struct sigaction sa {};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_old_segv);
}

// ---------------------------------------------------------------------------------------
// Streams and events
// ---------------------------------------------------------------------------------------

struct StreamRec {
    int device = 0;
    bool nonblocking = false;
    std::deque<std::unique_ptr<Op>> q;
    uint64_t pushed = 0, done = 0;
    bool front_started = false;
};

struct EventRec {
    StreamRec *s = nullptr;
    uint64_t seq = 0;
    bool timing = true;
};

std::vector<std::unique_ptr<StreamRec>> g_legacy;  // one per device
std::set<StreamRec *> g_streams;
std::set<EventRec *> g_events;

StreamRec *legacy(int device)
{
    if (g_legacy.empty())
        for (int d = 0; d < std::max(settings().devices, 1); ++d) {
            g_legacy.push_back(std::make_unique<StreamRec>());
            g_legacy.back()->device = d;
        }
    return g_legacy[static_cast<size_t>(device)].get();
}

StreamRec *resolve(cudaStream_t s)
{
    if (!s || s == cudaStreamLegacy || s == cudaStreamPerThread) return legacy(t_device);
    auto *r = reinterpret_cast<StreamRec *>(s);
    return g_streams.count(r) ? r : nullptr;
}

// Runs s's work until `upto` pieces are done; without block, stops at asynchronous work that
// is not complete yet (cudaErrorNotReady).
cudaError_t advance(StreamRec &s, uint64_t upto, bool block)
{
    if (g_sticky != cudaSuccess) return g_sticky;
    if (s.done < upto) g_syncs.fetch_add(1, std::memory_order_relaxed);
    while (s.done < upto) {
        Op &op = *s.q.front();
        try {
            Access a;
            if (!s.front_started) {
                s.front_started = true;
                g_ops.fetch_add(1, std::memory_order_relaxed);
                op.start();
            }
            while (!op.test()) {
                if (!block) return cudaErrorNotReady;
                std::this_thread::yield();
            }
        } catch (const Fault &f) {
            g_sticky = f.error;
            return f.error;
        }
        s.q.pop_front();
        ++s.done;
        s.front_started = false;
    }
    return cudaSuccess;
}

cudaError_t drain(StreamRec &s) { return advance(s, s.pushed, true); }

// Every stream, the non-blocking ones first, then the blocking ones, then the legacy default
// streams: on a GPU independent streams run in any order, and this one runs a library's own
// streams before the work an application queued on the default stream, so a library that
// reads data the default stream still has to write sees stale data.
cudaError_t drain_all()
{
    for (int pass = 0; pass < 2; ++pass)
        for (StreamRec *s : g_streams)
            if (s->nonblocking == (pass == 0))
                if (cudaError_t e = drain(*s)) return e;
    for (auto &l : g_legacy)
        if (cudaError_t e = drain(*l)) return e;
    return g_sticky;
}

// The work of another stream up to a point (events, the legacy stream's implicit order).
class WaitOp final : public Op {
public:
    WaitOp(StreamRec *s, uint64_t seq) : s_(s), seq_(seq) {}
    void start() override {}
    bool test() override
    {
        if (!s_ || !(g_streams.count(s_) || std::any_of(g_legacy.begin(), g_legacy.end(),
                                                         [&](const auto &l) { return l.get() == s_; })))
            return true;  // destroyed: it was drained
        const cudaError_t e = advance(*s_, seq_, false);
        if (e == cudaErrorNotReady) return false;
        if (e != cudaSuccess) throw Fault{e, "a stream this one waits for failed"};
        return true;
    }

private:
    StreamRec *s_;
    uint64_t seq_;
};

void push(StreamRec &r, std::unique_ptr<Op> op)
{
    r.q.push_back(std::move(op));
    ++r.pushed;
}

class FnOp final : public Op {
public:
    explicit FnOp(std::function<void()> f) : f_(std::move(f)) {}
    void start() override { f_(); }

private:
    std::function<void()> f_;
};

// ---------------------------------------------------------------------------------------
// Kernels: blocks one after another; a block's threads as fibers on this thread's stack
// pool, switched at __syncthreads. Thread 0 runs first: a block whose thread 0 never syncs
// runs its other threads as plain calls.
// ---------------------------------------------------------------------------------------

constexpr size_t kFiberStack = 16 << 10;  // kernels are shallow; signals run on an alternate stack
constexpr size_t kSignalStack = 64 << 10;
constexpr unsigned kMaxThreads = 1024;

struct Fiber {
    void *sp = nullptr;
    char *stack = nullptr;
    bool done = false;
};

// A thread's fibers: kMaxThreads small stacks in one mapping (with a guard page below each),
// made when the thread first runs a block that synchronises.
struct Pool {
    Fiber fibers[kMaxThreads];
    Pool()
    {
        const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        void *p = mmap(nullptr, kMaxThreads * kFiberStack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) throw Fault{cudaErrorLaunchOutOfResources, "no memory for fiber stacks"};
        for (unsigned t = 0; t < kMaxThreads; ++t) {
            fibers[t].stack = static_cast<char *>(p) + t * kFiberStack;
            mprotect(fibers[t].stack, page, PROT_NONE);
        }
        // Faults taken on a fiber (the lazy opening of device memory) run their handler here.
        stack_t ss{};
        ss.ss_sp = std::malloc(kSignalStack);
        ss.ss_size = kSignalStack;
        if (ss.ss_sp) sigaltstack(&ss, nullptr);
    }
};

extern "C" void plm_emu_switch(void **save_sp, void *load_sp);
#if defined(__x86_64__)
// Saves the callee-saved registers and the stack pointer in *save_sp, loads load_sp's.
asm(R"(
    .text
    .globl plm_emu_switch
    .hidden plm_emu_switch
    .type plm_emu_switch,@function
plm_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size plm_emu_switch,.-plm_emu_switch
)");
#else
#error "the emulated device's fibers need x86-64 (src/emu/runtime.cpp: plm_emu_switch)"
#endif

PLM_TLS Pool *t_pool = nullptr;
PLM_TLS void *t_sched_sp = nullptr;
PLM_TLS Fiber *t_cur = nullptr;      // the running fiber (nullptr: the scheduler, or a plain call)
PLM_TLS unsigned t_index = 0, t_count = 0;
PLM_TLS dim3 t_block;
PLM_TLS const std::function<void()> *t_body = nullptr;
PLM_TLS bool t_direct = false;     // running threads as plain calls
PLM_TLS bool t_divergent = false;  // a plain call reached __syncthreads

void set_thread(unsigned t)
{
    t_index = t;
    threadIdx = uint3{t % t_block.x, (t / t_block.x) % t_block.y, t / (t_block.x * t_block.y)};
}

// Leaves the running fiber (at a barrier, or done) for the next one of the block that is not
// done, or for the scheduler after the last: one switch per thread per phase.
void yield_from(Fiber *f)
{
    Fiber *fibers = t_pool->fibers;
    unsigned k = t_index + 1;
    while (k < t_count && fibers[k].done) ++k;
    if (k < t_count) {
        set_thread(k);
        t_cur = &fibers[k];
        plm_emu_switch(&f->sp, fibers[k].sp);
    } else {
        plm_emu_switch(&f->sp, t_sched_sp);
    }
}

[[noreturn]] void fiber_entry()
{
    (*t_body)();
    t_cur->done = true;
    yield_from(t_cur);
    __builtin_unreachable();
}

void start_fiber(Fiber &f, unsigned t)
{
    // Tops a cache line apart modulo 4 KiB, so the stacks' hot lines do not share cache sets.
    auto top = reinterpret_cast<uintptr_t>(f.stack + kFiberStack - 64 * (t % 60)) & ~uintptr_t(15);
    void **sp = reinterpret_cast<void **>(top);
    *--sp = nullptr;                                           // fiber_entry's return slot
    *--sp = reinterpret_cast<void *>(&fiber_entry);            // where the switch returns to
    for (int i = 0; i < 6; ++i) *--sp = nullptr;               // rbp rbx r12 r13 r14 r15
    f.sp = sp;
    f.done = false;
}

// Runs fibers from `first` on until the phase ends (each yields to the next).
void run_phase(unsigned first)
{
    Fiber &f = t_pool->fibers[first];
    set_thread(first);
    t_cur = &f;
    plm_emu_switch(&t_sched_sp, f.sp);
    t_cur = nullptr;
}

void run_block(dim3 b, const std::function<void()> &body)
{
    t_block = b;
    t_count = b.x * b.y * b.z;
    t_body = &body;
    if (!t_pool) t_pool = new Pool();
    Fiber *fibers = t_pool->fibers;
    // Thread 0 alone first: if it never reaches __syncthreads, neither does any other thread
    // (CUDA requires the whole block at each one), and they run as plain calls.
    start_fiber(fibers[0], 0);
    const unsigned n = t_count;
    t_count = 1;
    run_phase(0);
    t_count = n;
    if (fibers[0].done) {
        t_direct = true;
        for (unsigned t = 1; t < n; ++t) {
            set_thread(t);
            body();
        }
        t_direct = false;
        return;
    }
    for (unsigned t = 1; t < n; ++t) start_fiber(fibers[t], t);
    run_phase(1);  // threads 1.. up to the barrier thread 0 waits at
    for (;;) {
        unsigned first = 0;
        while (first < n && fibers[first].done) ++first;
        if (first == n) break;
        run_phase(first);
    }
}

class KernelOp final : public Op {
public:
    // Moves the call into storage of its own (the runtime's allocation, not the caller's).
    KernelOp(dim3 g, dim3 b, const Body &body, void *call, bool faulty) : g_(g), b_(b), body_(body), faulty_(faulty)
    {
        call_ = ::operator new(body.size, std::align_val_t(std::max(body.align, alignof(std::max_align_t))));
        body.move_to(call_, call);
        run_ = [this] { body_.run(call_); };
    }
    ~KernelOp() override
    {
        body_.destroy(call_);
        ::operator delete(call_, std::align_val_t(std::max(body_.align, alignof(std::max_align_t))));
    }
    void start() override
    {
        if (faulty_) fault(cudaErrorLaunchFailure, "injected kernel fault (plm_emu_fail_kernel)");
        gridDim = g_;
        blockDim = b_;
        t_divergent = false;
        for (unsigned z = 0; z < g_.z; ++z)
            for (unsigned y = 0; y < g_.y; ++y)
                for (unsigned x = 0; x < g_.x; ++x) {
                    blockIdx = uint3{x, y, z};
                    run_block(b_, run_);
                }
        if (t_divergent)
            fault(cudaErrorLaunchFailure, "a kernel reached __syncthreads in some threads of a block only (thread 0 "
                                          "never did): undefined behaviour on a GPU");
    }

private:
    dim3 g_, b_;
    Body body_;
    bool faulty_;  // an injected fault: marked when launched, fails when it runs
    void *call_ = nullptr;
    std::function<void()> run_;
};

// ---------------------------------------------------------------------------------------
// Copies
// ---------------------------------------------------------------------------------------

bool host_like(Mem m) { return m != Mem::device; }

cudaError_t check_kind(enum cudaMemcpyKind kind, Mem dst, Mem src)
{
    switch (kind) {
    case cudaMemcpyDefault: return cudaSuccess;
    case cudaMemcpyHostToHost: return host_like(dst) && host_like(src) ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyHostToDevice: return dst == Mem::device && host_like(src) ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToHost: return host_like(dst) && src == Mem::device ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToDevice: return dst == Mem::device && src == Mem::device ? cudaSuccess : cudaErrorInvalidValue;
    }
    return cudaErrorInvalidMemcpyDirection;
}

// rows x width bytes, pitches apart (one row: a plain copy).
cudaError_t copy(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows,
                 enum cudaMemcpyKind kind, cudaStream_t s, bool sync_api)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    if (g_sticky) return record(g_sticky);
    if (width == 0 || rows == 0) return cudaSuccess;
    if (!dst || !src) return record(cudaErrorInvalidValue);
    if (rows > 1 && (width > dpitch || width > spitch)) return record(cudaErrorInvalidPitchValue);
    StreamRec *r = sync_api ? legacy(t_device) : resolve(s);
    if (!r) return record(cudaErrorInvalidResourceHandle);
    const Mem dk = kind_of(dst), sk = kind_of(src);
    if (cudaError_t e = check_kind(kind, dk, sk)) return record(e);
    const size_t dspan = dpitch * (rows - 1) + width, sspan = spitch * (rows - 1) + width;
    if ((dk == Mem::device && !device_range(dst, dspan)) || (sk == Mem::device && !device_range(src, sspan)))
        return record(cudaErrorInvalidValue);
    auto rows_copy = [=](const char *from) {
        for (size_t i = 0; i < rows; ++i)
            std::memmove(static_cast<char *>(dst) + i * dpitch, from + i * spitch, width);
    };
    if (host_like(dk) && host_like(sk)) {  // synchronous, in the stream's order
        if (cudaError_t e = drain(*r)) return record(e);
        rows_copy(static_cast<const char *>(src));
        return cudaSuccess;
    }
    if (sk == Mem::host) {  // pageable source: staged now, so it may be reused at once
        auto staged = std::make_shared<std::vector<char>>(sspan);
        std::memcpy(staged->data(), src, sspan);
        push(*r, fn_op([=] { rows_copy(staged->data()); }));
    } else {
        push(*r, fn_op([=] { rows_copy(static_cast<const char *>(src)); }));
    }
    // CUDA's "API synchronization behavior": a pageable destination, or the synchronous API
    // from pinned memory or to host memory, returns when the copy is done; the synchronous API
    // from pageable memory to the device returns once the source is staged, "but the DMA to
    // final destination may not have completed" (here: not before the legacy stream runs), and
    // device to device copies are asynchronous even there.
    const bool wait = dk == Mem::host || (sync_api && sk == Mem::pinned) || (sync_api && host_like(dk));
    if (wait || settings().eager) return record(drain(*r));
    return cudaSuccess;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Shared with the libraries (emu.hpp)
// ---------------------------------------------------------------------------------------

std::recursive_mutex &big_lock()
{
    static std::recursive_mutex m;
    return m;
}

std::unique_ptr<Op> fn_op(std::function<void()> f) { return std::make_unique<FnOp>(std::move(f)); }

cudaError_t check_stream(cudaStream_t s)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    return resolve(s) ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

int stream_device(cudaStream_t s)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    StreamRec *r = resolve(s);
    return r ? r->device : t_device;
}

cudaError_t enqueue(cudaStream_t s, std::unique_ptr<Op> op)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    if (g_sticky) return g_sticky;
    StreamRec *r = resolve(s);
    if (!r) return cudaErrorInvalidResourceHandle;
    // The legacy default stream waits for the blocking streams of its device, and they for it.
    StreamRec *l = legacy(r->device);
    if (r == l) {
        for (StreamRec *b : g_streams)
            if (!b->nonblocking && b->device == r->device && b->pushed > b->done)
                push(*r, std::make_unique<WaitOp>(b, b->pushed));
    } else if (!r->nonblocking && l->pushed > l->done) {
        push(*r, std::make_unique<WaitOp>(l, l->pushed));
    }
    push(*r, std::move(op));
    if (settings().eager) return drain(*r);
    return cudaSuccess;
}

cudaError_t sync_stream(cudaStream_t s)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    StreamRec *r = resolve(s);
    if (!r) return cudaErrorInvalidResourceHandle;
    return drain(*r);
}

Mem kind_of(const void *p)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    if (g_heap.contains(p)) return Mem::device;
    const auto a = reinterpret_cast<uintptr_t>(p);
    auto it = g_pinned.upper_bound(a);
    if (it != g_pinned.begin()) {
        --it;
        if (a < it->first + std::max<size_t>(it->second, 1)) return Mem::pinned;
    }
    return Mem::host;
}

bool device_range(const void *p, size_t bytes)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    uintptr_t start = 0;
    const Block *b = g_heap.find(p, &start);
    if (!b) return false;
    return reinterpret_cast<uintptr_t>(p) + bytes <= start + b->bytes;
}

void fault(cudaError_t e, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "[emulated device, pid %d] %s\n", static_cast<int>(getpid()), text);
    throw Fault{e, text};
}

Access::Access()
{
    big_lock().lock();
    g_heap.open();
}

Access::~Access()
{
    g_heap.close();
    big_lock().unlock();
}

void hold_access()
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    g_heap.hold();
}

void release_access()
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    g_heap.release();
}

cudaError_t sticky_error() { return g_sticky; }
int current_device() { return t_device; }
int device_count() { return settings().devices; }

bool take_kernel_fault()
{
    const bool fire = g_kernel_fault > 0 && --g_kernel_fault == 0;
    if (fire) g_faults.fetch_add(1);
    return fire;
}
bool take_nccl_fault()
{
    const bool fire = g_nccl_fault > 0 && --g_nccl_fault == 0;
    if (fire) g_faults.fetch_add(1);
    return fire;
}

void launch(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream, const Body &body, void *call)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    g_kernels.fetch_add(1, std::memory_order_relaxed);
    if (g_sticky) {
        record(g_sticky);
        return;
    }
    const unsigned long long threads = 1ull * block.x * block.y * block.z;
    if (threads == 0 || threads > kMaxThreads || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
        grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535 || shared_bytes > (48u << 10)) {
        record(cudaErrorInvalidConfiguration);
        return;
    }
    record(enqueue(stream, std::make_unique<KernelOp>(grid, block, body, call, take_kernel_fault())));
}

}  // namespace plm_emu

using namespace plm_emu;

// ---------------------------------------------------------------------------------------
// The CUDA runtime API
// ---------------------------------------------------------------------------------------

extern "C" {

void plm_emu_syncthreads(void)
{
    if (!t_cur) {
        t_divergent = t_divergent || t_direct;
        return;
    }
    yield_from(t_cur);
}

cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count) return record(cudaErrorInvalidValue);
    *count = settings().devices;
    return *count ? cudaSuccess : record(cudaErrorNoDevice);
}

cudaError_t cudaGetDevice(int *device)
{
    if (!device) return record(cudaErrorInvalidValue);
    if (!settings().devices) return record(cudaErrorNoDevice);
    *device = t_device;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    if (device < 0 || device >= settings().devices) return record(cudaErrorInvalidDevice);
    t_device = device;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (!prop) return record(cudaErrorInvalidValue);
    if (device < 0 || device >= settings().devices) return record(cudaErrorInvalidDevice);
    *prop = cudaDeviceProp{};
    std::snprintf(prop->name, sizeof prop->name, "pylopsmpi emulated device %d", device);
    std::snprintf(prop->uuid.bytes, sizeof prop->uuid.bytes, "plm-emu-gpu-%03d", device % 1000);
    prop->totalGlobalMem = settings().memory;
    prop->memPitch = 0x7fffffff;
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 1;
    prop->maxThreadsPerBlock = 1024;
    prop->maxGridSize[0] = 0x7fffffff;
    prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
    prop->pciBusID = device + 1;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    if (!value) return record(cudaErrorInvalidValue);
    if (device < 0 || device >= settings().devices) return record(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; return cudaSuccess;
    case cudaDevAttrMaxGridDimX: *value = 0x7fffffff; return cudaSuccess;
    case cudaDevAttrMaxGridDimY: *value = 65535; return cudaSuccess;
    case cudaDevAttrMaxPitch: *value = 0x7fffffff; return cudaSuccess;
    case cudaDevAttrMultiProcessorCount: *value = 1; return cudaSuccess;
    case cudaDevAttrMemoryPoolsSupported: *value = 1; return cudaSuccess;
    }
    return record(cudaErrorInvalidValue);
}

cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int device)
{
    if (!bus || len <= 0) return record(cudaErrorInvalidValue);
    if (device < 0 || device >= settings().devices) return record(cudaErrorInvalidDevice);
    std::snprintf(bus, static_cast<size_t>(len), "0000:%02x:00.0", device + 1);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    return record(drain_all());
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    const size_t cap = settings().memory, used = g_heap.used();
    if (free_bytes) *free_bytes = cap - std::min(cap, used);
    if (total_bytes) *total_bytes = cap;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    if (g_sticky) return g_sticky;
    const cudaError_t e = t_last;
    t_last = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { const cudaError_t s = g_sticky; return s ? s : t_last; }

const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidPitchValue: return "cudaErrorInvalidPitchValue";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorUnknown: return "cudaErrorUnknown";
    }
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidPitchValue: return "invalid pitch argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorUnknown: return "unknown error";
    }
    return "unknown error";
}

cudaError_t cudaMalloc(void **ptr, size_t bytes)
{
    if (!ptr) return record(cudaErrorInvalidValue);
    *ptr = nullptr;
    std::lock_guard<std::recursive_mutex> g(big_lock());
    if (g_sticky) return record(g_sticky);
    if (!settings().devices) return record(cudaErrorNoDevice);
    if (bytes > settings().memory) return record(cudaErrorMemoryAllocation);
    void *p = g_heap.alloc(bytes, t_device);
    if (!p) return record(cudaErrorMemoryAllocation);
    *ptr = p;
    return cudaSuccess;
}

cudaError_t cudaFree(void *ptr)
{
    if (!ptr) return cudaSuccess;
    std::lock_guard<std::recursive_mutex> g(big_lock());
    // cudaFree synchronises the device first.
    if (cudaError_t e = drain_all()) return record(e);
    return g_heap.release(ptr) ? cudaSuccess : record(cudaErrorInvalidValue);
}

cudaError_t cudaMallocHost(void **ptr, size_t bytes)
{
    if (!ptr) return record(cudaErrorInvalidValue);
    *ptr = nullptr;
    std::lock_guard<std::recursive_mutex> g(big_lock());
    if (g_sticky) return record(g_sticky);
    void *p = std::aligned_alloc(kAlign, round_up(std::max<size_t>(bytes, 1), kAlign));
    if (!p) return record(cudaErrorMemoryAllocation);
    if (settings().poison) std::memset(p, kFreshByte, bytes);
    g_pinned[reinterpret_cast<uintptr_t>(p)] = bytes;
    *ptr = p;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *ptr)
{
    if (!ptr) return cudaSuccess;
    std::lock_guard<std::recursive_mutex> g(big_lock());
    if (cudaError_t e = drain_all()) return record(e);
    auto it = g_pinned.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == g_pinned.end()) return record(cudaErrorInvalidValue);
    g_pinned.erase(it);
    std::free(ptr);
    return cudaSuccess;
}

cudaError_t cudaMallocAsync(void **ptr, size_t bytes, cudaStream_t stream)
{
    if (check_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    return cudaMalloc(ptr, bytes);
}

cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream)
{
    if (!ptr) return cudaSuccess;
    std::lock_guard<std::recursive_mutex> g(big_lock());
    if (!g_heap.find(ptr)) return record(cudaErrorInvalidValue);
    return record(enqueue(stream, fn_op([ptr] { g_heap.release(ptr); })));
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *ptr)
{
    if (!attr) return record(cudaErrorInvalidValue);
    std::lock_guard<std::recursive_mutex> g(big_lock());
    *attr = cudaPointerAttributes{};
    attr->device = -2;
    switch (kind_of(ptr)) {
    case Mem::device: {
        const Block *b = g_heap.find(ptr);
        if (!b) break;  // freed: not an allocation
        attr->type = cudaMemoryTypeDevice;
        attr->device = b->device;
        attr->devicePointer = const_cast<void *>(ptr);
        break;
    }
    case Mem::pinned:
        attr->type = cudaMemoryTypeHost;
        attr->device = t_device;
        attr->hostPointer = attr->devicePointer = const_cast<void *>(ptr);
        break;
    case Mem::host: break;
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    return copy(dst, bytes, src, bytes, bytes, 1, kind, nullptr, true);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return copy(dst, bytes, src, bytes, bytes, 1, kind, stream, false);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return copy(dst, dpitch, src, spitch, width, height, kind, stream, false);
}

cudaError_t cudaMemsetAsync(void *ptr, int value, size_t bytes, cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    if (g_sticky) return record(g_sticky);
    if (!bytes) return cudaSuccess;
    if (!device_range(ptr, bytes)) return record(cudaErrorInvalidValue);
    return record(enqueue(stream, fn_op([=] { std::memset(ptr, value, bytes); })));
}

cudaError_t cudaMemset(void *ptr, int value, size_t bytes) { return cudaMemsetAsync(ptr, value, bytes, nullptr); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags)
{
    if (!stream) return record(cudaErrorInvalidValue);
    std::lock_guard<std::recursive_mutex> g(big_lock());
    if (g_sticky) return record(g_sticky);
    auto *r = new StreamRec();
    r->device = t_device;
    r->nonblocking = (flags & cudaStreamNonBlocking) != 0;
    g_streams.insert(r);
    *stream = reinterpret_cast<cudaStream_t>(r);
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    auto *r = reinterpret_cast<StreamRec *>(stream);
    if (!stream || !g_streams.count(r)) return record(cudaErrorInvalidResourceHandle);
    // The queued work still completes (emulated: now).
    const cudaError_t e = drain(*r);
    g_streams.erase(r);
    for (EventRec *ev : g_events)
        if (ev->s == r) ev->s = nullptr;
    delete r;
    return record(e);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return record(sync_stream(stream)); }

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    StreamRec *r = resolve(stream);
    if (!r) return record(cudaErrorInvalidResourceHandle);
    const cudaError_t e = advance(*r, r->pushed, false);
    return e == cudaErrorNotReady ? e : record(e);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    auto *ev = reinterpret_cast<EventRec *>(event);
    if (!g_events.count(ev)) return record(cudaErrorInvalidResourceHandle);
    if (!ev->s) return resolve(stream) ? cudaSuccess : record(cudaErrorInvalidResourceHandle);
    return record(enqueue(stream, std::make_unique<WaitOp>(ev->s, ev->seq)));
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    if (!event) return record(cudaErrorInvalidValue);
    std::lock_guard<std::recursive_mutex> g(big_lock());
    auto *ev = new EventRec();
    ev->timing = !(flags & cudaEventDisableTiming);
    g_events.insert(ev);
    *event = reinterpret_cast<cudaEvent_t>(ev);
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    auto *ev = reinterpret_cast<EventRec *>(event);
    if (!g_events.erase(ev)) return record(cudaErrorInvalidResourceHandle);
    delete ev;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    auto *ev = reinterpret_cast<EventRec *>(event);
    if (!g_events.count(ev)) return record(cudaErrorInvalidResourceHandle);
    if (g_sticky) return record(g_sticky);
    StreamRec *r = resolve(stream);
    if (!r) return record(cudaErrorInvalidResourceHandle);
    ev->s = r;
    ev->seq = r->pushed;
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    auto *ev = reinterpret_cast<EventRec *>(event);
    if (!g_events.count(ev)) return record(cudaErrorInvalidResourceHandle);
    if (!ev->s) return record(g_sticky);
    const cudaError_t e = advance(*ev->s, ev->seq, false);
    return e == cudaErrorNotReady ? e : record(e);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    auto *ev = reinterpret_cast<EventRec *>(event);
    if (!g_events.count(ev)) return record(cudaErrorInvalidResourceHandle);
    if (!ev->s) return record(g_sticky);
    return record(advance(*ev->s, ev->seq, true));
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    auto *a = reinterpret_cast<EventRec *>(start), *b = reinterpret_cast<EventRec *>(end);
    if (!ms || !g_events.count(a) || !g_events.count(b) || !a->timing || !b->timing)
        return record(cudaErrorInvalidResourceHandle);
    *ms = 0.0f;  // no device clock: the emulation times nothing
    return cudaSuccess;
}

// ---- controls (plm_device_emu.h) ----

void plm_emu_fail_kernel(long long n)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    g_kernel_fault = n > 0 ? n : 0;
}

void plm_emu_fail_nccl(long long n)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    g_nccl_fault = n > 0 ? n : 0;
}

void plm_emu_clear_errors(void)
{
    std::lock_guard<std::recursive_mutex> g(big_lock());
    g_sticky = cudaSuccess;
    t_last = cudaSuccess;
    auto reset = [](StreamRec &s) {
        s.q.clear();
        s.done = s.pushed;
        s.front_started = false;
    };
    for (auto &l : g_legacy) reset(*l);
    for (StreamRec *s : g_streams) reset(*s);
}

void plm_emu_open_device_memory(int open)
{
    if (open)
        hold_access();
    else
        release_access();
}

void plm_emu_set_eager(int eager) { settings().eager = eager != 0; }

long long plm_emu_count(const char *what)
{
    if (!what) return -1;
    if (!std::strcmp(what, "kernels")) return g_kernels.load();
    if (!std::strcmp(what, "ops")) return g_ops.load();
    if (!std::strcmp(what, "syncs")) return g_syncs.load();
    if (!std::strcmp(what, "faults")) return g_faults.load();
    return -1;
}

}  // extern "C"
