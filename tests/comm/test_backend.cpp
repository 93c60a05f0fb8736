// White-box tests of the backend seam (comm/backend.hpp, comm/distributed.hpp) through its
// effects: non-blocking collectives overlapping local work and each other, persistent halo
// and alltoallv plans in flight together, Request test/wait/then semantics and errors, a
// backend without an entry (PLM_ERR_NOT_SUPPORTED), the CUDA-awareness decision agreed when
// one rank's environment differs, the host-emulated staging backend (the device-staging code
// path on host memory, compared with mpi_host; and on device memory where it exists - the
// emulated device in CI - with small caches and chunks, so staging past the cache and
// pipelining run there), reduce to every root (chunked too, staged
// against mpi_host) and the split hook. Every expected value is
// computed in the test from the formula that made every rank's data; comparisons are exact.
#include <algorithm>

#include "comm/comm_test_util.hpp"

#include "comm/backend.hpp"

namespace {

template <typename T> std::vector<T> block(int r, int64_t n, int64_t first = 0)
{
    std::vector<T> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = val<T>(r, first + i);
    return v;
}

// Uneven counts with empty blocks: rank q holds (q * 5 + 2) % 4 elements (q = 1: 3, q = 2: 0).
int64_t uneven(int q) { return (q * 5 + 2) % 4; }

// ---------------------------------------------------------------------------------------
// Non-blocking collectives overlapping local work and each other
// ---------------------------------------------------------------------------------------

template <typename T> void case_overlap(Checker &ck, int64_t n)
{
    const int r = R(), p = P();
    const Exec e{};
    const std::string what = tag<T>("overlap") + " n=" + std::to_string(n);
    std::vector<T> mine = block<T>(r, n), sum(static_cast<size_t>(n), sentinel<T>());
    std::vector<int64_t> counts(static_cast<size_t>(p));
    int64_t total = 0;
    for (int q = 0; q < p; ++q) total += counts[static_cast<size_t>(q)] = uneven(q);
    std::vector<T> gathered(static_cast<size_t>(total), sentinel<T>()), part = block<T>(r, uneven(r), 100);
    std::vector<T> bc = r == p - 1 ? block<T>(r, n, 7) : std::vector<T>(static_cast<size_t>(n), sentinel<T>());

    std::vector<T> want_sum(static_cast<size_t>(n)), want_gather;
    guarded(ck, what, [&] {
        Request a = iallreduce(C(), e, mine.data(), sum.data(), n, TypeInfo<T>::dt, ReduceOp::sum);
        Request b = iallgatherv(C(), e, part.data(), gathered.data(), counts, TypeInfo<T>::dt);
        Request c = ibcast(C(), e, bc.data(), n, TypeInfo<T>::dt, p - 1);
        // Local work while all three are in flight: the serial reference, polling between.
        for (int64_t i = 0; i < n; ++i) {
            T s{};
            for (int q = 0; q < p; ++q) s += val<T>(q, i);
            want_sum[static_cast<size_t>(i)] = s;
            if (i % 64 == 0) (void)(a.test() && b.test() && c.test());
        }
        for (int q = 0; q < p; ++q) {
            std::vector<T> bq = block<T>(q, uneven(q), 100);
            want_gather.insert(want_gather.end(), bq.begin(), bq.end());
        }
        c.wait();  // completion in another order than the start
        a.wait();
        b.wait();
        ck.expect(a.done() && b.done() && c.done(), "%s: requests not done after wait", what.c_str());
    });
    expect_equal(ck, sum, want_sum, what + " allreduce");
    expect_equal(ck, gathered, want_gather, what + " allgatherv");
    expect_equal(ck, bc, block<T>(p - 1, n, 7), what + " bcast");
}

void test_nonblocking_overlap(void **)
{
    Checker ck;
    for (int64_t n : {1, 1000}) {
        case_overlap<double>(ck, n);
        case_overlap<c128>(ck, n);
        case_overlap<int64_t>(ck, n);
        case_overlap<float>(ck, n);
    }
    alarm(0);
    assert_all_ranks_true(ck.ok);
}

// ---------------------------------------------------------------------------------------
// Persistent plans, two of each kind in flight at once
// ---------------------------------------------------------------------------------------

// One halo exchange's buffers for a plan sending up elements to rank+1 and down to rank-1.
template <typename T> struct HaloCase {
    int64_t up, down;
    std::vector<T> to_next, to_prev, from_prev, from_next;
    HaloCase(int64_t u, int64_t d, int round) : up(u), down(d)
    {
        const int r = R();
        to_next = block<T>(r, up, 1000 * round);
        to_prev = block<T>(r, down, 1000 * round + 500);
        from_prev.assign(static_cast<size_t>(up), sentinel<T>());
        from_next.assign(static_cast<size_t>(down), sentinel<T>());
    }
    Halo halo()
    {
        const int r = R(), p = P();
        Halo h;
        h.to_next = to_next.data();
        h.n_to_next = r + 1 < p ? up : 0;
        h.to_prev = to_prev.data();
        h.n_to_prev = r > 0 ? down : 0;
        h.from_prev = from_prev.data();
        h.n_from_prev = r > 0 ? up : 0;
        h.from_next = from_next.data();
        h.n_from_next = r + 1 < p ? down : 0;
        return h;
    }
    HaloPlan plan() { return plan_of(halo()); }
    static HaloPlan plan_of(const Halo &h)
    {
        return HaloPlan(C(), TypeInfo<T>::dt, h.n_to_prev, h.n_from_prev, h.n_to_next, h.n_from_next);
    }
    void check(Checker &ck, int round, const std::string &what) const
    {
        const int r = R(), p = P();
        expect_equal(ck, from_prev,
                     r > 0 ? block<T>(r - 1, up, 1000 * round) : std::vector<T>(static_cast<size_t>(up), sentinel<T>()),
                     what + " from_prev");
        expect_equal(ck, from_next,
                     r + 1 < p ? block<T>(r + 1, down, 1000 * round + 500)
                               : std::vector<T>(static_cast<size_t>(down), sentinel<T>()),
                     what + " from_next");
    }
};

// Rank s sends cnt(s, d) elements to rank d, valued from (s, d).
template <typename T> struct A2ACase {
    int k;  // which count formula
    std::vector<int64_t> sc, sd, rc, rd;
    std::vector<T> sbuf, rbuf, want;
    int64_t cnt(int s, int d) const { return k == 0 ? (s + 2 * d) % 3 : (2 * s + d + 1) % 4; }
    A2ACase(int which, int round) : k(which)
    {
        const int r = R(), p = P();
        int64_t so = 0, ro = 0;
        for (int q = 0; q < p; ++q) {
            sc.push_back(cnt(r, q));
            sd.push_back(so);
            so += sc.back();
            rc.push_back(cnt(q, r));
            rd.push_back(ro);
            ro += rc.back();
        }
        for (int q = 0; q < p; ++q) {
            std::vector<T> s = block<T>(r, sc[static_cast<size_t>(q)], 100 * q + 10000 * round);
            sbuf.insert(sbuf.end(), s.begin(), s.end());
            std::vector<T> w = block<T>(q, rc[static_cast<size_t>(q)], 100 * r + 10000 * round);
            want.insert(want.end(), w.begin(), w.end());
        }
        rbuf.assign(want.size(), sentinel<T>());
    }
    AlltoallvPlan plan() const { return AlltoallvPlan(C(), TypeInfo<T>::dt, sc, sd, rc, rd); }
};

void test_plans_in_flight(void **)
{
    Checker ck;
    guarded(ck, "plans in flight", [&] {
        // Shapes from round 0; the plans are reused for every round.
        HaloCase<double> h0(3, 2, 0);
        HaloCase<int64_t> h1(1, 4, 0);
        A2ACase<double> a0(0, 0);
        A2ACase<c128> a1(1, 0);
        const HaloPlan hp0 = h0.plan(), hp1 = h1.plan();
        const AlltoallvPlan ap0 = a0.plan(), ap1 = a1.plan();
        const int tags[] = {hp0.tag(), hp0.tag() + 1, hp1.tag(), hp1.tag() + 1, ap0.tag(), ap1.tag()};
        for (int i = 0; i < 6; ++i)
            for (int j = i + 1; j < 6; ++j) ck.expect(tags[i] != tags[j], "plans share tag %d", tags[i]);
        for (int round = 0; round < 3; ++round) {
            const std::string what = "plans round " + std::to_string(round);
            HaloCase<double> g0(3, 2, round);
            HaloCase<int64_t> g1(1, 4, round);
            A2ACase<double> b0(0, round);
            A2ACase<c128> b1(1, round);
            const Exec e{};
            Request r0 = hp0.start(e, g0.halo());
            Request r1 = ap1.start(e, b1.sbuf.data(), b1.rbuf.data());
            Request r2 = hp1.start(e, g1.halo());
            Request r3 = ap0.start(e, b0.sbuf.data(), b0.rbuf.data());
            // Wait in reverse order: each exchange must complete on its own tags.
            r3.wait();
            r2.wait();
            r1.wait();
            r0.wait();
            g0.check(ck, round, what + " halo f64");
            g1.check(ck, round, what + " halo i64");
            expect_equal(ck, b0.rbuf, b0.want, what + " alltoallv f64");
            expect_equal(ck, b1.rbuf, b1.want, what + " alltoallv c128");
        }
        // The one-shot exchange agrees with the plan.
        HaloCase<double> g(3, 2, 7);
        ineighbour_exchange(C(), Exec{}, DType::f64, g.halo()).wait();
        g.check(ck, 7, "ineighbour_exchange");
        // A plan refuses buffers of another shape.
        HaloCase<double> other(2, 2, 0);
        Halo h = other.halo();
        const plm_status_t st = status_of([&] { hp0.start(Exec{}, h).wait(); });
        const Halo ref = h0.halo();
        const bool differs = h.n_to_prev != ref.n_to_prev || h.n_from_prev != ref.n_from_prev ||
                             h.n_to_next != ref.n_to_next || h.n_from_next != ref.n_from_next;
        ck.expect(!differs || st == PLM_ERR_INTERNAL, "halo plan with other counts: %s", plm_status_string(st));
    });
    alarm(0);
    assert_all_ranks_true(ck.ok);
}

// ---------------------------------------------------------------------------------------
// Request semantics
// ---------------------------------------------------------------------------------------

void test_request_semantics(void **)
{
    Checker ck;
    const int r = R();
    const Exec e{};
    guarded(ck, "request semantics", [&] {
        Request empty;
        ck.expect(empty.done() && empty.test(), "an empty request is complete");
        empty.wait();
        ck.expect(Request::all({}).done() || Request::all({}).test(), "all() of nothing is complete");

        // A receive from self cannot complete before its send is posted.
        double in[4] = {0, 0, 0, 0}, out[4] = {1.5, 2.5, -3.5, r + 0.25};
        int ran = 0;
        Request rx = irecv(C(), e, in, 4, DType::f64, r, 41).then([&] { ++ran; });
        ck.expect(!rx.test() && !rx.done() && ran == 0, "receive completed before its send was posted");
        Request tx = isend(C(), e, out, 4, DType::f64, r, 41);
        while (!rx.test()) {
        }
        ck.expect(rx.done() && rx.test() && ran == 1, "then() ran %d times after completion", ran);
        rx.wait();
        ck.expect(ran == 1, "then() ran again on a second wait");
        tx.wait();
        ck.expect(std::memcmp(in, out, sizeof in) == 0, "self message content");

        // Overwriting or destroying an in-flight request completes it first.
        double a[2] = {0, 0}, b[2] = {0, 0}, s1[2] = {7, 8}, s2[2] = {9, 10};
        Request t1 = isend(C(), e, s1, 2, DType::f64, r, 42);
        Request t2 = isend(C(), e, s2, 2, DType::f64, r, 43);
        Request q = irecv(C(), e, a, 2, DType::f64, r, 42);
        q = Request();
        ck.expect(a[0] == 7 && a[1] == 8, "move-assign did not complete the overwritten request");
        { Request gone = irecv(C(), e, b, 2, DType::f64, r, 43); }
        ck.expect(b[0] == 9 && b[1] == 10, "destroying an in-flight request did not complete it");
        t1.wait();
        t2.wait();

        // Errors surface in wait() and test(), and leave the request complete.
        double big[4] = {1, 2, 3, 4}, small[2] = {0, 0};
        for (bool poll : {false, true}) {
            Request s = isend(C(), e, big, 4, DType::f64, r, 44);
            Request t = irecv(C(), e, small, 2, DType::f64, r, 44);
            const plm_status_t st = status_of([&] {
                if (poll)
                    while (!t.test()) {
                    }
                else
                    t.wait();
            });
            ck.expect(st == PLM_ERR_MPI, "truncated receive (%s): %s, expected PLM_ERR_MPI", poll ? "test" : "wait",
                      plm_status_string(st));
            ck.expect(t.done(), "a failed request is not complete");
            s.wait();
        }
    });
    alarm(0);
    assert_all_ranks_true(ck.ok);
}

// ---------------------------------------------------------------------------------------
// A backend without entries
// ---------------------------------------------------------------------------------------

class Bare final : public Backend {
public:
    using Backend::Backend;
    plm_backend_t kind() const override { return PLM_BACKEND_NCCL; }
};

void test_missing_entries_not_supported(void **)
{
    Checker ck;
    Bare b(C().view());
    double x = 1, y = 0;
    const int64_t one[1] = {1}, zero[1] = {0};
    const Exec e{};
    const std::vector<std::pair<const char *, std::function<void()>>> calls = {
        {"allreduce", [&] { b.iallreduce(e, &x, &y, 1, DType::f64, ReduceOp::sum); }},
        {"allgatherv", [&] { b.iallgatherv(e, &x, &y, one, zero, DType::f64); }},
        {"bcast", [&] { b.ibcast(e, &x, 1, DType::f64, 0); }},
        {"reduce", [&] { b.ireduce(e, &x, &y, 1, DType::f64, ReduceOp::sum, 0); }},
        {"send", [&] { b.isend(e, &x, 1, DType::f64, 0, 0); }},
        {"recv", [&] { b.irecv(e, &y, 1, DType::f64, 0, 0); }},
        {"alltoallv", [&] { b.ialltoallv(e, &x, one, zero, &y, one, zero, DType::f64, 0); }},
        {"split", [&] { b.split(C().view()); }},
    };
    for (const auto &[name, call] : calls) {
        std::string msg;
        plm_status_t st = PLM_SUCCESS;
        try {
            call();
        } catch (const Error &err) {
            st = err.status();
            msg = err.what();
        }
        ck.expect(st == PLM_ERR_NOT_SUPPORTED, "missing %s: %s, expected PLM_ERR_NOT_SUPPORTED", name,
                  plm_status_string(st));
        ck.expect(msg.find(name) != std::string::npos && msg.find("nccl") != std::string::npos,
                  "missing %s: message '%s' names neither the entry nor the backend", name, msg.c_str());
    }
    ck.expect(std::string(b.name()) == "nccl", "name() is %s", b.name());
    assert_all_ranks_true(ck.ok);
}

// ---------------------------------------------------------------------------------------
// The CUDA-awareness decision is agreed across ranks
// ---------------------------------------------------------------------------------------

struct Decision {
    plm_status_t create = PLM_SUCCESS;
    int yes = -1;
    plm_cuda_aware_source_t source = PLM_CUDA_AWARE_FROM_DEFAULT;
    plm_backend_t device = PLM_BACKEND_AUTO;
};

// Sets PYLOPS_MPI_CUDA_AWARE to env (nullptr: unset) on this rank, creates a communicator
// through the public API (config cuda_aware = cfg_aware) and reads back its decision.
Decision decide(const char *env, int cfg_aware = -1, plm_backend_t forced = PLM_BACKEND_AUTO)
{
    if (env)
        setenv("PYLOPS_MPI_CUDA_AWARE", env, 1);
    else
        unsetenv("PYLOPS_MPI_CUDA_AWARE");
    plm_comm_config_t cfg = nullptr;
    plm_comm_config_create(&cfg);
    plm_comm_config_set_cuda_aware(cfg, cfg_aware);
    plm_comm_config_set_backend(cfg, forced);
    Decision d;
    plm_comm_t c = nullptr;
    d.create = plm_comm_create(MPI_COMM_WORLD, cfg, &c);
    plm_comm_config_destroy(&cfg);
    unsetenv("PYLOPS_MPI_CUDA_AWARE");
    if (d.create != PLM_SUCCESS) return d;
    plm_comm_get_cuda_aware(c, &d.yes, &d.source);
    plm_comm_get_backend(c, PLM_MEMORY_DEVICE, &d.device);  // UNAVAILABLE in host builds; the choice is set
    plm_comm_destroy(&c);
    return d;
}

// The same value on every rank?
bool same_everywhere(int64_t v)
{
    const int64_t lo = allreduce_i64(C(), v, ReduceOp::min), hi = allreduce_i64(C(), v, ReduceOp::max);
    return lo == hi;
}

void check_agreed(Checker &ck, const Decision &d, const char *what)
{
    ck.expect(same_everywhere(d.create) && same_everywhere(d.yes) && same_everywhere(d.device),
              "%s: ranks disagree (create %s, cuda_aware %d, device backend %s)", what, plm_status_string(d.create),
              d.yes, plm_backend_name(d.device));
}

void test_cuda_aware_agreed(void **)
{
    Checker ck;
    const int r = R(), p = P();
    guarded(ck, "cuda-aware agreement", [&] {
        // Everyone says yes: CUDA-aware MPI for device memory.
        Decision all = decide("1");
        check_agreed(ck, all, "env 1 everywhere");
        ck.expect(all.yes == 1 && all.source == PLM_CUDA_AWARE_FROM_ENV && all.device == PLM_BACKEND_MPI_CUDA_AWARE,
                  "env 1 everywhere: yes %d source %d backend %s", all.yes, all.source, plm_backend_name(all.device));

        // Only one rank says yes (rank 0, then the last): all take no, from the agreement.
        for (int odd : {0, p - 1}) {
            Decision d = decide(r == odd ? "1" : "0");
            check_agreed(ck, d, "env 1 on one rank");
            const bool alone = p == 1;
            ck.expect(d.yes == (alone ? 1 : 0) &&
                          d.source == (alone ? PLM_CUDA_AWARE_FROM_ENV : PLM_CUDA_AWARE_FROM_AGREEMENT) &&
                          d.device == (alone ? PLM_BACKEND_MPI_CUDA_AWARE : PLM_BACKEND_MPI_STAGED),
                      "env 1 on rank %d only: yes %d source %d backend %s", odd, d.yes, d.source,
                      plm_backend_name(d.device));
        }

        // The variable set on one rank only, the others deciding from the MPI library.
        Decision partial = decide(r == p - 1 ? "1" : nullptr);
        check_agreed(ck, partial, "env on the last rank only");

        // The config field on one rank only.
        Decision cfg = decide(nullptr, r == 0 ? 1 : -1);
        check_agreed(ck, cfg, "config cuda_aware on rank 0 only");

        // A forced backend on one rank only is an argument error on every rank.
        Decision forced = decide(nullptr, -1, r == 0 ? PLM_BACKEND_MPI_STAGED : PLM_BACKEND_AUTO);
        check_agreed(ck, forced, "forced backend on rank 0 only");
        ck.expect(forced.create == (p == 1 ? PLM_SUCCESS : PLM_ERR_INVALID_ARG), "forced backend on rank 0 only: %s",
                  plm_status_string(forced.create));
    });
    alarm(0);
    assert_all_ranks_true(ck.ok);
}

// ---------------------------------------------------------------------------------------
// The staging backend on host memory, against mpi_host
// ---------------------------------------------------------------------------------------

// The buffers of a run in memory `mem`: the host vectors themselves, or device copies of them
// uploaded on the run's stream when made (of) and brought back after the operation (fetch).
template <typename T> class Buffers {
public:
    Buffers(Space mem, const Exec &e) : mem_(mem), e_(e) {}
    T *of(std::vector<T> &v)
    {
        if (mem_ == Space::host) return v.data();
        const std::size_t bytes = std::max<std::size_t>(v.size(), 1) * sizeof(T);
        bufs_.push_back(Buffer::allocate(mem_, bytes));
        if (!v.empty()) copy_on(mem_, bufs_.back().data(), v.data(), v.size() * sizeof(T), e_.stream);
        return static_cast<T *>(bufs_.back().data());
    }
    void fetch(std::vector<T> &v, const T *p) const
    {
        if (mem_ != Space::host && !v.empty()) copy_bytes(Space::host, v.data(), mem_, p, v.size() * sizeof(T), e_.stream);
    }

private:
    Space mem_;
    Exec e_;
    std::vector<Buffer> bufs_;
};

// Runs every entry of backend b on the formula data, in memory `mem` (device memory: through
// device copies on e's stream); returns everything it received.
template <typename T>
std::vector<T> run_all(Checker &ck, Backend &b, int64_t n, const std::string &what, Space mem = Space::host,
                       const Exec &e = Exec{})
{
    const int r = b.view().rank, p = b.view().size;
    std::vector<T> got;
    auto keep = [&](const std::vector<T> &v) { got.insert(got.end(), v.begin(), v.end()); };
    guarded(ck, what, [&] {
        Buffers<T> B(mem, e);
        std::vector<T> x = block<T>(r, n), s(static_cast<size_t>(n), sentinel<T>());
        T *px = B.of(x), *ps = B.of(s);
        Request q = b.iallreduce(e, px, ps, n, TypeInfo<T>::dt, ReduceOp::sum);
        // Staged data land only when the request completes.
        if (mem == Space::host && b.kind() == PLM_BACKEND_MPI_STAGED && n > 0 && p > 1)
            ck.expect(s[0] == sentinel<T>() || q.done(), "%s: allreduce wrote before completion", what.c_str());
        q.wait();
        B.fetch(s, ps);
        keep(s);
        b.iallreduce(e, px, px, n, TypeInfo<T>::dt, ReduceOp::sum).wait();
        B.fetch(x, px);
        ck.expect(x == s, "%s: in-place allreduce differs", what.c_str());
        // The blocking calls (staged: pipelined in chunks past the chunk size).
        std::vector<T> xb = block<T>(r, n, 11), yb(static_cast<size_t>(n), sentinel<T>());
        T *pxb = B.of(xb), *pyb = B.of(yb);
        b.allreduce(e, pxb, pyb, n, TypeInfo<T>::dt, ReduceOp::sum);
        B.fetch(yb, pyb);
        keep(yb);
        b.allreduce(e, pxb, pxb, n, TypeInfo<T>::dt, ReduceOp::sum);
        B.fetch(xb, pxb);
        ck.expect(xb == yb, "%s: in-place blocking allreduce differs", what.c_str());
        for (int root = 0; root < p; ++root) {
            std::vector<T> buf = r == root ? block<T>(root, n, 13) : std::vector<T>(static_cast<size_t>(n), sentinel<T>());
            T *pb = B.of(buf);
            b.bcast(e, pb, n, TypeInfo<T>::dt, root);
            B.fetch(buf, pb);
            keep(buf);
        }

        std::vector<int64_t> counts, displs;
        int64_t total = 0;
        for (int q2 = 0; q2 < p; ++q2) {
            counts.push_back(uneven(q2) * n / 4);
            displs.push_back(total);
            total += 1;  // a gap after each block, which must stay untouched
            total += counts.back();
        }
        std::vector<T> mine = block<T>(r, counts[static_cast<size_t>(r)], 50), all(static_cast<size_t>(total), sentinel<T>());
        T *pall = B.of(all);
        b.iallgatherv(e, B.of(mine), pall, counts.data(), displs.data(), TypeInfo<T>::dt).wait();
        B.fetch(all, pall);
        keep(all);

        for (int root = 0; root < p; ++root) {
            std::vector<T> buf = r == root ? block<T>(root, n, 9) : std::vector<T>(static_cast<size_t>(n), sentinel<T>());
            T *pb = B.of(buf);
            b.ibcast(e, pb, n, TypeInfo<T>::dt, root).wait();
            B.fetch(buf, pb);
            keep(buf);
        }

        std::vector<T> out = block<T>(r, n, 3), in(static_cast<size_t>(n), sentinel<T>());
        T *pin = B.of(in);
        Request rx = b.irecv(e, pin, n, TypeInfo<T>::dt, (r + p - 1) % p, 5);
        Request tx = b.isend(e, B.of(out), n, TypeInfo<T>::dt, (r + 1) % p, 5);
        rx.wait();
        tx.wait();
        B.fetch(in, pin);
        keep(in);

        std::vector<int64_t> sc, sd, rc, rd;
        int64_t so = 0, ro = 0;
        for (int q2 = 0; q2 < p; ++q2) {
            sc.push_back((r + q2) % 3 * n / 2);
            sd.push_back(so);
            so += sc.back();
            rc.push_back((q2 + r) % 3 * n / 2);
            rd.push_back(ro);
            ro += rc.back();
        }
        std::vector<T> sb = block<T>(r, so, 70), rb(static_cast<size_t>(ro), sentinel<T>());
        T *prb = B.of(rb);
        b.ialltoallv(e, B.of(sb), sc.data(), sd.data(), prb, rc.data(), rd.data(), TypeInfo<T>::dt, 77).wait();
        B.fetch(rb, prb);
        keep(rb);
    });
    return got;
}

template <typename T> void case_staged(Checker &ck, int64_t n, std::size_t cache, std::size_t chunk = 1 << 20)
{
    const std::string what = tag<T>("staged") + " n=" + std::to_string(n) + " cache=" + std::to_string(cache) +
                             " chunk=" + std::to_string(chunk);
    std::unique_ptr<Backend> host = make_mpi_host(C().view());
    std::unique_ptr<Backend> staged = make_mpi_staged(C().view(), Space::host, Space::host, cache, chunk);
    ck.expect(staged->kind() == PLM_BACKEND_MPI_STAGED && std::string(staged->name()) == "mpi_staged",
              "staged backend kind %s", staged->name());
    const std::vector<T> want = run_all<T>(ck, *host, n, what + " (mpi_host)");
    for (int round = 0; round < 2; ++round)  // the second round reuses cached staging buffers
        expect_equal(ck, run_all<T>(ck, *staged, n, what), want, what + " round " + std::to_string(round));
    // Where device memory exists (a GPU, or the emulated device with its deferred streams):
    // the same on device buffers staged through pinned memory, the copies on a stream of its own.
    if (!space_ops(Space::device)) return;
    void *stream = create_stream(0);
    const Exec e{Space::device, 0, Stream{stream}};
    std::unique_ptr<Backend> dev = make_mpi_staged(C().view(), Space::device, Space::pinned, cache, chunk);
    for (int round = 0; round < 2; ++round)
        expect_equal(ck, run_all<T>(ck, *dev, n, what + " device", Space::device, e), want,
                     what + " device round " + std::to_string(round));
    dev.reset();
    destroy_stream(stream);
}

void test_staged_emulation(void **)
{
    Checker ck;
    for (std::size_t cache : {std::size_t{0}, std::size_t{256}, std::size_t{1} << 20}) {
        case_staged<double>(ck, 40, cache);
        case_staged<c64>(ck, 40, cache);
        case_staged<int64_t>(ck, 0, cache);
    }
    // Pipelined staging: 3-element chunks (40 = 13 full chunks and a ragged one), one
    // element per chunk, and a chunk smaller than one element (rounded up to one).
    case_staged<double>(ck, 40, 1 << 20, 3 * sizeof(double));
    case_staged<c64>(ck, 40, 0, sizeof(c64));
    case_staged<double>(ck, 40, 256, 1);
    set_max_mpi_count(3);  // chunked MPI underneath the staging
    case_staged<double>(ck, 40, 1 << 20);
    set_max_mpi_count(0);
    alarm(0);
    assert_all_ranks_true(ck.ok);
}

// ---------------------------------------------------------------------------------------
// Reduce to a root, against a serial reference
// ---------------------------------------------------------------------------------------

template <typename T> T reduce_gen(ReduceOp op, int r, int64_t i) { return op == ReduceOp::prod ? pval<T>(r, i) : val<T>(r, i); }

template <typename T> std::vector<T> reduce_want(ReduceOp op, int64_t n)
{
    std::vector<T> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        T acc = reduce_gen<T>(op, 0, i);
        for (int q = 1; q < P(); ++q) {
            const T v = reduce_gen<T>(op, q, i);
            if (op == ReduceOp::sum) acc += v;
            else if (op == ReduceOp::prod) acc *= v;
            else if constexpr (!is_complex_v<T>) acc = op == ReduceOp::max ? std::max(acc, v) : std::min(acc, v);
        }
        want[static_cast<size_t>(i)] = acc;
    }
    return want;
}

