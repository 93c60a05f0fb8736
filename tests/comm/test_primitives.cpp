// White-box tests of every primitive of the communication layer (comm/distributed.hpp) on host memory, for every
// dtype (f32, f64, c64, c128, i64), each result compared with the value computed locally
// from the formula that produced every rank's data. Values are small integers (Gaussian
// integers for complex), so sums and products are exact in every dtype and any reduction
// order; comparisons are exact.
//
// The second half repeats the key cases after set_max_mpi_count(3) (and a sweep 1, 2, 5),
// which sends every count above 3 through the 64-bit chunked paths (chunked allreduce,
// bcast, send/recv, sendrecv; allgatherv as broadcasts, alltoallv as pairwise exchanges),
// and checks both the formula and that the result is identical to the unchunked one.
//
// Every case runs on every rank with the same sequence of collectives whatever the outcome;
// verdicts are reduced with assert_all_ranks_true so ranks never desynchronise.
#include "comm/comm_test_util.hpp"

namespace {

// ---------------------------------------------------------------------------------------
// Cases. Each returns what it received so chunked runs can be compared with unchunked ones.
// ---------------------------------------------------------------------------------------

template <typename T> std::vector<T> case_allreduce(Checker &ck, ReduceOp op, int64_t n, bool in_place, Space s = Space::host)
{
    const std::string what = tag<T>("allreduce") + " " + op_name(op) + (in_place ? " in place" : "") + " n=" +
                              std::to_string(n);
    auto gen = [op](int r, int64_t i) { return op == ReduceOp::prod ? pval<T>(r, i) : val<T>(r, i); };
    std::vector<T> send(static_cast<size_t>(n)), recv(static_cast<size_t>(n), sentinel<T>());
    for (int64_t i = 0; i < n; ++i) send[i] = gen(R(), i);
    const std::vector<T> send0 = send;
    std::vector<T> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        T acc = gen(0, i);
        for (int q = 1; q < P(); ++q) {
            const T v = gen(q, i);
            switch (op) {
            case ReduceOp::sum: acc += v; break;
            case ReduceOp::prod: acc *= v; break;
            case ReduceOp::max:
                if constexpr (!is_complex_v<T>) acc = v > acc ? v : acc;
                break;
            case ReduceOp::min:
                if constexpr (!is_complex_v<T>) acc = v < acc ? v : acc;
                break;
            }
        }
        want[i] = acc;
    }
    guarded(ck, what, [&] {
        if (in_place)
            comm::allreduce(C(), Exec{s}, send.data(), send.data(), n, TypeInfo<T>::dt, op);
        else
            comm::allreduce(C(), Exec{s}, send.data(), recv.data(), n, TypeInfo<T>::dt, op);
    });
    if (in_place) {
        expect_equal(ck, send, want, what);
        return send;
    }
    expect_equal(ck, recv, want, what);
    expect_equal(ck, send, send0, what + " (send buffer changed)");
    return recv;
}

// counts[r] elements from rank r; displs empty (packed) or with gaps in reverse order.
template <typename T>
std::vector<T> case_allgatherv(Checker &ck, const std::vector<int64_t> &counts, bool gaps, const std::string &label)
{
    const std::string what = tag<T>("allgatherv") + " " + label + (gaps ? " (reversed, gaps)" : "");
    const int p = P();
    std::vector<int64_t> displs;
    int64_t total = 0;
    if (gaps) {
        // blocks in reverse rank order, 2 untouched elements before each, 1 at the end
        displs.assign(p, 0);
        int64_t off = 0;
        for (int r = p - 1; r >= 0; --r) {
            off += 2;
            displs[r] = off;
            off += counts[r];
        }
        total = off + 1;
    } else {
        for (int r = 0; r < p; ++r) total += counts[r];
    }
    std::vector<T> mine(static_cast<size_t>(counts[R()]));
    for (int64_t i = 0; i < counts[R()]; ++i) mine[i] = val<T>(R(), i);
    std::vector<T> recv(static_cast<size_t>(total), sentinel<T>()), want(static_cast<size_t>(total), sentinel<T>());
    int64_t off = 0;
    for (int r = 0; r < p; ++r) {
        const int64_t d = gaps ? displs[r] : off;
        for (int64_t i = 0; i < counts[r]; ++i) want[d + i] = val<T>(r, i);
        off += counts[r];
    }
    guarded(ck, what, [&] {
        // a valid pointer even for an empty block (a rank with zero count)
        T dummy{};
        const void *send = mine.empty() ? static_cast<const void *>(&dummy) : mine.data();
        comm::allgatherv(C(), Exec{}, send, recv.empty() ? static_cast<void *>(&dummy) : recv.data(), counts,
                     TypeInfo<T>::dt, displs);
    });
    expect_equal(ck, recv, want, what);
    return recv;
}

// Count patterns: uneven with zero-count ranks; scaled by k for the chunked runs.
std::vector<int64_t> counts_uneven(int k)  // r0:1 r1:0 r2:3 r3:2 ... (times k)
{
    std::vector<int64_t> c(P());
    for (int r = 0; r < P(); ++r) c[r] = ((3 * r + 1) % 4) * k;
    return c;
}
std::vector<int64_t> counts_first_empty(int k)  // r0:0, r:4r+3
{
    std::vector<int64_t> c(P());
    for (int r = 0; r < P(); ++r) c[r] = r == 0 ? 0 : (4 * r + 3) * k;
    return c;
}
std::vector<int64_t> counts_uniform(int64_t n) { return std::vector<int64_t>(P(), n); }

template <typename T> std::vector<T> case_bcast(Checker &ck, int root, int64_t n)
{
    const std::string what = tag<T>("bcast") + " root=" + std::to_string(root) + " n=" + std::to_string(n);
    std::vector<T> buf(static_cast<size_t>(n) + 1, sentinel<T>()), want(static_cast<size_t>(n) + 1, sentinel<T>());
    for (int64_t i = 0; i < n; ++i) {
        want[i] = val<T>(root, i);
        if (R() == root) buf[i] = want[i];
    }
    guarded(ck, what, [&] { comm::bcast(C(), Exec{}, buf.data(), n, TypeInfo<T>::dt, root); });
    expect_equal(ck, buf, want, what);  // the extra last element stays untouched
    return buf;
}

