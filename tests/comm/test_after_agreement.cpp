// White-box: after an agreement the communication layer allocates nothing (core/alloc.hpp).
// Every allocation of this program counts: tests/fault/fault_hooks.cpp replaces operator new.
//
// Each round makes its data, runs an Agreement whose check() makes what the communication
// will need (persistent plans, the staging reservation), then runs every primitive - blocking
// and non-blocking collectives (some in flight together), reduce, point-to-point, a
// Request::all, sendrecv, a gather as one batch of messages, neighbour exchanges, alltoallv,
// halo and all-to-all plans in flight together, the host metadata helpers - and every rank
// must count no allocation after the agreement. The pool's top-up for many ranks covers every
// size of per-rank array. Rounds run on the host backend and on the host-staged backend in host emulation
// (a staged backend on host memory, with no staging cache of its own, as the device backend
// of a communicator), with messages whole and chunked (max_mpi_count 3: many MPI requests per
// operation). Results are checked against serial references.
//
// Then a failure in a reservation is agreed: for each rank in turn and n = 1, 2, ... the n-th
// allocation fails on that rank alone - in the pool's top-up of an agreement, a staging
// reservation, a plan, a split, a mask group's creation, a communicator's creation - and every
// rank must return PLM_ERR_OUT_OF_MEMORY together (no hang), until the call makes fewer than
// n allocations there and succeeds everywhere; the next collective works.
#include <algorithm>

#include "comm/comm_test_util.hpp"

#include "comm/backend.hpp"
#include "comm/pool.hpp"
#include "core/alloc.hpp"

namespace {

constexpr DType F64 = DType::f64;

double v(int r, int64_t i) { return (r + 1) * 3 + (i % 11) - 5; }

std::vector<double> block(int r, int64_t n, int64_t first = 0)
{
    std::vector<double> b(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) b[static_cast<size_t>(i)] = v(r, first + i);
    return b;
}

// Uneven counts with empty blocks: rank q contributes (q * 5 + 2) % 4 * k elements.
int64_t uneven(int q, int64_t k) { return (q * 5 + 2) % 4 * k; }

// The staged backend, as the device backend of a communicator of its own: staging memory only
// from reserve() (a cache of 0 bytes keeps nothing learned), pipelined past 256 bytes.
std::shared_ptr<Communicator> &staged_comm()
{
    static std::shared_ptr<Communicator> s;
    if (!s) {
        s = Communicator::create(MPI_COMM_WORLD, nullptr);
        s->replace_device_backend(make_mpi_staged(s->view(), Space::host, Space::host, 0, 256));
    }
    return s;
}

// Ends the counted part: the violations of this thread since reset, and the mark cleared
// (no C API firewall does it here).
int64_t end_counting()
{
    const int64_t n = alloc::violations();
    alloc::set_after_agreement(false);
    return n;
}

// ---------------------------------------------------------------------------------------
// Every primitive after an agreement
// ---------------------------------------------------------------------------------------

// One round's data, made before the agreement; the results are checked after it.
struct Round {
    const Communicator &c;
    Exec e;
    int r, p;
    int64_t n;
    std::vector<double> x, sum, inplace, bc, big, big_sum, red, red2;
    std::vector<int64_t> counts;
    std::vector<double> mine, all, all2;
    std::vector<double> ring_out, ring_in, ring_in2;
    std::vector<comm::Request> rs;
    std::vector<double> to_prev, to_next, from_prev, from_next, from_prev2, from_next2;
    std::vector<int64_t> sc, sd, rc, rd;
    std::vector<double> sbuf, rbuf, rbuf2, rbuf3;
    std::vector<int64_t> meta, meta_all;
    std::vector<Backend::Message> gmsgs;
    std::vector<double> gsend, gathered;