// One reduce of n elements to root through b (in place on the root when asked). Checks that
// the root holds the reference, the other ranks' buffers are untouched, and send is unchanged;
// returns what this rank's buffers hold.
template <typename T>
std::vector<T> case_reduce(Checker &ck, Backend &b, ReduceOp op, int64_t n, int root, bool in_place,
                           const std::string &what)
{
    const int r = b.view().rank;
    std::vector<T> send(static_cast<size_t>(n)), recv(static_cast<size_t>(n), sentinel<T>());
    for (int64_t i = 0; i < n; ++i) send[static_cast<size_t>(i)] = reduce_gen<T>(op, r, i);
    const std::vector<T> send0 = send;
    guarded(ck, what, [&] {
        T *out = in_place && r == root ? send.data() : r == root || n % 2 ? recv.data() : nullptr;  // NULL off root
        b.ireduce(Exec{}, send.data(), out, n, TypeInfo<T>::dt, op, root).wait();
    });
    const std::vector<T> want = reduce_want<T>(op, n), untouched(static_cast<size_t>(n), sentinel<T>());
    if (r == root && in_place) {
        expect_equal(ck, send, want, what + " (root, in place)");
        return send;
    }
    expect_equal(ck, recv, r == root ? want : untouched, what + (r == root ? " (root)" : " (recv off the root)"));
    expect_equal(ck, send, send0, what + " (send buffer changed)");
    return recv;
}