// Even rank r sends n(r) = base + r elements to r+1 (tag 5), then gets base + r + 1 back (tag 6).
template <typename T> std::vector<T> case_send_recv(Checker &ck, int64_t base)
{
    const std::string what = tag<T>("send/recv") + " base=" + std::to_string(base);
    const int r = R(), p = P();
    std::vector<T> got;
    guarded(ck, what, [&] {
        if (r % 2 == 0 && r + 1 < p) {
            std::vector<T> out(static_cast<size_t>(base + r));
            for (int64_t i = 0; i < base + r; ++i) out[i] = val<T>(r, i);
            comm::send(C(), Exec{}, out.data(), base + r, TypeInfo<T>::dt, r + 1, 5);
            got.assign(static_cast<size_t>(base + r + 1) + 1, sentinel<T>());
            comm::recv(C(), Exec{}, got.data(), base + r + 1, TypeInfo<T>::dt, r + 1, 6);
            std::vector<T> want(got.size(), sentinel<T>());
            for (int64_t i = 0; i < base + r + 1; ++i) want[i] = val<T>(r + 1, i) * mk<T>(2, 0);
            expect_equal(ck, got, want, what + " (even side)");
        } else if (r % 2 == 1) {
            got.assign(static_cast<size_t>(base + r - 1) + 1, sentinel<T>());
            comm::recv(C(), Exec{}, got.data(), base + r - 1, TypeInfo<T>::dt, r - 1, 5);
            std::vector<T> want(got.size(), sentinel<T>());
            for (int64_t i = 0; i < base + r - 1; ++i) want[i] = val<T>(r - 1, i);
            expect_equal(ck, got, want, what + " (odd side)");
            std::vector<T> out(static_cast<size_t>(base + r));
            for (int64_t i = 0; i < base + r; ++i) out[i] = val<T>(r, i) * mk<T>(2, 0);
            comm::send(C(), Exec{}, out.data(), base + r, TypeInfo<T>::dt, r - 1, 6);
        }
        // no partner: a send to / receive from kNoPeer does nothing
        std::vector<T> none(4, sentinel<T>()), data(4, mk<T>(1, 1));
        comm::send(C(), Exec{}, data.data(), 4, TypeInfo<T>::dt, kNoPeer, 9);
        comm::recv(C(), Exec{}, none.data(), 4, TypeInfo<T>::dt, kNoPeer, 9);
        expect_equal(ck, none, std::vector<T>(4, sentinel<T>()), what + " (recv from kNoPeer)");
    });
    return got;
}

// Zero-count point-to-point messages between partners must match up.
template <typename T> void case_send_recv_empty(Checker &ck)
{
    const int r = R(), p = P();
    guarded(ck, tag<T>("send/recv n=0"), [&] {
        T x = sentinel<T>();
        if (r % 2 == 0 && r + 1 < p) comm::send(C(), Exec{}, &x, 0, TypeInfo<T>::dt, r + 1, 3);
        if (r % 2 == 1) comm::recv(C(), Exec{}, &x, 0, TypeInfo<T>::dt, r - 1, 3);
        ck.expect(x == sentinel<T>(), "send/recv n=0 wrote data");
    });
}

// Ring: rank r sends base + 3r elements to r+1 and receives from r-1 (different counts).
template <typename T> std::vector<T> case_sendrecv_ring(Checker &ck, int64_t base, int step = 3)
{
    const std::string what = tag<T>("sendrecv ring") + " base=" + std::to_string(base);
    const int r = R(), p = P();
    const int dest = (r + 1) % p, src = (r - 1 + p) % p;
    const int64_t ns = base + step * r, nr = base + step * src;
    std::vector<T> out(static_cast<size_t>(ns) + 1), in(static_cast<size_t>(nr) + 1, sentinel<T>());
    for (int64_t i = 0; i < ns; ++i) out[i] = val<T>(r, i) + mk<T>(0, 7);
    std::vector<T> want(in.size(), sentinel<T>());
    for (int64_t i = 0; i < nr; ++i) want[i] = val<T>(src, i) + mk<T>(0, 7);
    guarded(ck, what, [&] {
        comm::sendrecv(C(), Exec{}, out.data(), ns, dest, 21, in.data(), nr, src, 21, TypeInfo<T>::dt);
    });
    expect_equal(ck, in, want, what);
    // the reverse direction, other tags
    std::vector<T> in2(static_cast<size_t>(ns) + 1, sentinel<T>());
    std::vector<T> out2(static_cast<size_t>(nr));
    for (int64_t i = 0; i < nr; ++i) out2[i] = val<T>(r, i) * mk<T>(-1, 0);
    std::vector<T> want2(in2.size(), sentinel<T>());
    for (int64_t i = 0; i < ns; ++i) want2[i] = val<T>(dest, i) * mk<T>(-1, 0);
    guarded(ck, what + " reverse", [&] {
        comm::sendrecv(C(), Exec{}, out2.data(), nr, src, 22, in2.data(), ns, dest, 22, TypeInfo<T>::dt);
    });
    expect_equal(ck, in2, want2, what + " reverse");
    // both partners absent: nothing moves
    std::vector<T> none(3, sentinel<T>());
    guarded(ck, what + " kNoPeer", [&] {
        comm::sendrecv(C(), Exec{}, out.data(), 3, kNoPeer, 1, none.data(), 3, kNoPeer, 1, TypeInfo<T>::dt);
    });
    expect_equal(ck, none, std::vector<T>(3, sentinel<T>()), what + " kNoPeer");
    in.insert(in.end(), in2.begin(), in2.end());
    return in;
}

