// Halo (PyLops-MPI's MPIHalo): an N-D array cut into the blocks of a process grid; the
// forward grows each block by its halo widths and fills the ghost cells from the grid
// neighbours, axis after axis (so edges and corners arrive through two hops), zero where there
// is no neighbour. The adjoint extracts the core.
#include <algorithm>
#include <optional>

#include "ops/operator.hpp"

namespace plm::ops {

namespace {

// The blocks of the grid: rank r sits at the row-major coordinate of r.
struct Grid {
    Shape dims;
    std::vector<int> p;  // ranks per axis

    int ndim() const { return static_cast<int>(dims.size()); }
    int stride(int d) const
    {
        int s = 1;
        for (int k = d + 1; k < ndim(); ++k) s *= p[static_cast<size_t>(k)];
        return s;
    }
    int coord(int r, int d) const { return r / stride(d) % p[static_cast<size_t>(d)]; }
    // [begin, end) of coordinate c along d: blocks of ceil(g / p), the trailing ones smaller.
    std::pair<int64_t, int64_t> range(int c, int d) const
    {
        const int64_t g = dims[static_cast<size_t>(d)], n = p[static_cast<size_t>(d)];
        return {ceil_split_start(g, n, c), ceil_split_start(g, n, c + 1)};
    }
    Shape core(int r) const
    {
        Shape s;
        for (int d = 0; d < ndim(); ++d) {
            const auto [lo, hi] = range(coord(r, d), d);
            s.push_back(hi - lo);
        }
        return s;
    }
    // The neighbour of r along d on side (0: minus, 1: plus), or -1 at the grid boundary.
    int neighbour(int r, int d, int side) const
    {
        const int c = coord(r, d) + (side ? 1 : -1);
        return c < 0 || c >= p[static_cast<size_t>(d)] ? -1 : r + (side ? 1 : -1) * stride(d);
    }
};

// (minus, plus) widths per axis from 1, ndim or 2 ndim values; one value skips sides at the
// grid boundary (PyLops' scalar halo).
std::vector<int64_t> side_widths(const Grid &g, int rank, const std::vector<int64_t> &h)
{
    const size_t nd = static_cast<size_t>(g.ndim());
    PLM_REQUIRE(h.size() == 1 || h.size() == nd || h.size() == 2 * nd, PLM_ERR_INVALID_ARG,
                "halo takes 1, ndim (%zu) or 2 ndim widths, not %zu", nd, h.size());
    for (int64_t w : h) PLM_REQUIRE(w >= 0, PLM_ERR_INVALID_ARG, "halo widths must be non-negative (got %lld)",
                                    static_cast<long long>(w));
    std::vector<int64_t> w(2 * nd);
    for (size_t d = 0; d < nd; ++d)
        for (int side = 0; side < 2; ++side) {
            int64_t v = h.size() == 1 ? h[0] : h.size() == nd ? h[d] : h[2 * d + static_cast<size_t>(side)];
            if (h.size() == 1 && g.neighbour(rank, static_cast<int>(d), side) < 0) v = 0;
            w[2 * d + static_cast<size_t>(side)] = v;
        }
    return w;
}

// Every rank checks every pair of neighbours from the gathered widths, so all throw alike.
void check_widths(const Grid &g, const std::vector<int64_t> &all, int P)
{
    const size_t nd = static_cast<size_t>(g.ndim());
    auto w = [&](int r, size_t d, int side) { return all[static_cast<size_t>(r) * 2 * nd + 2 * d + static_cast<size_t>(side)]; };
    for (int r = 0; r < P; ++r)
        for (size_t d = 0; d < nd; ++d) {
            const int q = g.neighbour(r, static_cast<int>(d), 1);
            if (q < 0) continue;
            const int64_t core_r = g.core(r)[d], core_q = g.core(q)[d];
            PLM_REQUIRE(w(r, d, 1) == w(q, d, 0), PLM_ERR_INVALID_ARG,
                        "rank %d's plus halo on axis %zu (%lld) does not match neighbor %d's minus halo (%lld)", r, d,
                        static_cast<long long>(w(r, d, 1)), q, static_cast<long long>(w(q, d, 0)));
            PLM_REQUIRE(w(r, d, 1) <= core_r && w(q, d, 0) <= core_q, PLM_ERR_INVALID_ARG,
                        "the halo of %lld on axis %zu exceeds local block size (rank %d or %d)",
                        static_cast<long long>(w(r, d, 1)), d, r, q);
            for (size_t e = 0; e < nd; ++e)
                PLM_REQUIRE(e == d || (w(r, e, 0) == w(q, e, 0) && w(r, e, 1) == w(q, e, 1)), PLM_ERR_INVALID_ARG,
                            "neighbours %d and %d along axis %zu have different halos on axis %zu", r, q, d, e);
        }
}

// A block grown by its widths. Widths at the grid boundary are bounded by nothing but this.
Shape extent_of(const Shape &core, const int64_t *w)
{
    Shape s = core;
    for (size_t d = 0; d < s.size(); ++d) s[d] = checked_sum({s[d], w[2 * d], w[2 * d + 1]}, "a halo-grown extent");
    return s;
}

// The packed rows sent and received along one axis at a time, in one apply.
struct HaloWork : Work {
    Buffer send, recv;
};

class Halo final : public Operator {
public:
    Halo(DType dt, ArrayLayout::Ptr domain, ArrayLayout::Ptr range, const Grid &g, std::vector<int64_t> widths)
        : Operator(dt, domain, range), w_(std::move(widths))
    {
        const comm::Communicator &c = domain_->comm();
        const int me = c.rank(), P = c.size();
        core_ = g.core(me);
        ext_ = extent_of(core_, w_.data());
        zero_.assign(core_.size(), 0);
        for (size_t d = 0; d < core_.size(); ++d) at_.push_back(w_[2 * d]);
        for (int d = 0; d < g.ndim(); ++d) {
            // Both sides' slabs, one axis at a time: [to minus | to plus], likewise received.
            Axis a;
            a.slab = ext_;
            for (int side = 0; side < 2; ++side) {
                a.peer[side] = g.neighbour(me, d, side);
                a.width[side] = a.peer[side] < 0 ? 0 : w_[2 * static_cast<size_t>(d) + static_cast<size_t>(side)];
            }
            a.slab[static_cast<size_t>(d)] = 1;
            const int64_t per_row = plm::product(a.slab);
            std::vector<int64_t> sc(static_cast<size_t>(P), 0), sd = sc, rc = sc, rd = sc;
            for (int side = 0; side < 2; ++side) {
                if (a.peer[side] < 0) continue;
                const size_t q = static_cast<size_t>(a.peer[side]);
                sc[q] = rc[q] = a.width[side] * per_row;
                sd[q] = rd[q] = side ? a.width[0] * per_row : 0;
            }
            // Rows along d: sent from [lo, lo + width0) and [lo + core - width1, lo + core);
            // received into [0, width0) and [lo + core, lo + core + width1).
            const size_t k = static_cast<size_t>(d);
            const int64_t lo = w_[2 * k], core = core_[k];
            const int64_t send_at[2] = {lo, lo + core - a.width[1]}, recv_at[2] = {lo - a.width[0], lo + core};
            for (int side = 0; side < 2; ++side) {
                a.size[side] = a.slab;
                a.size[side][k] = a.width[side];
                a.send_at[side] = a.recv_at[side] = Shape(ext_.size(), 0);
                a.send_at[side][k] = send_at[side];
                a.recv_at[side][k] = recv_at[side];
            }
            a.count = (a.width[0] + a.width[1]) * per_row;
            most_ = std::max(most_, a.count);
            a.plan = std::make_unique<comm::AlltoallvPlan>(c, dt, sc, sd, rc, rd);
            axes_.push_back(std::move(a));
        }
    }
    WorkPtr make_work(const Exec &e) const override
    {
        const size_t bytes = checked_bytes(most_, dtype_, "the halo exchange buffer");
        if (e.space == Space::device) use_device(e.device);
        auto w = std::make_unique<HaloWork>();
        w->send = Buffer::allocate(e.space, bytes);
        w->recv = Buffer::allocate(e.space, bytes);
        reserve_staging(e, 2 * most_);
        return w;
    }

    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        const Exec e = x.exec();
        const int nd = static_cast<int>(core_.size());
        if (adjoint) {
            kernels::copy_box(e, dtype_, nd, x.data(), ext_.data(), at_.data(), y.data(), core_.data(), zero_.data(),
                              core_.data());
            return;
        }
        const Scalar z = make_scalar(dtype_, 0, 0, "halo");
        kernels::fill(e, dtype_, y.local_size(), z.data(), y.data());
        kernels::copy_box(e, dtype_, nd, x.data(), core_.data(), zero_.data(), y.data(), ext_.data(), at_.data(),
                          core_.data());
        for (size_t d = 0; d < axes_.size(); ++d) exchange(e, static_cast<int>(d), y.data(), *static_cast<HaloWork *>(w));
    }

private:
    struct Axis {
        int peer[2] = {-1, -1};
        int64_t width[2] = {0, 0};  // 0 without a neighbour
        Shape slab;                  // the extent, one row thick along this axis
        Shape size[2], send_at[2], recv_at[2];  // per side: the rows' box, where sent, where received
        int64_t count = 0;           // elements sent (and received) on both sides
        std::unique_ptr<comm::AlltoallvPlan> plan;
    };