template <typename T> void reduce_all(Checker &ck, Backend &host, Backend &staged)
{
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::prod}) {
        if (is_complex_v<T> && (op == ReduceOp::max || op == ReduceOp::min)) continue;
        for (int64_t n : {0, 1, 7, 40})
            for (int root = 0; root < P(); ++root)
                for (bool ip : {false, true}) {
                    const std::string what = tag<T>("reduce") + " " + op_name(op) + " n=" + std::to_string(n) +
                                             " root=" + std::to_string(root) + (ip ? " in place" : "");
                    const std::vector<T> h = case_reduce<T>(ck, host, op, n, root, ip, what + " mpi_host");
                    expect_equal(ck, case_reduce<T>(ck, staged, op, n, root, ip, what + " staged"), h,
                                 what + " staged vs mpi_host");
                }
    }
}

void test_reduce(void **)
{
    Checker ck;
    std::unique_ptr<Backend> host = make_mpi_host(C().view());
    std::unique_ptr<Backend> staged = make_mpi_staged(C().view(), Space::host, Space::host);
    for (int64_t max : {int64_t{0}, int64_t{3}}) {  // 3: chunked MPI underneath
        set_max_mpi_count(max);
        reduce_all<float>(ck, *host, *staged);
        reduce_all<double>(ck, *host, *staged);
        reduce_all<c64>(ck, *host, *staged);
        reduce_all<c128>(ck, *host, *staged);
        reduce_all<int64_t>(ck, *host, *staged);
    }
    set_max_mpi_count(0);
    guarded(ck, "reduce through the communication layer", [&] {
        // The free functions, several reduces in flight at once, completed in reverse order.
        const int r = R(), p = P();
        std::vector<double> a(5, r + 1.0), b(5, 2.0 * r), ra(5, -1), rb(5, -1);
        Request qa = ireduce(C(), Exec{}, a.data(), ra.data(), 5, DType::f64, ReduceOp::sum, 0);
        Request qb = ireduce(C(), Exec{}, b.data(), rb.data(), 5, DType::f64, ReduceOp::max, p - 1);
        qb.wait();
        qa.wait();
        reduce(C(), Exec{}, a.data(), a.data(), 5, DType::f64, ReduceOp::prod, p / 2);
        double fact = 1;
        for (int q = 1; q <= p; ++q) fact *= q;
        ck.expect(r != 0 || ra == std::vector<double>(5, p * (p + 1) / 2.0), "reduce sum to 0: %g", ra[0]);
        ck.expect(r != p - 1 || rb == std::vector<double>(5, 2.0 * (p - 1)), "reduce max to %d: %g", p - 1, rb[0]);
        ck.expect(r != p / 2 || a == std::vector<double>(5, fact), "reduce prod in place to %d: %g", p / 2, a[0]);
        ck.expect(r == 0 || ra == std::vector<double>(5, -1), "reduce wrote off the root");
        // A root outside the communicator, complex max: errors on every rank, before MPI.
        ck.expect(status_of([&] { reduce(C(), Exec{}, a.data(), ra.data(), 5, DType::f64, ReduceOp::sum, p); }) ==
                      PLM_ERR_INVALID_ARG,
                  "reduce to root %d is not INVALID_ARG", p);
        c128 z[2] = {};
        for (Backend *be : {host.get(), staged.get()})
            ck.expect(status_of([&] { be->ireduce(Exec{}, z, z, 2, DType::c128, ReduceOp::max, 0).wait(); }) ==
                          PLM_ERR_NOT_SUPPORTED,
                      "%s: complex reduce max is not NOT_SUPPORTED", be->name());
    });
    alarm(0);
    assert_all_ranks_true(ck.ok);
}