// Element j of the block rank s sends to rank d.
template <typename T> T a2a_val(int s, int d, int64_t j) { return mk<T>(100 * s + 10 * d + j, s - d); }
int64_t a2a_count(int s, int d, int k) { return ((s + 2 * d + 1) % 4) * k; }

template <typename T> std::vector<T> case_alltoallv(Checker &ck, int k, bool gaps)
{
    const std::string what = tag<T>("alltoallv") + " k=" + std::to_string(k) + (gaps ? " (gaps)" : "");
    const int r = R(), p = P();
    std::vector<int64_t> sc(p), sd(p), rc(p), rd(p);
    int64_t so = 0, ro = gaps ? 1 : 0;
    for (int q = 0; q < p; ++q) {
        sc[q] = a2a_count(r, q, k);
        sd[q] = so;
        so += sc[q];
        rc[q] = a2a_count(q, r, k);
        rd[q] = ro;
        ro += rc[q] + (gaps ? 2 : 0);
    }
    // the send blocks in reverse order in memory when gaps are asked for (displacements free)
    if (gaps) {
        so = 0;
        for (int q = p - 1; q >= 0; --q) {
            sd[q] = so;
            so += sc[q];
        }
    }
    std::vector<T> sbuf(static_cast<size_t>(so) + 1), rbuf(static_cast<size_t>(ro) + 1, sentinel<T>());
    std::vector<T> want(rbuf.size(), sentinel<T>());
    for (int q = 0; q < p; ++q) {
        for (int64_t j = 0; j < sc[q]; ++j) sbuf[sd[q] + j] = a2a_val<T>(r, q, j);
        for (int64_t j = 0; j < rc[q]; ++j) want[rd[q] + j] = a2a_val<T>(q, r, j);
    }
    guarded(ck, what, [&] {
        comm::alltoallv(C(), Exec{}, sbuf.data(), sc, sd, rbuf.data(), rc, rd, TypeInfo<T>::dt);
    });
    expect_equal(ck, rbuf, want, what);
    return rbuf;
}

// Halo with different counts per rank, zeros in the middle of the chain included.
int64_t halo_to_next(int r, int k) { return r + 1 >= P() ? 0 : (r % 3 == 1 ? 0 : (r + 2) * k); }
int64_t halo_to_prev(int r, int k) { return r == 0 ? 0 : (r % 3 == 2 ? 0 : (2 * r + 1) * k); }
template <typename T> T halo_next_val(int r, int64_t j) { return mk<T>(1000 + 10 * r + j, 1); }
template <typename T> T halo_prev_val(int r, int64_t j) { return mk<T>(-1000 - 10 * r - j, -1); }

template <typename T> std::vector<T> case_neighbour_exchange(Checker &ck, int k)
{
    const std::string what = tag<T>("neighbour_exchange") + " k=" + std::to_string(k);
    const int r = R(), p = P();
    const int64_t nn = halo_to_next(r, k), np = halo_to_prev(r, k);
    const int64_t fp = r > 0 ? halo_to_next(r - 1, k) : 0, fn = r + 1 < p ? halo_to_prev(r + 1, k) : 0;
    std::vector<T> to_next(static_cast<size_t>(nn) + 1), to_prev(static_cast<size_t>(np) + 1);
    for (int64_t j = 0; j < nn; ++j) to_next[j] = halo_next_val<T>(r, j);
    for (int64_t j = 0; j < np; ++j) to_prev[j] = halo_prev_val<T>(r, j);
    std::vector<T> from_prev(static_cast<size_t>(fp) + 1, sentinel<T>()),
        from_next(static_cast<size_t>(fn) + 1, sentinel<T>());
    std::vector<T> want_prev(from_prev.size(), sentinel<T>()), want_next(from_next.size(), sentinel<T>());
    for (int64_t j = 0; j < fp; ++j) want_prev[j] = halo_next_val<T>(r - 1, j);
    for (int64_t j = 0; j < fn; ++j) want_next[j] = halo_prev_val<T>(r + 1, j);
    Halo h;
    h.to_prev = to_prev.data();
    h.n_to_prev = np;
    h.from_prev = from_prev.data();
    h.n_from_prev = fp;
    h.to_next = to_next.data();
    h.n_to_next = nn;
    h.from_next = from_next.data();
    h.n_from_next = fn;
    guarded(ck, what, [&] { comm::neighbour_exchange(C(), Exec{}, TypeInfo<T>::dt, h); });
    expect_equal(ck, from_prev, want_prev, what + " from_prev");
    expect_equal(ck, from_next, want_next, what + " from_next");
    from_prev.insert(from_prev.end(), from_next.begin(), from_next.end());
    return from_prev;
}

// The chain ends have no partner: counts given there move nothing and write nothing.
template <typename T> void case_neighbour_ends(Checker &ck)
{
    const std::string what = tag<T>("neighbour_exchange chain ends");
    const int r = R(), p = P();
    std::vector<T> to(2, mk<T>(5, 5)), from_prev(2, sentinel<T>()), from_next(2, sentinel<T>());
    std::vector<T> want_prev(2, sentinel<T>()), want_next(2, sentinel<T>());
    Halo h;
    // everybody exchanges 2 elements both ways; rank 0 and the last rank ask it of nobody
    h.to_prev = to.data();
    h.n_to_prev = 2;
    h.from_prev = from_prev.data();
    h.n_from_prev = 2;
    h.to_next = to.data();
    h.n_to_next = 2;
    h.from_next = from_next.data();
    h.n_from_next = 2;
    if (r > 0) want_prev.assign(2, mk<T>(5, 5));
    if (r + 1 < p) want_next.assign(2, mk<T>(5, 5));
    guarded(ck, what, [&] { comm::neighbour_exchange(C(), Exec{}, TypeInfo<T>::dt, h); });
    expect_equal(ck, from_prev, want_prev, what + " from_prev");
    expect_equal(ck, from_next, want_next, what + " from_next");
}

