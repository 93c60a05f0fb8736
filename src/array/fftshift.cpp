// fftshift / ifftshift of distributed arrays: see fftshift.hpp. The roll along the distributed
// axis is a permutation of slices: each destination block takes at most two runs of source
// slices (the wrap cuts it once), and each run is cut again by the source ranks' blocks.
#include "array/fftshift.hpp"

#include <algorithm>

#include "comm/distributed.hpp"

namespace plm {

namespace {

// A run of slices along the rolled axis, in global indices: dst[k] = src[k] for k < len.
struct Piece {
    int64_t dst, src, len;
};

// The runs rank m's destination block [dlo, dhi) takes from the source block [slo, shi) of a
// roll by s (0 <= s < n): new[i] = old[(i - s) mod n]. In destination order.
std::vector<Piece> pieces(int64_t n, int64_t s, int64_t dlo, int64_t dhi, int64_t slo, int64_t shi)
{
    std::vector<Piece> out;
    for (int64_t i = dlo; i < dhi;) {
        const int64_t j = ((i - s) % n + n) % n;
        const int64_t len = std::min(dhi - i, n - j);
        const int64_t lo = std::max(j, slo), hi = std::min(j + len, shi);
        if (hi > lo) out.push_back({i + (lo - j), lo, hi - lo});
        i += len;
    }
    return out;
}

// The exchange of a roll along the distributed axis: what this rank sends to and receives
// from each rank, with the alltoallv counts (elements).
struct Exchange {
    std::vector<std::vector<Piece>> send, recv;
    std::vector<int64_t> sc, sd, rc, rd;
};

Exchange plan_exchange(const Layout &l, int me, int64_t s, int64_t slice)
{
    const int P = l.nranks();
    const int64_t n = l.global[static_cast<size_t>(l.axis)];
    Exchange x;
    x.send.resize(static_cast<size_t>(P));
    x.recv.resize(static_cast<size_t>(P));
    int64_t soff = 0, roff = 0;
    const int64_t mlo = l.offset(me), mhi = mlo + l.local[static_cast<size_t>(me)][static_cast<size_t>(l.axis)];
    for (int q = 0; q < P; ++q) {
        const int64_t qlo = l.offset(q), qhi = qlo + l.local[static_cast<size_t>(q)][static_cast<size_t>(l.axis)];
        const size_t k = static_cast<size_t>(q);
        x.send[k] = pieces(n, s, qlo, qhi, mlo, mhi);  // q's block taking from mine
        x.recv[k] = pieces(n, s, mlo, mhi, qlo, qhi);  // my block taking from q's
        int64_t ns = 0, nr = 0;
        for (const Piece &p : x.send[k]) ns += p.len;
        for (const Piece &p : x.recv[k]) nr += p.len;
        x.sc.push_back(ns * slice);
        x.rc.push_back(nr * slice);
        x.sd.push_back(soff);
        x.rd.push_back(roff);
        soff += ns * slice;
        roff += nr * slice;
    }
    return x;
}

char *at(void *p, int64_t elems, DType dt) { return static_cast<char *>(p) + elems * static_cast<int64_t>(dtype_size(dt)); }

}  // namespace

DistributedArray::Ptr fftshift(comm::Agreement &ag, const DistributedArray &x, const std::vector<int> &axes_in,
                               bool inverse)
{
    const Layout &l = x.layout();
    const int nd = l.ndim(), me = x.rank();
    std::vector<int> axes;
    DistributedArray::Ptr y, tmp, sbuf, rbuf;
    Exchange ex;
    bool along = false;  // a roll along the distributed axis of a SCATTER array
    ag.check([&] {
        if (axes_in.empty())
            for (int a = 0; a < nd; ++a) axes.push_back(a);
        for (int a : axes_in) {
            const int b = normalize_axis(a, nd);
            PLM_REQUIRE(std::find(axes.begin(), axes.end(), b) == axes.end(), PLM_ERR_INVALID_ARG,
                        "axis %d appears twice in the shift's axes", b);
            axes.push_back(b);
        }
        along = l.scattered() && std::find(axes.begin(), axes.end(), l.axis) != axes.end();
        y = x.empty_like();
        if (axes.size() > 1) tmp = x.empty_like();
        if (along) {
            const int64_t n = l.global[static_cast<size_t>(l.axis)];
            const int64_t s = inverse ? (n - n / 2) % n : n / 2;  // -(n // 2) mod n
            const Shape &L = x.local_shape();
            const int64_t slice = Layout::outer(L, l.axis) * Layout::inner(L, l.axis);
            ex = plan_exchange(l, me, s, slice);
            sbuf = x.empty_like();
            rbuf = x.empty_like();
            x.reserve_staging(2 * x.local_size());
        }
    });
    x.fold_layout(ag);
    ag.fold(inverse);
    ag.fold_all(axes);
    ag.run();

    // Each step writes the buffer the next one reads; the last writes y.
    const Exec e = x.exec();
    const DType dt = x.dtype();
    const Shape &L = x.local_shape();
    const void *src = x.data();
    size_t left = axes.size();
    auto next = [&]() -> void * { return --left % 2 == 0 ? y->data() : tmp->data(); };
    if (along) {
        const int a = l.axis;
        const int64_t outer = Layout::outer(L, a), inner = Layout::inner(L, a), n = L[static_cast<size_t>(a)];
        const int64_t mine = l.offset(me);
        const int P = l.nranks();
        for (int q = 0; q < P; ++q) {
            int64_t off = ex.sd[static_cast<size_t>(q)];
            for (const Piece &p : ex.send[static_cast<size_t>(q)]) {
                kernels::copy_slab(e, dt, outer, inner, src, n, p.src - mine, at(sbuf->data(), off, dt), p.len, 0,
                                   p.len);
                off += p.len * outer * inner;
            }
        }
        comm::alltoallv(x.base(), e, sbuf->data(), ex.sc, ex.sd, rbuf->data(), ex.rc, ex.rd, dt);
        void *dst = next();
        for (int q = 0; q < P; ++q) {
            int64_t off = ex.rd[static_cast<size_t>(q)];
            for (const Piece &p : ex.recv[static_cast<size_t>(q)]) {
                kernels::copy_slab(e, dt, outer, inner, at(rbuf->data(), off, dt), p.len, 0, dst, n, p.dst - mine,
                                   p.len);
                off += p.len * outer * inner;
            }
        }
        src = dst;
    }
    for (int a : axes) {
        if (along && a == l.axis) continue;
        const int64_t n = l.global[static_cast<size_t>(a)];
        void *dst = next();
        kernels::roll(e, dt, nd, L.data(), a, inverse ? -(n / 2) : n / 2, src, dst);
        src = dst;
    }
    return y;
}

}  // namespace plm