    // Sends the first and last core rows along axis d and receives the ghost rows.
    void exchange(const Exec &e, int d, void *ext, const HaloWork &w) const
    {
        const Axis &a = axes_[static_cast<size_t>(d)];
        const int nd = static_cast<int>(ext_.size());
        const int64_t esize = static_cast<int64_t>(dtype_size(dtype_));
        auto box = [&](int side, void *buf, bool pack) {
            if (!a.width[side]) return;
            const int64_t *size = a.size[side].data();
            char *b = static_cast<char *>(buf) + (side ? a.width[0] * plm::product(a.slab) * esize : 0);
            if (pack)
                kernels::copy_box(e, dtype_, nd, ext, ext_.data(), a.send_at[side].data(), b, size, zero_.data(), size);
            else
                kernels::copy_box(e, dtype_, nd, b, size, zero_.data(), ext, ext_.data(), a.recv_at[side].data(), size);
        };
        for (int side = 0; side < 2; ++side) box(side, w.send.data(), true);
        a.plan->start(e, w.send.data(), w.recv.data()).wait();
        for (int side = 0; side < 2; ++side) box(side, w.recv.data(), false);
    }

    std::vector<int64_t> w_;  // (minus, plus) per axis
    Shape core_, ext_;
    Shape zero_, at_;  // the origin, and where the core sits in the grown block
    std::vector<Axis> axes_;
    int64_t most_ = 0;        // the most elements sent (and received) along one axis
};

}  // namespace