    Round(const Communicator &comm, Exec ex, int64_t len) : c(comm), e(ex), r(comm.rank()), p(comm.size()), n(len)
    {
        x = block(r, n);
        sum.assign(static_cast<size_t>(n), -1);
        inplace = block(r, n, 5);
        bc = r == p - 1 ? block(r, n, 7) : std::vector<double>(static_cast<size_t>(n), -1);
        big = block(r, 4 * n, 3);
        big_sum.assign(static_cast<size_t>(4 * n), -1);
        red = block(r, n, 9);
        red2 = block(r, n, 13);
        int64_t total = 0;
        for (int q = 0; q < p; ++q) total += uneven(q, n / 4 + 1);
        for (int q = 0; q < p; ++q) counts.push_back(uneven(q, n / 4 + 1));
        mine = block(r, counts[static_cast<size_t>(r)], 100);
        all.assign(static_cast<size_t>(total), -1);
        all2.assign(static_cast<size_t>(total), -1);
        ring_out = block(r, n, 21);
        ring_in.assign(static_cast<size_t>(n), -1);
        ring_in2.assign(static_cast<size_t>(n), -1);
        rs.reserve(2);
        to_prev = block(r, 2, 31);
        to_next = block(r, 3, 32);
        from_prev.assign(3, -1);
        from_next.assign(2, -1);
        from_prev2.assign(3, -1);
        from_next2.assign(2, -1);
        int64_t so = 0, ro = 0;
        for (int q = 0; q < p; ++q) {
            sc.push_back((r + q) % 3 * (n / 8 + 1));
            sd.push_back(so);
            so += sc.back();
            rc.push_back((q + r) % 3 * (n / 8 + 1));
            rd.push_back(ro);
            ro += rc.back();
        }
        sbuf = block(r, so, 70);
        rbuf.assign(static_cast<size_t>(ro), -1);
        rbuf2.assign(static_cast<size_t>(ro), -1);
        rbuf3.assign(static_cast<size_t>(ro), -1);
        meta = {r, 10 * r};
        meta_all.assign(static_cast<size_t>(2 * p), -1);
        gmsgs.reserve(static_cast<size_t>(p));
        gsend = block(r, 3, 80);
        gathered.assign(static_cast<size_t>(3 * p), -1);
    }

    // Bytes in flight together at most (the staging reservation): generous.
    std::size_t staged_bytes() const
    {
        return 8 * (static_cast<std::size_t>(8 * n) + all.size() + 2 * rbuf.size() + 2 * sbuf.size() + 64);
    }

    Halo halo(std::vector<double> &fp, std::vector<double> &fn)
    {
        Halo h;
        const bool has_prev = r > 0, has_next = r + 1 < p;
        h.to_prev = to_prev.data();
        h.n_to_prev = has_prev ? 2 : 0;
        h.to_next = to_next.data();
        h.n_to_next = has_next ? 3 : 0;
        h.from_prev = fp.data();
        h.n_from_prev = has_prev ? 3 : 0;
        h.from_next = fn.data();
        h.n_from_next = has_next ? 2 : 0;
        return h;
    }

    // Everything after the agreement: nothing here may allocate.
    void communicate(const HaloPlan &hp, const AlltoallvPlan &ap)
    {
        allreduce(c, e, x.data(), sum.data(), n, F64, ReduceOp::sum);
        allreduce(c, e, big.data(), big_sum.data(), 4 * n, F64, ReduceOp::sum);  // staged: pipelined
        {  // three non-blocking collectives in flight together, completed out of order
            Request a = iallreduce(c, e, inplace.data(), inplace.data(), n, F64, ReduceOp::max);
            Request b = iallgatherv(c, e, mine.data(), all.data(), counts, F64);
            Request d = ibcast(c, e, bc.data(), n, F64, p - 1);
            d.wait();
            (void)a.test();
            b.wait();
            a.wait();
        }
        allgatherv(c, e, mine.data(), all2.data(), counts, F64);
        ireduce(c, e, red.data(), red.data(), n, F64, ReduceOp::sum, p - 1).wait();
        reduce(c, e, red2.data(), red2.data(), n, F64, ReduceOp::min, 0);
        bcast(c, e, big.data(), 4 * n, F64, 0);  // staged: pipelined
        const int next = (r + 1) % p, prev = (r + p - 1) % p;
        rs.push_back(irecv(c, e, ring_in.data(), n, F64, prev, 61));
        rs.push_back(isend(c, e, ring_out.data(), n, F64, next, 61));
        Request::all(std::move(rs)).wait();
        sendrecv(c, e, ring_out.data(), n, prev, 62, ring_in2.data(), n, next, 62, F64);
        neighbour_exchange(c, e, F64, halo(from_prev, from_next));
        ineighbour_exchange(c, e, F64, halo(from_prev2, from_next2)).wait();
        // A gather to the last rank as one batch of messages.
        for (int q = 0; q < p - 1 && r == p - 1; ++q)
            gmsgs.push_back({false, gathered.data() + 3 * q, 3, q, 63});
        if (r != p - 1) gmsgs.push_back({true, gsend.data(), 3, p - 1, 63});
        exchange(c, e, F64, gmsgs.data(), gmsgs.size());
        alltoallv(c, e, sbuf.data(), sc, sd, rbuf.data(), rc, rd, F64);
        ialltoallv(c, e, sbuf.data(), sc, sd, rbuf2.data(), rc, rd, F64).wait();
        {  // two plans in flight together
            Halo h = halo(from_prev, from_next);
            Request a = hp.start(e, h);
            Request b = ap.start(e, sbuf.data(), rbuf3.data());
            b.wait();
            a.wait();
        }
        if (e.space == Space::host) {
            allgather_i64(c, meta.data(), 2, meta_all.data());
            (void)allreduce_i64(c, r, ReduceOp::max);
        }
    }