std::vector<int64_t> case_allgather_i64(Checker &ck)
{
    const int r = R(), p = P();
    const std::vector<int64_t> mine = {r, r * r - 7, -r, (int64_t{1} << 40) + r};
    std::vector<int64_t> all;
    guarded(ck, "allgather_i64", [&] { all = comm::allgather_i64(C(), mine); });
    std::vector<int64_t> want;
    for (int q = 0; q < p; ++q) {
        const std::vector<int64_t> m = {q, q * q - 7, -q, (int64_t{1} << 40) + q};
        want.insert(want.end(), m.begin(), m.end());
    }
    expect_equal(ck, all, want, "allgather_i64");
    // an empty contribution
    std::vector<int64_t> none;
    guarded(ck, "allgather_i64 empty", [&] { none = comm::allgather_i64(C(), {}); });
    ck.expect(none.empty(), "allgather_i64 of nothing returned %zu values", none.size());
    return all;
}

void case_allreduce_i64(Checker &ck)
{
    const int p = P();
    int64_t fact = 1;
    for (int q = 1; q <= p; ++q) fact *= q;
    guarded(ck, "allreduce_i64", [&] {
        const int64_t v = R() + 1;
        ck.expect(comm::allreduce_i64(C(), v, ReduceOp::sum) == p * (p + 1) / 2, "allreduce_i64 sum");
        ck.expect(comm::allreduce_i64(C(), v, ReduceOp::max) == p, "allreduce_i64 max");
        ck.expect(comm::allreduce_i64(C(), v, ReduceOp::min) == 1, "allreduce_i64 min");
        ck.expect(comm::allreduce_i64(C(), v, ReduceOp::prod) == fact, "allreduce_i64 prod");
        const int64_t big = (int64_t{1} << 50) + R();
        ck.expect(comm::allreduce_i64(C(), big, ReduceOp::max) == (int64_t{1} << 50) + p - 1, "allreduce_i64 max 2^50");
        ck.expect(comm::allreduce_i64(C(), -big, ReduceOp::min) == -((int64_t{1} << 50) + p - 1),
                  "allreduce_i64 min -2^50");
    });
}

// ---------------------------------------------------------------------------------------
// Tests of the default (unchunked) paths
// ---------------------------------------------------------------------------------------

template <typename T> void allreduce_all(Checker &ck, const std::vector<int64_t> &ns)
{
    const ReduceOp real_ops[] = {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::prod};
    for (ReduceOp op : real_ops) {
        if (is_complex_v<T> && (op == ReduceOp::max || op == ReduceOp::min)) continue;
        for (int64_t n : ns)
            for (bool ip : {false, true}) case_allreduce<T>(ck, op, n, ip);
    }
}

void test_allreduce(void **)
{
    Checker ck;
    const std::vector<int64_t> ns = {0, 1, 37};
    allreduce_all<float>(ck, ns);
    allreduce_all<double>(ck, ns);
    allreduce_all<c64>(ck, ns);
    allreduce_all<c128>(ck, ns);
    allreduce_all<int64_t>(ck, ns);
    // pinned host memory is host memory: mpi_host
    case_allreduce<double>(ck, ReduceOp::sum, 9, false, Space::pinned);
    assert_all_ranks_true(ck.ok);
}

template <typename T> void complex_minmax(Checker &ck)
{
    std::vector<T> a(5, mk<T>(1, 2)), b(5);
    for (ReduceOp op : {ReduceOp::max, ReduceOp::min}) {
        const plm_status_t s1 =
            status_of([&] { comm::allreduce(C(), Exec{}, a.data(), b.data(), 5, TypeInfo<T>::dt, op); });
        const plm_status_t s2 =
            status_of([&] { comm::allreduce(C(), Exec{}, a.data(), a.data(), 5, TypeInfo<T>::dt, op); });
        ck.expect(s1 == PLM_ERR_NOT_SUPPORTED, "%s %s: %s, expected PLM_ERR_NOT_SUPPORTED", tag<T>("allreduce").c_str(),
                  op_name(op), plm_status_string(s1));
        ck.expect(s2 == PLM_ERR_NOT_SUPPORTED, "%s %s in place: %s, expected PLM_ERR_NOT_SUPPORTED",
                  tag<T>("allreduce").c_str(), op_name(op), plm_status_string(s2));
    }
    // the communicator still works afterwards
    case_allreduce<T>(ck, ReduceOp::sum, 4, false);
}

void test_allreduce_complex_minmax_not_supported(void **)
{
    Checker ck;
    complex_minmax<c64>(ck);
    complex_minmax<c128>(ck);
    assert_all_ranks_true(ck.ok);
}

template <typename T> void allgatherv_all(Checker &ck, int k)
{
    for (bool gaps : {false, true}) {
        case_allgatherv<T>(ck, counts_uneven(k), gaps, "uneven");
        case_allgatherv<T>(ck, counts_first_empty(k), gaps, "rank 0 empty");
        case_allgatherv<T>(ck, counts_uniform(6 * k), gaps, "uniform");
        case_allgatherv<T>(ck, counts_uniform(0), gaps, "all empty");
    }
}

void test_allgatherv(void **)
{
    Checker ck;
    allgatherv_all<float>(ck, 1);
    allgatherv_all<double>(ck, 1);
    allgatherv_all<c64>(ck, 1);
    allgatherv_all<c128>(ck, 1);
    allgatherv_all<int64_t>(ck, 1);
    assert_all_ranks_true(ck.ok);
}

template <typename T> void bcast_all(Checker &ck, const std::vector<int64_t> &ns)
{
    for (int root = 0; root < P(); ++root)
        for (int64_t n : ns) case_bcast<T>(ck, root, n);
}

void test_bcast_every_root(void **)
{
    Checker ck;
    const std::vector<int64_t> ns = {0, 1, 37};
    bcast_all<float>(ck, ns);
    bcast_all<double>(ck, ns);
    bcast_all<c64>(ck, ns);
    bcast_all<c128>(ck, ns);
    bcast_all<int64_t>(ck, ns);
    assert_all_ranks_true(ck.ok);
}