// ---------------------------------------------------------------------------------------
// The split hook
// ---------------------------------------------------------------------------------------

void test_split_hook(void **)
{
    Checker ck;
    const int r = R();
    guarded(ck, "split hook", [&] {
        std::shared_ptr<Communicator> sub = C().split(r % 2, r);
        Backend &hb = sub->backend(Space::host);
        ck.expect(&hb != &C().backend(Space::host), "the sub-communicator shares its parent's backend object");
        ck.expect(hb.kind() == PLM_BACKEND_MPI_HOST && hb.view().size == sub->size() && hb.view().rank == sub->rank(),
                  "sub backend %s sees rank %d of %d", hb.name(), hb.view().rank, hb.view().size);
        double v = r, s = 0;
        allreduce(*sub, Exec{}, &v, &s, 1, DType::f64, ReduceOp::sum);
        double want = 0;
        for (int q = r % 2; q < P(); q += 2) want += q;
        ck.expect(s == want, "allreduce on the split: %g, expected %g", s, want);

        // A staged backend splits into a staged backend (sharing its staging memory).
        std::unique_ptr<Backend> staged = make_mpi_staged(C().view(), Space::host, Space::host);
        std::unique_ptr<Backend> sub_staged = staged->split(sub->view());
        ck.expect(sub_staged->kind() == PLM_BACKEND_MPI_STAGED, "staged split kind %s", sub_staged->name());
        double t = 0;
        sub_staged->iallreduce(Exec{}, &v, &t, 1, DType::f64, ReduceOp::sum).wait();
        ck.expect(t == want, "staged allreduce on the split: %g, expected %g", t, want);
    });
    alarm(0);
    assert_all_ranks_true(ck.ok);
}

}  // namespace

int main(int argc, char **argv)
{
    watchdog_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nonblocking_overlap),
        cmocka_unit_test(test_plans_in_flight),
        cmocka_unit_test(test_request_semantics),
        cmocka_unit_test(test_missing_entries_not_supported),
        cmocka_unit_test(test_cuda_aware_agreed),
        cmocka_unit_test(test_staged_emulation),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_split_hook),
    };
    const int rc = plm_run_group_tests_mpi(tests);
    alarm(0);
    return rc;
}