    void check(Checker &ck, const std::string &what) const
    {
        std::vector<double> want(static_cast<size_t>(n)), want_max(static_cast<size_t>(n));
        std::vector<double> want_red(static_cast<size_t>(n)), want_min(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            double s = 0, m = -1e300, s2 = 0, mn = 1e300;
            for (int q = 0; q < p; ++q) {
                s += v(q, i);
                m = std::max(m, v(q, i + 5));
                s2 += v(q, i + 9);
                mn = std::min(mn, v(q, i + 13));
            }
            want[static_cast<size_t>(i)] = s;
            want_max[static_cast<size_t>(i)] = m;
            want_red[static_cast<size_t>(i)] = s2;
            want_min[static_cast<size_t>(i)] = mn;
        }
        expect_equal(ck, sum, want, what + " allreduce");
        std::vector<double> want_big(static_cast<size_t>(4 * n));
        for (int64_t i = 0; i < 4 * n; ++i)
            for (int q = 0; q < p; ++q) want_big[static_cast<size_t>(i)] += v(q, i + 3);
        expect_equal(ck, big_sum, want_big, what + " pipelined allreduce");
        expect_equal(ck, inplace, want_max, what + " iallreduce max in place");
        expect_equal(ck, bc, block(p - 1, n, 7), what + " ibcast");
        std::vector<double> want_all;
        for (int q = 0; q < p; ++q) {
            std::vector<double> b = block(q, counts[static_cast<size_t>(q)], 100);
            want_all.insert(want_all.end(), b.begin(), b.end());
        }
        expect_equal(ck, all, want_all, what + " iallgatherv");
        expect_equal(ck, all2, want_all, what + " allgatherv");
        if (r == p - 1) expect_equal(ck, red, want_red, what + " ireduce");
        if (r == 0) expect_equal(ck, red2, want_min, what + " reduce");
        expect_equal(ck, big, block(0, 4 * n, 3), what + " pipelined bcast");
        expect_equal(ck, ring_in, block((r + p - 1) % p, n, 21), what + " isend/irecv");
        expect_equal(ck, ring_in2, block((r + 1) % p, n, 21), what + " sendrecv");
        for (const auto *fp : {&from_prev, &from_prev2})
            expect_equal(ck, *fp, r > 0 ? block(r - 1, 3, 32) : std::vector<double>(3, -1), what + " halo from prev");
        for (const auto *fn : {&from_next, &from_next2})
            expect_equal(ck, *fn, r + 1 < p ? block(r + 1, 2, 31) : std::vector<double>(2, -1),
                         what + " halo from next");
        std::vector<double> want_rb;
        for (int q = 0; q < p; ++q) {
            // Rank q's block for r: sc_q[r] elements at sd_q[r] of q's send buffer.
            int64_t off = 0;
            for (int k = 0; k < r; ++k) off += (q + k) % 3 * (n / 8 + 1);
            const int64_t cnt = (q + r) % 3 * (n / 8 + 1);
            std::vector<double> b = block(q, cnt, 70 + off);
            want_rb.insert(want_rb.end(), b.begin(), b.end());
        }
        if (r == p - 1) {
            std::vector<double> want_g;
            for (int q = 0; q < p - 1; ++q) {
                std::vector<double> b = block(q, 3, 80);
                want_g.insert(want_g.end(), b.begin(), b.end());
            }
            want_g.resize(static_cast<size_t>(3 * p), -1);
            expect_equal(ck, gathered, want_g, what + " gather by exchange");
        }
        expect_equal(ck, rbuf, want_rb, what + " alltoallv");
        expect_equal(ck, rbuf2, want_rb, what + " ialltoallv");
        expect_equal(ck, rbuf3, want_rb, what + " alltoallv plan");
        if (e.space == Space::host) {
            bool ok = true;
            for (int q = 0; q < p; ++q) ok = ok && meta_all[2 * q] == q && meta_all[2 * q + 1] == 10 * q;
            ck.expect(ok, "%s: allgather_i64", what.c_str());
        }
    }
};

void round_after_agreement(Checker &ck, const Communicator &c, Exec e, int64_t max_count, const std::string &what)
{
    watchdog_case(what);
    set_max_mpi_count(max_count);
    Round d(c, e, 40);
    int64_t violations = -1;
    try {
        Agreement ag(c, "after agreement");
        std::unique_ptr<HaloPlan> hp;
        std::unique_ptr<AlltoallvPlan> ap;
        ag.check([&] {
            Halo h = d.halo(d.from_prev, d.from_next);
            hp = std::make_unique<HaloPlan>(c, F64, h.n_to_prev, h.n_from_prev, h.n_to_next, h.n_from_next);
            ap = std::make_unique<AlltoallvPlan>(c, F64, d.sc, d.sd, d.rc, d.rd);
            c.reserve(e.space, d.staged_bytes());
        });
        ag.run();
        alloc::reset_violations();
        d.communicate(*hp, *ap);
        violations = end_counting();
    } catch (const Error &x) {
        end_counting();
        ck.bad("%s threw %s: %s", what.c_str(), plm_status_string(x.status()), x.what());
    }
    set_max_mpi_count(0);
    ck.expect(violations == 0, "%s: %lld allocation(s) after the agreement (PLM_TEST_TRACE_ALLOC=1 shows where)",
              what.c_str(), static_cast<long long>(violations));
    d.check(ck, what);
}

void test_primitives_allocate_nothing(void **)
{
    Checker ck;
    const Exec host{}, staged{Space::device, -1, {}};
    for (int64_t max : {int64_t{0}, int64_t{3}}) {
        const std::string m = " max_mpi_count " + std::to_string(max ? max : INT_MAX);
        for (int round = 0; round < 2; ++round) {
            const std::string k = m + " round " + std::to_string(round);
            round_after_agreement(ck, C(), host, max, "host" + k);
            round_after_agreement(ck, *staged_comm(), staged, max, "staged" + k);
        }
    }
    alarm(0);
    assert_all_ranks_true(ck.ok);
}

// The pool's top-up for a communicator of many ranks keeps blocks of every size a per-rank
// array of one operation takes, so taking them after an agreement allocates nothing.
void test_pool_classes(void **)
{
    Checker ck;
    const int ranks = 5000;
    pool::top_up(ranks);
    // One size in each class (256 B x 4^k) up to op_bytes(5000) = 160000.
    const std::size_t sizes[] = {pool::kSlot, 1000, 4000, 16000, 60000, pool::op_bytes(ranks)};
    for (std::size_t b : sizes) ck.expect(pool::free_blocks(b) >= 4, "%zu free blocks of %zu bytes", pool::free_blocks(b), b);
    alloc::reset_violations();
    alloc::set_after_agreement(true);
    {
        pool::Array<char> a[6][4];
        for (int k = 0; k < 6; ++k)
            for (int i = 0; i < 4; ++i) a[k][i] = pool::Array<char>(sizes[k]);
    }
    ck.expect(end_counting() == 0, "per-rank arrays after a top-up allocated");
    assert_all_ranks_true(ck.ok);
}

// ---------------------------------------------------------------------------------------
// A failed reservation is agreed
// ---------------------------------------------------------------------------------------

// Status of f: an Error's status, PLM_ERR_OUT_OF_MEMORY for a std::bad_alloc no agreement
// caught (marked: an allocation failure that escaped an agreement is a bug), else success.
constexpr plm_status_t kEscaped = static_cast<plm_status_t>(1000);
template <typename F> plm_status_t outcome(F &&f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.status();
    } catch (const std::bad_alloc &) {
        return kEscaped;
    }
    return PLM_SUCCESS;
}