template <typename T> void p2p_all(Checker &ck, const std::vector<int64_t> &bases)
{
    for (int64_t b : bases) case_send_recv<T>(ck, b);
    case_send_recv_empty<T>(ck);
}

void test_send_recv(void **)
{
    Checker ck;
    p2p_all<float>(ck, {1, 10});
    p2p_all<double>(ck, {1, 10});
    p2p_all<c64>(ck, {1, 10});
    p2p_all<c128>(ck, {1, 10});
    p2p_all<int64_t>(ck, {1, 10});
    assert_all_ranks_true(ck.ok);
}

template <typename T> void ring_all(Checker &ck, const std::vector<int64_t> &bases)
{
    for (int64_t b : bases) case_sendrecv_ring<T>(ck, b);
}

void test_sendrecv_ring(void **)
{
    Checker ck;
    ring_all<float>(ck, {0, 1, 8});
    ring_all<double>(ck, {0, 1, 8});
    ring_all<c64>(ck, {0, 1, 8});
    ring_all<c128>(ck, {0, 1, 8});
    ring_all<int64_t>(ck, {0, 1, 8});
    assert_all_ranks_true(ck.ok);
}

template <typename T> void a2a_all(Checker &ck, int k)
{
    case_alltoallv<T>(ck, k, false);
    case_alltoallv<T>(ck, k, true);
}

void test_alltoallv(void **)
{
    Checker ck;
    a2a_all<float>(ck, 1);
    a2a_all<double>(ck, 1);
    a2a_all<c64>(ck, 1);
    a2a_all<c128>(ck, 1);
    a2a_all<int64_t>(ck, 1);
    a2a_all<double>(ck, 5);
    assert_all_ranks_true(ck.ok);
}

template <typename T> void halo_all(Checker &ck, int k)
{
    case_neighbour_exchange<T>(ck, k);
    case_neighbour_ends<T>(ck);
}

void test_neighbour_exchange(void **)
{
    Checker ck;
    halo_all<float>(ck, 1);
    halo_all<double>(ck, 1);
    halo_all<c64>(ck, 1);
    halo_all<c128>(ck, 1);
    halo_all<int64_t>(ck, 1);
    halo_all<double>(ck, 4);
    assert_all_ranks_true(ck.ok);
}

void test_metadata_helpers(void **)
{
    Checker ck;
    case_allgather_i64(ck);
    case_allreduce_i64(ck);
    assert_all_ranks_true(ck.ok);
}

// ---------------------------------------------------------------------------------------
// Agreement error propagation and capture()
// ---------------------------------------------------------------------------------------

struct Caught {
    plm_status_t status = PLM_SUCCESS;
    std::string what;
};

Caught agree_with(const std::optional<Error> &local)
{
    Caught c;
    try {
        Agreement ag(C(), "agree");
        ag.add_error(local);
        ag.run();
    } catch (const Error &e) {
        c.status = e.status();
        c.what = e.what();
    }
    return c;
}

void test_agree(void **)
{
    Checker ck;
    const int r = R(), p = P();

    // nobody failed: nobody throws
    Caught none = agree_with(std::nullopt);
    ck.expect(none.status == PLM_SUCCESS, "agree without errors threw %s: %s", plm_status_string(none.status),
              none.what.c_str());

    // only the last rank failed: everybody throws its status and message
    for (int bad : {p - 1, 0}) {
        const plm_status_t st = bad == 0 ? PLM_ERR_DTYPE_MISMATCH : PLM_ERR_SIZE_MISMATCH;
        const std::string text = "boom on rank " + std::to_string(bad) + " only";
        std::optional<Error> local;
        if (r == bad) local = Error(st, text);
        Caught c = agree_with(local);
        ck.expect(c.status == st, "agree (error on rank %d): status %s, expected %s", bad, plm_status_string(c.status),
                  plm_status_string(st));
        ck.expect(c.what.find(text) != std::string::npos, "agree (error on rank %d): message '%s' lacks '%s'", bad,
                  c.what.c_str(), text.c_str());
        if (r == bad) ck.expect(c.what == text, "agree: the failing rank's own error was not rethrown as is");
    }

    // two failing ranks (1 and p-1): every rank returns the lowest one's status; the last keeps its message too
    if (p >= 3) {
        std::optional<Error> local;
        if (r == 1) local = Error(PLM_ERR_OUT_OF_MEMORY, "first failure on rank 1");
        if (r == p - 1) local = Error(PLM_ERR_MPI, "second failure on the last rank");
        Caught c = agree_with(local);
        const plm_status_t want = PLM_ERR_OUT_OF_MEMORY;  // the root cause's, on every rank
        const char *text = r == p - 1 ? "second failure on the last rank" : "first failure on rank 1";
        ck.expect(c.status == want, "agree (two failures): status %s, expected %s", plm_status_string(c.status),
                  plm_status_string(want));
        ck.expect(c.what.find(text) != std::string::npos, "agree (two failures): message '%s' lacks '%s'",
                  c.what.c_str(), text);
    }

    // every rank failed: each keeps its own error
    {
        const std::string text = "everyone fails, here rank " + std::to_string(r);
        Caught c = agree_with(Error(PLM_ERR_INVALID_ARG, text));
        ck.expect(c.status == PLM_ERR_INVALID_ARG && c.what == text, "agree (all fail): got %s '%s'",
                  plm_status_string(c.status), c.what.c_str());
    }

    // a message longer than the wire buffer is truncated, not overrun
    {
        const std::string text = "long:" + std::string(3000, 'x');
        std::optional<Error> local;
        if (r == p - 1) local = Error(PLM_ERR_INTERNAL, text);
        Caught c = agree_with(local);
        ck.expect(c.status == PLM_ERR_INTERNAL, "agree (long message): status %s", plm_status_string(c.status));
        ck.expect(c.what.find("long:xxxx") != std::string::npos, "agree (long message): text lost");
        if (r != p - 1) ck.expect(c.what.size() < kMsgLen + 64, "agree (long message): %zu chars", c.what.size());
    }

    // still in step afterwards
    case_allreduce<double>(ck, ReduceOp::sum, 3, false);
    assert_all_ranks_true(ck.ok);
}