Operator::Ptr halo(comm::Agreement &ag, const CommPtr &c, int dtype, const std::vector<int64_t> &dims,
                   const std::vector<int> &grid, const std::vector<int64_t> &widths)
{
    const int P = c->size();
    Grid g;
    DType dt = DType::f64;
    std::vector<int64_t> mine;
    ag.check([&] {
        dt = from_public(dtype);
        PLM_REQUIRE(!dims.empty(), PLM_ERR_INVALID_ARG, "halo needs ndim >= 1 dims");
        for (int64_t d : dims) PLM_REQUIRE(d >= 1, PLM_ERR_INVALID_ARG, "dimensions must be >= 1 (got %lld)",
                                           static_cast<long long>(d));
        checked_product(dims, "the halo's element count");
        g.dims = dims;
        g.p = grid;
        if (g.p.empty()) {
            g.p.assign(dims.size(), 1);
            g.p.back() = P;
        }
        PLM_REQUIRE(g.p.size() == dims.size(), PLM_ERR_INVALID_ARG, "the process grid needs ndim (%zu) entries",
                    dims.size());
        int64_t n = 1;
        for (int v : g.p) {
            PLM_REQUIRE(v >= 1, PLM_ERR_INVALID_ARG, "process grid entries must be >= 1 (got %d)", v);
            n *= v;
            PLM_REQUIRE(n <= P, PLM_ERR_INVALID_ARG, "the process grid has more entries than %d ranks", P);
        }
        PLM_REQUIRE(n == P, PLM_ERR_INVALID_ARG, "the process grid holds %lld ranks, the communicator has %d",
                    static_cast<long long>(n), P);
        mine = side_widths(g, c->rank(), widths);
        // This rank's grown block, and its bytes (the exchange buffers are at most that).
        checked_bytes(checked_product(extent_of(g.core(c->rank()), mine.data()), "this rank's halo-grown block"), dt,
                      "this rank's halo-grown block in bytes");
    });
    ag.fold(static_cast<int64_t>(dt));
    ag.fold_all(dims);
    ag.fold_all(g.p);
    std::vector<int64_t> all;  // every rank's 2 ndim widths, gathered after the agreement
    ag.check([&] { all.resize(mine.size() * static_cast<size_t>(P)); });
    ag.run();
    comm::allgather_i64(*c, mine.data(), static_cast<int64_t>(mine.size()), all.data());
    return comm::finish_collective(*c, "op_halo", {}, [&]() -> Operator::Ptr {
            check_widths(g, all, P);  // the same data on every rank: the same verdict
            std::vector<int64_t> core_sizes, ext_sizes;
            for (int r = 0; r < P; ++r) {
                const Shape core = g.core(r);
                core_sizes.push_back(plm::product(core));
                ext_sizes.push_back(plm::product(extent_of(core, all.data() + static_cast<size_t>(r) * 2 * dims.size())));
            }
            checked_sum(ext_sizes, "the halo-grown blocks summed over the ranks", PLM_ERR_SIZE_MISMATCH);
            return std::make_shared<Halo>(dt, vector_layout(c, core_sizes, PLM_PARTITION_SCATTER, {}),
                                          vector_layout(c, ext_sizes, PLM_PARTITION_SCATTER, {}), g, std::move(mine));
    });
}

}  // namespace plm::ops