// Runs call() - collective steps ending in an agreement - with the n-th allocation failing on
// rank `bad`, for every rank and n = 1, 2, ... until the call makes fewer than n allocations
// there. Every rank must return the same status: PLM_ERR_OUT_OF_MEMORY while the fault fires,
// success after (with nothing allocated after the agreement); then after() works.
template <typename F, typename G> void fail_each(Checker &ck, const char *what, F &&call, G &&after)
{
    const int r = R(), p = P();
    for (int bad = 0; bad < p && ck.ok; ++bad) {
        for (int64_t nth = 1; nth <= 200; ++nth) {
            char name[160];
            std::snprintf(name, sizeof name, "%s: allocation %lld fails on rank %d", what, static_cast<long long>(nth),
                          bad);
            watchdog_case(name);
            alloc::reset_violations();
            if (r == bad) alloc::fail_nth(nth);
            const plm_status_t st = outcome(call);
            const bool left = r == bad && alloc::armed() > 0;
            alloc::fail_nth(0);
            const int64_t viol = end_counting();
            int mine[3] = {static_cast<int>(st), left ? 1 : 0, static_cast<int>(viol)}, lo[3], hi[3];
            MPI_Allreduce(mine, lo, 3, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            MPI_Allreduce(mine, hi, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            const bool done = hi[1] == 1;
            ck.expect(lo[0] == hi[0], "%s: statuses differ across ranks (%d..%d)", name, lo[0], hi[0]);
            ck.expect(done ? st == PLM_SUCCESS : st == PLM_ERR_OUT_OF_MEMORY, "%s: %s%s", name,
                      st == kEscaped ? "std::bad_alloc escaped the agreement" : plm_status_string(st),
                      done ? " (expected success)" : " (expected PLM_ERR_OUT_OF_MEMORY)");
            ck.expect(!done || hi[2] == 0, "%s: allocations after the agreement", name);
            watchdog_case(std::string(name) + " (the call after)");
            ck.expect(outcome(after) == PLM_SUCCESS, "%s: the call after it failed", name);
            if (done || !ck.ok) break;
        }
    }
    alarm(0);
}

// A following collective works: an agreement and an allreduce on c.
void works(const Communicator &c)
{
    Agreement ag(c, "after");
    ag.run();
    double one = 1, s = 0;
    allreduce(c, Exec{}, &one, &s, 1, F64, ReduceOp::sum);
    alloc::set_after_agreement(false);
    PLM_REQUIRE(s == c.size(), PLM_ERR_INTERNAL, "allreduce after: %g", s);
}

void test_failed_reservations_agreed(void **)
{
    Checker ck;
    const int r = R(), p = P();
    auto world = [] { works(C()); };

    // The pool's top-up in an agreement's constructor (emptied first, so it allocates).
    fail_each(
        ck, "pool top-up",
        [&] {
            pool::trim();
            Agreement ag(C(), "top-up");
            ag.run();
            alloc::set_after_agreement(false);
        },
        world);

    // The staging reservation, bigger every time so it allocates.
    const Communicator &S = *staged_comm();
    std::size_t size = 1 << 16;
    fail_each(
        ck, "staging reservation",
        [&] {
            Agreement ag(S, "reserve");
            ag.check([&] { S.reserve(Space::device, size += 4096); });
            ag.run();
            double one = 1, s = 0;
            allreduce(S, Exec{Space::device, -1, {}}, &one, &s, 1, F64, ReduceOp::sum);
            alloc::set_after_agreement(false);
        },
        [&] { works(S); });

    // Persistent plans, made inside the check, then started.
    std::vector<int64_t> cnt(static_cast<size_t>(p), 1), dsp(static_cast<size_t>(p));
    for (int q = 0; q < p; ++q) dsp[static_cast<size_t>(q)] = q;
    std::vector<double> sb = block(r, p), rb(static_cast<size_t>(p));
    fail_each(
        ck, "plans",
        [&] {
            Agreement ag(C(), "plans");
            std::unique_ptr<AlltoallvPlan> ap;
            std::unique_ptr<HaloPlan> hp;
            ag.check([&] {
                ap = std::make_unique<AlltoallvPlan>(C(), F64, cnt, dsp, cnt, dsp);
                hp = std::make_unique<HaloPlan>(C(), F64, 0, 0, 0, 0);
            });
            ag.run();
            ap->start(Exec{}, sb.data(), rb.data()).wait();
            alloc::set_after_agreement(false);
        },
        world);

    // An agreed split: made before the agreement ends, every rank taking part.
    fail_each(
        ck, "split",
        [&] {
            Agreement ag(C(), "split");
            std::shared_ptr<Communicator> sub = C().split(ag, r % 2, r);
            ag.run();
            alloc::set_after_agreement(false);
            works(*sub);
        },
        world);

    // A mask group's creation: a new mask every time.
    int round = 0;
    std::vector<int> mask(static_cast<size_t>(p));
    fail_each(
        ck, "mask group",
        [&] {
            for (int q = 0; q < p; ++q) mask[static_cast<size_t>(q)] = q % 2 + 2 * round;
            ++round;
            Agreement ag(C(), "mask group");
            C().prepare_mask_group(ag, mask, Space::host);
            ag.run();
            alloc::set_after_agreement(false);
            works(C().mask_group(mask));
        },
        world);

    // A communicator's creation.
    fail_each(
        ck, "comm_create", [&] { works(*Communicator::create(MPI_COMM_WORLD, nullptr)); }, world);
    assert_all_ranks_true(ck.ok);
}

// prepare_mask_group agrees on the mask first: a rank passing another mask (or none, or one
// of the wrong size), or a rank whose checks failed, makes every rank fail, and nobody waits.
void test_prepare_mask_group_agreed(void **)
{
    Checker ck;
    const int r = R(), p = P();
    std::vector<int> good(static_cast<size_t>(p)), other(static_cast<size_t>(p)), bad_size(static_cast<size_t>(p + 1));
    const std::vector<int> none;
    for (int q = 0; q < p; ++q) {
        good[static_cast<size_t>(q)] = 100 + q % 2;
        other[static_cast<size_t>(q)] = 200 + q % 3;
    }
    enum Kind { kOtherMask, kNoMask, kWrongSize, kFailedCheck };
    const struct {
        Kind kind;
        const char *what;
        plm_status_t want;
    } cases[] = {{kOtherMask, "another mask on one rank", p > 1 ? PLM_ERR_INVALID_ARG : PLM_SUCCESS},
                 {kNoMask, "no mask on one rank", p > 1 ? PLM_ERR_INVALID_ARG : PLM_SUCCESS},
                 {kWrongSize, "a mask of the wrong size on one rank", PLM_ERR_INVALID_ARG},
                 {kFailedCheck, "an earlier failed check on one rank", PLM_ERR_SIZE_MISMATCH}};
    for (int culprit = 0; culprit < p; ++culprit) {
        for (const auto &k : cases) {
            watchdog_case(std::string(k.what) + " (rank " + std::to_string(culprit) + ")");
            const plm_status_t st = outcome([&] {
                Agreement ag(C(), "masked call");
                const std::vector<int> *m = &good;
                if (r == culprit && k.kind == kOtherMask) m = &other;
                if (r == culprit && k.kind == kNoMask) m = &none;
                if (r == culprit && k.kind == kWrongSize) m = &bad_size;
                if (r == culprit && k.kind == kFailedCheck)
                    ag.check([] { PLM_FAIL(PLM_ERR_SIZE_MISMATCH, "an earlier check"); });
                C().prepare_mask_group(ag, *m, Space::host);
                ag.run();
                alloc::set_after_agreement(false);
            });
            ck.expect(plm_all_ranks(st == k.want), "%s on rank %d: %s, expected %s", k.what, culprit,
                      plm_status_string(st), plm_status_string(k.want));
        }
    }
    // Afterwards the groups work, and an agreed mask finds its group without communicating.
    watchdog_case("mask groups after failed preparations");
    guarded(ck, "mask groups after", [&] {
        Agreement ag(C(), "masked call");
        C().prepare_mask_group(ag, good, Space::host);
        ag.run();
        alloc::set_after_agreement(false);
        works(C().mask_group(good));
        Agreement again(C(), "agreed mask");
        alloc::reset_violations();
        C().prepare_mask_group(again, good, Space::host, true);
        again.run();
        ck.expect(end_counting() == 0, "an agreed, ready mask group allocated");
        Agreement empty(C(), "no mask anywhere");
        C().prepare_mask_group(empty, none, Space::host);
        empty.run();
        alloc::set_after_agreement(false);
    });
    alarm(0);
    assert_all_ranks_true(ck.ok);
}

}  // namespace

int main(int argc, char **argv)
{
    watchdog_install();
    if (std::getenv("PLM_TEST_TRACE_ALLOC")) alloc::trace_violations(true);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_primitives_allocate_nothing),
        cmocka_unit_test(test_pool_classes),
        cmocka_unit_test(test_failed_reservations_agreed),
        cmocka_unit_test(test_prepare_mask_group_agreed),
    };
    const int rc = plm_run_group_tests_mpi(tests);
    alarm(0);
    return rc;
}