void test_capture(void **)
{
    auto e1 = capture([] { PLM_FAIL(PLM_ERR_SIZE_MISMATCH, "shape %d", 3); });
    assert_true(e1.has_value());
    assert_int_equal(e1->status(), PLM_ERR_SIZE_MISMATCH);
    assert_non_null(std::strstr(e1->what(), "shape 3"));
    assert_non_null(std::strstr(e1->what(), "test_primitives.cpp"));  // file:line
    auto e2 = capture([] { throw std::bad_alloc(); });
    assert_true(e2.has_value());
    assert_int_equal(e2->status(), PLM_ERR_OUT_OF_MEMORY);
    auto e3 = capture([] { throw std::runtime_error("odd"); });
    assert_true(e3.has_value());
    assert_int_equal(e3->status(), PLM_ERR_INTERNAL);
    auto e4 = capture([] {});
    assert_false(e4.has_value());
    // capture + agree: the usual pattern of a collective entry point
    const int bad = P() - 1;
    Caught c = agree_with(capture([bad] {
        if (R() == bad) PLM_FAIL(PLM_ERR_INVALID_ARG, "rank %d says no", bad);
    }));
    assert_all_ranks_true(c.status == PLM_ERR_INVALID_ARG && c.what.find("says no") != std::string::npos);
}

// ---------------------------------------------------------------------------------------
// Errors that every rank detects locally, before any traffic (so no hang)
// ---------------------------------------------------------------------------------------

void test_device_space_unavailable(void **)
{
    if (space_ops(Space::device)) skip();  // a GPU is visible: tests/gpu covers the device paths
    Checker ck;
    std::vector<double> a(8, 1.0), b(8, 0.0);
    const std::vector<int64_t> cnt(P(), 1), dsp = [] {
        std::vector<int64_t> d(P());
        for (int q = 0; q < P(); ++q) d[q] = q;
        return d;
    }();
    const Space dev = Space::device;
    struct Call {
        const char *name;
        std::function<void()> f;
    };
    const Call calls[] = {
        {"allreduce", [&] { comm::allreduce(C(), Exec{dev}, a.data(), b.data(), 8, DType::f64, ReduceOp::sum); }},
        {"allgatherv", [&] { comm::allgatherv(C(), Exec{dev}, a.data(), b.data(), cnt, DType::f64); }},
        {"bcast", [&] { comm::bcast(C(), Exec{dev}, a.data(), 8, DType::f64, 0); }},
        {"send", [&] { comm::send(C(), Exec{dev}, a.data(), 8, DType::f64, kNoPeer, 0); }},
        {"recv", [&] { comm::recv(C(), Exec{dev}, b.data(), 8, DType::f64, kNoPeer, 0); }},
        {"sendrecv", [&] { comm::sendrecv(C(), Exec{dev}, a.data(), 1, kNoPeer, 0, b.data(), 1, kNoPeer, 0, DType::f64); }},
        {"alltoallv", [&] { comm::alltoallv(C(), Exec{dev}, a.data(), cnt, dsp, b.data(), cnt, dsp, DType::f64); }},
        {"neighbour_exchange", [&] {
             Halo h;
             h.to_next = a.data();
             h.n_to_next = R() + 1 < P() ? 1 : 0;
             h.from_prev = b.data();
             h.n_from_prev = R() > 0 ? 1 : 0;
             comm::neighbour_exchange(C(), Exec{dev}, DType::f64, h);
         }},
    };
    for (const Call &call : calls) {
        const plm_status_t s = status_of(call.f);
        ck.expect(s == PLM_ERR_BACKEND_UNAVAILABLE, "%s on device memory: %s, expected PLM_ERR_BACKEND_UNAVAILABLE",
                  call.name, plm_status_string(s));
    }
    ck.expect(b == std::vector<double>(8, 0.0), "a device call touched the buffer");
    case_allreduce<double>(ck, ReduceOp::sum, 3, false);  // still in step
    assert_all_ranks_true(ck.ok);
}

void test_invalid_peers(void **)
{
    Checker ck;
    double x = 1, y = 2;
    const int p = P();
    const plm_status_t s1 = status_of([&] { comm::bcast(C(), Exec{}, &x, 1, DType::f64, p); });
    const plm_status_t s2 = status_of([&] { comm::bcast(C(), Exec{}, &x, 1, DType::f64, -1); });
    const plm_status_t s3 = status_of([&] { comm::send(C(), Exec{}, &x, 1, DType::f64, p, 0); });
    const plm_status_t s4 = status_of([&] { comm::recv(C(), Exec{}, &y, 1, DType::f64, p + 3, 0); });
    const plm_status_t s5 =
        status_of([&] { comm::sendrecv(C(), Exec{}, &x, 1, -2, 0, &y, 1, kNoPeer, 0, DType::f64); });
    const plm_status_t s6 = status_of([&] { comm::sendrecv(C(), Exec{}, &x, 1, kNoPeer, 0, &y, 1, p, 0, DType::f64); });
    ck.expect(s1 == PLM_ERR_INVALID_ARG, "bcast root P: %s", plm_status_string(s1));
    ck.expect(s2 == PLM_ERR_INVALID_ARG, "bcast root -1: %s", plm_status_string(s2));
    ck.expect(s3 == PLM_ERR_INVALID_ARG, "send to P: %s", plm_status_string(s3));
    ck.expect(s4 == PLM_ERR_INVALID_ARG, "recv from P+3: %s", plm_status_string(s4));
    ck.expect(s5 == PLM_ERR_INVALID_ARG, "sendrecv dest -2: %s", plm_status_string(s5));
    ck.expect(s6 == PLM_ERR_INVALID_ARG, "sendrecv source P: %s", plm_status_string(s6));
    ck.expect(x == 1 && y == 2, "an invalid call touched the buffers");
    case_allreduce<double>(ck, ReduceOp::sum, 3, false);
    assert_all_ranks_true(ck.ok);
}

// A sub-communicator (Communicator::split) is a full communicator for the primitives.
void test_primitives_on_split(void **)
{
    Checker ck;
    std::shared_ptr<Communicator> sub;
    guarded(ck, "split", [&] { sub = C().split(R() % 2, 0); });
    assert_all_ranks_true(sub != nullptr);
    const int sr = sub->rank(), sp = sub->size();
    double v = R(), s = 0;
    guarded(ck, "allreduce on split", [&] { comm::allreduce(*sub, Exec{}, &v, &s, 1, DType::f64, ReduceOp::sum); });
    double want = 0;
    for (int q = R() % 2; q < P(); q += 2) want += q;
    ck.expect(s == want, "allreduce on the parity split: %g, expected %g", s, want);
    std::vector<int64_t> all;
    guarded(ck, "allgather_i64 on split", [&] { all = comm::allgather_i64(*sub, {R()}); });
    ck.expect(static_cast<int>(all.size()) == sp, "allgather_i64 on split: %zu values for %d ranks", all.size(), sp);
    for (int q = 0; q < static_cast<int>(all.size()); ++q)
        ck.expect(all[q] == R() % 2 + 2 * q, "allgather_i64 on split: [%d] = %lld", q, static_cast<long long>(all[q]));
    ck.expect(sr == R() / 2, "split rank %d, expected %d", sr, R() / 2);
    sub.reset();
    assert_all_ranks_true(ck.ok);
}

// ---------------------------------------------------------------------------------------
// The chunked (64-bit count) paths
// ---------------------------------------------------------------------------------------

int chunk_setup(void **)
{
    set_max_mpi_count(3);
    return max_mpi_count() == 3 ? 0 : -1;
}

int chunk_teardown(void **)
{
    set_max_mpi_count(0);
    return max_mpi_count() == INT_MAX ? 0 : -1;
}

void test_set_max_mpi_count(void **)
{
    set_max_mpi_count(0);
    assert_int_equal(max_mpi_count(), INT_MAX);
    set_max_mpi_count(3);
    assert_int_equal(max_mpi_count(), 3);
    set_max_mpi_count(1);
    assert_int_equal(max_mpi_count(), 1);
    set_max_mpi_count(-5);
    assert_int_equal(max_mpi_count(), INT_MAX);
    set_max_mpi_count(int64_t{1} << 40);  // more than an int: the default
    assert_int_equal(max_mpi_count(), INT_MAX);
    set_max_mpi_count(INT_MAX);
    assert_int_equal(max_mpi_count(), INT_MAX);
    set_max_mpi_count(0);
    assert_int_equal(max_mpi_count(), INT_MAX);
}

// Runs f() once with the default limit and once with `limit`, compares both results.
template <typename F> void same_chunked(Checker &ck, int64_t limit, const std::string &what, F &&f)
{
    set_max_mpi_count(0);
    const auto plain = f();
    set_max_mpi_count(limit);
    const auto chunked = f();
    if (plain != chunked) ck.bad("%s: chunked result (limit %lld) differs from the unchunked one", what.c_str(),
                                  static_cast<long long>(limit));
}

template <typename T> void chunked_cases(Checker &ck, int64_t limit)
{
    const ReduceOp ops[] = {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::prod};
    for (ReduceOp op : ops) {
        if (is_complex_v<T> && (op == ReduceOp::max || op == ReduceOp::min)) continue;
        for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{6}, int64_t{7}, int64_t{37}})
            for (bool ip : {false, true})
                same_chunked(ck, limit, tag<T>("allreduce"), [&] { return case_allreduce<T>(ck, op, n, ip); });
    }
    for (int root = 0; root < P(); ++root)
        for (int64_t n : {int64_t{3}, int64_t{4}, int64_t{10}, int64_t{37}})
            same_chunked(ck, limit, tag<T>("bcast"), [&] { return case_bcast<T>(ck, root, n); });
    for (int k : {1, 3})
        for (bool gaps : {false, true}) {
            same_chunked(ck, limit, tag<T>("allgatherv"),
                         [&] { return case_allgatherv<T>(ck, counts_uneven(k), gaps, "uneven"); });
            same_chunked(ck, limit, tag<T>("allgatherv"),
                         [&] { return case_allgatherv<T>(ck, counts_first_empty(k), gaps, "rank 0 empty"); });
            same_chunked(ck, limit, tag<T>("allgatherv"),
                         [&] { return case_allgatherv<T>(ck, counts_uniform(2 + 5 * k), gaps, "uniform"); });
        }
    for (int64_t base : {int64_t{2}, int64_t{3}, int64_t{10}})
        same_chunked(ck, limit, tag<T>("send/recv"), [&] { return case_send_recv<T>(ck, base); });
    case_send_recv_empty<T>(ck);
    for (int64_t base : {int64_t{0}, int64_t{3}, int64_t{8}})
        same_chunked(ck, limit, tag<T>("sendrecv"), [&] { return case_sendrecv_ring<T>(ck, base); });
    same_chunked(ck, limit, tag<T>("sendrecv step 7"), [&] { return case_sendrecv_ring<T>(ck, 1, 7); });
    // k = limit + 1: every non-zero count exceeds the limit, so every rank takes the pairwise
    // fallback (see test_chunked_alltoallv_mixed_paths for ranks that would choose differently)
    for (bool gaps : {false, true})
        same_chunked(ck, limit, tag<T>("alltoallv"),
                     [&] { return case_alltoallv<T>(ck, static_cast<int>(limit) + 1, gaps); });
    for (int k : {1, 3})
        same_chunked(ck, limit, tag<T>("neighbour_exchange"), [&] { return case_neighbour_exchange<T>(ck, k); });
    set_max_mpi_count(limit);
    case_neighbour_ends<T>(ck);
}

void test_chunked_all_dtypes(void **)
{
    Checker ck;
    chunked_cases<float>(ck, 3);
    chunked_cases<double>(ck, 3);
    chunked_cases<c64>(ck, 3);
    chunked_cases<c128>(ck, 3);
    chunked_cases<int64_t>(ck, 3);
    ck.expect(max_mpi_count() == 3, "max_mpi_count() is %lld", static_cast<long long>(max_mpi_count()));
    assert_all_ranks_true(ck.ok);
}

void test_chunked_metadata_and_agree(void **)
{
    Checker ck;
    same_chunked(ck, 3, "allgather_i64", [&] { return case_allgather_i64(ck); });
    set_max_mpi_count(3);
    case_allreduce_i64(ck);
    // agree() broadcasts a message struct of kMsgLen+8 bytes: in chunks of 3 here
    const int bad = P() - 1;
    std::optional<Error> local;
    if (R() == bad) local = Error(PLM_ERR_SIZE_MISMATCH, "chunked boom from the last rank");
    Caught c = agree_with(local);
    ck.expect(c.status == PLM_ERR_SIZE_MISMATCH, "chunked agree: %s", plm_status_string(c.status));
    ck.expect(c.what.find("chunked boom from the last rank") != std::string::npos, "chunked agree: '%s'",
              c.what.c_str());
    Caught none = agree_with(std::nullopt);
    ck.expect(none.status == PLM_SUCCESS, "chunked agree without errors threw");
    assert_all_ranks_true(ck.ok);
}

// Other limits: 1 (every element its own message), 2, 5.
void test_chunked_limit_sweep(void **)
{
    Checker ck;
    for (int64_t limit : {int64_t{1}, int64_t{2}, int64_t{5}}) {
        same_chunked(ck, limit, "allreduce f64", [&] { return case_allreduce<double>(ck, ReduceOp::sum, 11, false); });
        same_chunked(ck, limit, "allreduce c128 in place",
                     [&] { return case_allreduce<c128>(ck, ReduceOp::prod, 11, true); });
        same_chunked(ck, limit, "bcast c64", [&] { return case_bcast<c64>(ck, P() - 1, 11); });
        same_chunked(ck, limit, "allgatherv f32",
                     [&] { return case_allgatherv<float>(ck, counts_uneven(3), true, "uneven"); });
        same_chunked(ck, limit, "sendrecv i64", [&] { return case_sendrecv_ring<int64_t>(ck, 2); });
        same_chunked(ck, limit, "send/recv f64", [&] { return case_send_recv<double>(ck, 4); });
        same_chunked(ck, limit, "alltoallv c128",
                     [&] { return case_alltoallv<c128>(ck, static_cast<int>(limit) + 1, true); });
        same_chunked(ck, limit, "neighbour f64", [&] { return case_neighbour_exchange<double>(ck, 2); });
    }
    set_max_mpi_count(0);
    assert_all_ranks_true(ck.ok);
}

// alltoallv where some ranks' counts and displacements fit the limit and others' do not: the
// choice between MPI_Alltoallv and the pairwise fallback must be the same on every rank.
// Rank P-1 sends 4 elements to itself (past the limit 3); everything else is 1 element, so on
// 2..4 ranks rank 0's counts and displacements all fit.
void test_chunked_alltoallv_mixed_paths(void **)
{
    Checker ck;
    const int r = R(), p = P();
    auto cnt = [p](int s, int d) -> int64_t { return s == d && s == p - 1 ? 4 : 1; };
    std::vector<int64_t> sc(p), sd(p), rc(p), rd(p);
    int64_t so = 0, ro = 0;
    for (int q = 0; q < p; ++q) {
        sc[q] = cnt(r, q);
        sd[q] = so;
        so += sc[q];
        rc[q] = cnt(q, r);
        rd[q] = ro;
        ro += rc[q];
    }
    std::vector<double> sbuf(static_cast<size_t>(so)), rbuf(static_cast<size_t>(ro), -1.0), want(rbuf.size());
    for (int q = 0; q < p; ++q) {
        for (int64_t j = 0; j < sc[q]; ++j) sbuf[sd[q] + j] = 100.0 * r + 10.0 * q + j;
        for (int64_t j = 0; j < rc[q]; ++j) want[rd[q] + j] = 100.0 * q + 10.0 * r + j;
    }
    guarded(ck, "alltoallv with mixed fast/fallback paths", [&] {
        comm::alltoallv(C(), Exec{}, sbuf.data(), sc, sd, rbuf.data(), rc, rd, DType::f64);
    });
    expect_equal(ck, rbuf, want, "alltoallv mixed paths");
    alarm(0);
    assert_all_ranks_true(ck.ok);
}

}  // namespace

int main(int argc, char **argv)
{
    watchdog_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce),
        cmocka_unit_test(test_allreduce_complex_minmax_not_supported),
        cmocka_unit_test(test_allgatherv),
        cmocka_unit_test(test_bcast_every_root),
        cmocka_unit_test(test_send_recv),
        cmocka_unit_test(test_sendrecv_ring),
        cmocka_unit_test(test_alltoallv),
        cmocka_unit_test(test_neighbour_exchange),
        cmocka_unit_test(test_metadata_helpers),
        cmocka_unit_test(test_agree),
        cmocka_unit_test(test_capture),
        cmocka_unit_test(test_device_space_unavailable),
        cmocka_unit_test(test_invalid_peers),
        cmocka_unit_test(test_primitives_on_split),
        cmocka_unit_test(test_set_max_mpi_count),
        cmocka_unit_test_setup_teardown(test_chunked_all_dtypes, chunk_setup, chunk_teardown),
        cmocka_unit_test_setup_teardown(test_chunked_metadata_and_agree, chunk_setup, chunk_teardown),
        cmocka_unit_test_setup_teardown(test_chunked_limit_sweep, chunk_setup, chunk_teardown),
        // last: a library that lets ranks take different paths hangs here (watchdog exits)
        cmocka_unit_test_setup_teardown(test_chunked_alltoallv_mixed_paths, chunk_setup, chunk_teardown),
    };
    const int rc = plm_run_group_tests_mpi(tests);
    alarm(0);
    return rc;
}
