// Finite differences on an N-D model split along axis 0 in whole rows: FirstDerivative,
// SecondDerivative, Laplacian and Gradient. The difference matrix of one axis is banded:
// explicit rows near the ends, the same terms in between; the adjoint is its exact transpose,
// built the same way. Along axis 0 the rows a rank needs from others arrive through one
// persistent exchange, which runs while the other axes and the interior rows are computed.
#include <algorithm>
#include <cmath>

#include "ops/operator.hpp"

namespace plm::ops {

namespace {

struct Term {
    int off;  // input index minus output index
    double w;
};
using Row = std::vector<Term>;

// PyLops' rows for an axis of n points. Where PyLops assigns the end rows in turn, the later
// assignment wins here too.
Row first_row(int kind, int order, bool edge, int64_t n, int64_t i)
{
    if (kind == PLM_DERIV_FORWARD) return i < n - 1 ? Row{{0, -1}, {1, 1}} : Row{};
    if (kind == PLM_DERIV_BACKWARD) return i >= 1 ? Row{{-1, -1}, {0, 1}} : Row{};
    if (edge && i == n - 1) return {{-1, -1}, {0, 1}};
    if (order == 3) {
        if (edge && i == 0) return {{0, -1}, {1, 1}};
        return i >= 1 && i <= n - 2 ? Row{{-1, -0.5}, {1, 0.5}} : Row{};
    }
    if (edge && (i == n - 2 || i == 1)) return {{-1, -0.5}, {1, 0.5}};
    if (edge && i == 0) return {{0, -1}, {1, 1}};
    return i >= 2 && i <= n - 3 ? Row{{-2, 1.0 / 12}, {-1, -2.0 / 3}, {1, 2.0 / 3}, {2, -1.0 / 12}} : Row{};
}

Row second_row(int kind, bool edge, int64_t n, int64_t i)
{
    if (kind == PLM_DERIV_FORWARD) return i <= n - 3 ? Row{{0, 1}, {1, -2}, {2, 1}} : Row{};
    if (kind == PLM_DERIV_BACKWARD) return i >= 2 ? Row{{-2, 1}, {-1, -2}, {0, 1}} : Row{};
    if (edge && i == n - 1) return {{-2, 1}, {-1, -2}, {0, 1}};
    if (edge && i == 0) return {{0, 1}, {1, -2}, {2, 1}};
    return i >= 1 && i <= n - 2 ? Row{{-1, 1}, {0, -2}, {1, 1}} : Row{};
}

// The banded matrix of one axis of n points.
struct Band {
    int64_t n = 0, lo = 0, hi = 0;  // rows below lo and from n - hi on are listed in ends
    Row mid;
    std::vector<Row> ends;
    int reach = 0;  // the largest |off|
    int mid_lo = 0, mid_hi = 0;  // the smallest and largest offsets of mid (0 included)

    const Row &row(int64_t i) const
    {
        if (i < lo) return ends[static_cast<size_t>(i)];
        if (i >= n - hi) return ends[static_cast<size_t>(lo + i - (n - hi))];
        return mid;
    }
};

constexpr int64_t kEndRows = 3;  // rows at each end of an axis that may differ from the middle

// Lists the rows within `ends` of either end (all of them on a short axis) and checks that
// every term stays on the axis.
template <typename RowAt> Band make_band(int64_t n, int64_t ends, Row mid, RowAt row_at)
{
    Band b;
    b.n = n;
    b.mid = std::move(mid);
    b.lo = b.hi = ends;
    if (2 * ends >= n) {
        b.lo = n;
        b.hi = 0;
    }
    for (int64_t i = 0; i < b.lo; ++i) b.ends.push_back(row_at(i));
    for (int64_t i = n - b.hi; i < n; ++i) b.ends.push_back(row_at(i));
    for (const Term &t : b.mid) {
        b.mid_lo = std::min(b.mid_lo, t.off);
        b.mid_hi = std::max(b.mid_hi, t.off);
    }
    b.reach = std::max(-b.mid_lo, b.mid_hi);
    for (int64_t i = 0; i < n; i = (i + 1 == b.lo ? n - b.hi : i + 1)) {
        const Row &r = b.row(i);
        PLM_REQUIRE(r.size() <= static_cast<size_t>(kernels::kMaxTerms), PLM_ERR_INTERNAL, "a stencil row of %zu terms",
                    r.size());
        for (const Term &t : r) {
            PLM_REQUIRE(i + t.off >= 0 && i + t.off < n, PLM_ERR_INVALID_ARG,
                        "an axis of %lld points is too short for this stencil", static_cast<long long>(n));
            b.reach = std::max(b.reach, std::abs(t.off));
        }
    }
    return b;
}

// The exact transpose: row j lists the entries of column j.
Band transpose(const Band &b)
{
    Row mid;
    for (const Term &t : b.mid) mid.push_back({-t.off, t.w});
    std::reverse(mid.begin(), mid.end());
    const int64_t R = b.reach;
    return make_band(b.n, std::max(b.lo, b.hi) + R, std::move(mid), [&](int64_t j) {
        Row r;
        for (int64_t i = std::max<int64_t>(0, j - R); i <= std::min(b.n - 1, j + R); ++i)
            for (const Term &t : b.row(i))
                if (i + t.off == j) r.push_back({static_cast<int>(i - j), t.w});
        return r;
    });
}

// One axis of an operator: its band, the transpose and the factor (weight / sampling^order).
struct AxisPart {
    int axis;
    Band fwd, adj;
    double scale;
};

AxisPart first_part(int axis, int64_t n, int kind, int order, bool edge, double scale)
{
    Band b = make_band(n, kEndRows, first_row(kind, order, edge, 1 << 20, 1 << 19),
                       [&](int64_t i) { return first_row(kind, order, edge, n, i); });
    Band t = transpose(b);
    return {axis, std::move(b), std::move(t), scale};
}

AxisPart second_part(int axis, int64_t n, int kind, bool edge, double scale)
{
    Band b = make_band(n, kEndRows, second_row(kind, edge, 1 << 20, 1 << 19),
                       [&](int64_t i) { return second_row(kind, edge, n, i); });
    Band t = transpose(b);
    return {axis, std::move(b), std::move(t), scale};
}

// What a rank receives along axis 0: `before` rows ahead of its block and `after` rows past
// it (as far as the stencil reaches), from whichever ranks hold them; and what it sends.
struct GhostCounts {
    std::vector<int64_t> sc, sd, rc, rd;  // alltoallv counts and displacements, in elements
    int64_t before = 0, after = 0;
};

GhostCounts ghost_counts(const std::vector<int64_t> &rows, int me, int64_t row_len, int64_t reach)
{
    const size_t P = rows.size();
    std::vector<int64_t> start(P + 1, 0);
    for (size_t q = 0; q < P; ++q) start[q + 1] = start[q] + rows[q];
    const int64_t n = start[P];
    // The rows rank q reads ahead of (ahead) or past its block; none for an empty block.
    auto need = [&](size_t q, bool ahead) {
        if (rows[q] == 0) return std::pair<int64_t, int64_t>{0, 0};
        if (ahead) return std::pair<int64_t, int64_t>{std::max<int64_t>(0, start[q] - reach), start[q]};
        return std::pair<int64_t, int64_t>{start[q + 1], std::min(n, start[q + 1] + reach)};
    };
    GhostCounts g;
    g.sc.assign(P, 0);
    g.sd.assign(P, 0);
    g.rc.assign(P, 0);
    g.rd.assign(P, 0);
    const size_t m = static_cast<size_t>(me);
    const auto [blo, bhi] = need(m, true);
    const auto [alo, ahi] = need(m, false);
    g.before = bhi - blo;
    g.after = ahi - alo;
    // A block lies wholly ahead of or past another, so each pair exchanges one range at most.
    for (size_t q = 0; q < P; ++q) {
        if (q == m) continue;
        for (bool ahead : {true, false}) {
            auto [lo, hi] = need(q, ahead);
            lo = std::max(lo, start[m]);
            hi = std::min(hi, start[m + 1]);
            if (hi > lo) {
                g.sc[q] = (hi - lo) * row_len;
                g.sd[q] = (lo - start[m]) * row_len;
            }
            auto [mlo, mhi] = need(m, ahead);
            mlo = std::max(mlo, start[q]);
            mhi = std::min(mhi, start[q + 1]);
            if (mhi > mlo) {
                g.rc[q] = (mhi - mlo) * row_len;
                g.rd[q] = (ahead ? mlo - blo : g.before + mlo - alo) * row_len;
            }
        }
    }
    return g;
}

// The rows received along axis 0 in one apply.
struct GhostWork : Work {
    Buffer ghost;
};

class Stencil final : public Operator {
public:
    Stencil(DType dt, ArrayLayout::Ptr model, Shape dims, std::vector<int64_t> rows, std::vector<AxisPart> parts)
        : Operator(dt, model, model), dims_(std::move(dims)), parts_(std::move(parts)),
          esize_(static_cast<int64_t>(dtype_size(dt)))
    {
        const comm::Communicator &c = model->comm();
        row_len_ = plm::product(Shape(dims_.begin() + 1, dims_.end()));
        for (int q = 0; q < c.rank(); ++q) s_ += rows[static_cast<size_t>(q)];
        e_ = s_ + rows[static_cast<size_t>(c.rank())];
        int reach = 0;
        for (const AxisPart &p : parts_)
            if (p.axis == 0) reach = std::max(p.fwd.reach, p.adj.reach);
        if (reach == 0 || c.size() == 1) return;  // rank-independent: every rank makes the plan or none
        GhostCounts g = ghost_counts(rows, c.rank(), row_len_, reach);
        before_ = g.before;
        after_ = g.after;
        plan_ = std::make_unique<comm::AlltoallvPlan>(c, dt, std::move(g.sc), std::move(g.sd), std::move(g.rc),
                                                      std::move(g.rd));
    }
    WorkPtr make_work(const Exec &e) const override
    {
        if (!plan_) return nullptr;
        if (e.space == Space::device) use_device(e.device);
        auto w = std::make_unique<GhostWork>();
        w->ghost = Buffer::allocate(e.space, checked_bytes(checked_mul(before_ + after_, row_len_, "the ghost rows"),
                                                           dtype_, "the ghost rows in bytes"));
        return w;
    }

    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        const Exec e = x.exec();
        const char *in = static_cast<const char *>(x.data());
        char *out = static_cast<char *>(y.data());
        const char *ghost = plan_ ? static_cast<const char *>(static_cast<GhostWork *>(w)->ghost.data()) : nullptr;
        comm::Request r;
        if (plan_) r = plan_->start(e, in, const_cast<char *>(ghost));
        bool acc = false;  // the first part writes y, the others add to it
        const AxisPart *along0 = nullptr;
        for (const AxisPart &p : parts_) {
            if (p.axis == 0) {
                along0 = &p;
                continue;
            }
            local_axis(e, p, adjoint ? p.adj : p.fwd, in, out, acc);
            acc = true;
        }
        if (!along0) return;
        const Band &b = adjoint ? along0->adj : along0->fwd;
        // Rows of the middle terms whose inputs are all in this block need nothing received.
        int64_t i0 = std::max(s_ - b.mid_lo, b.lo), i1 = std::min(e_ - b.mid_hi, b.n - b.hi);
        if (i0 >= i1) i0 = i1 = e_;
        if (i1 > i0)
            combine_row(e, (i1 - i0) * row_len_, b.mid, along0->scale, acc,
                        [&](int off) { return in + (i0 - s_ + off) * row_len_ * esize_; }, out + (i0 - s_) * row_len_ * esize_);
        r.wait();
        for (auto [g0, g1] : {std::pair{s_, i0}, std::pair{i1, e_}})
            for (int64_t g = g0; g < g1; ++g)
                combine_row(e, row_len_, b.row(g), along0->scale, acc,
                            [&](int off) { return row_at(in, ghost, g + off); }, out + (g - s_) * row_len_ * esize_);
    }

private:
    template <typename Ptr>
    void combine_row(const Exec &e, int64_t len, const Row &r, double scale, bool acc, Ptr ptr, char *y) const
    {
        const void *xs[kernels::kMaxTerms];
        double w[kernels::kMaxTerms];
        int k = 0;
        for (const Term &t : r) {
            xs[k] = ptr(t.off);
            w[k++] = t.w;
        }
        kernels::combine(e, dtype_, len, k, xs, w, scale, acc, y);
    }

    // Row g of axis 0: in this block, or received.
    const char *row_at(const char *x, const char *gh, int64_t g) const
    {
        const int64_t bytes = row_len_ * esize_;
        if (g >= s_ && g < e_) return x + (g - s_) * bytes;
        return g < s_ ? gh + (g - (s_ - before_)) * bytes : gh + (before_ + g - e_) * bytes;
    }

    // A stencil along axis a > 0: every rank's block holds whole lines of that axis.
    void local_axis(const Exec &e, const AxisPart &p, const Band &b, const char *x, char *y, bool acc) const
    {
        const int a = p.axis;
        const int64_t n = dims_[static_cast<size_t>(a)];
        const int64_t inner = plm::product(Shape(dims_.begin() + a + 1, dims_.end()));
        const int64_t outer = (e_ - s_) * plm::product(Shape(dims_.begin() + 1, dims_.begin() + a));
        const int64_t line = n * inner * esize_, step = inner * esize_;
        for (int64_t o = 0; o < outer; ++o) {
            const char *xl = x + o * line;
            char *yl = y + o * line;
            if (b.n - b.hi > b.lo)
                combine_row(e, (b.n - b.hi - b.lo) * inner, b.mid, p.scale, acc,
                            [&](int off) { return xl + (b.lo + off) * step; }, yl + b.lo * step);
            for (int64_t i = 0; i < n; i = (i + 1 == b.lo ? n - b.hi : i + 1))
                combine_row(e, inner, b.row(i), p.scale, acc, [&](int off) { return xl + (i + off) * step; },
                            yl + i * step);
        }
    }

    Shape dims_;
    std::vector<AxisPart> parts_;
    int64_t esize_;
    int64_t row_len_ = 0, s_ = 0, e_ = 0;  // this rank's rows [s_, e_) of axis 0, row_len_ elements each
    std::unique_ptr<comm::AlltoallvPlan> plan_;
    int64_t before_ = 0, after_ = 0;             // rows received ahead of and past this block
};

struct Model {
    DType dt = DType::f64;
    Shape dims;
    int64_t local_rows = -1;
};

Model check_model(comm::Agreement &ag, const StencilModel &s)
{
    Model m;
    ag.check([&] {
        m.dt = from_public(s.dtype);
        PLM_REQUIRE(s.ndim >= 1 && s.dims, PLM_ERR_INVALID_ARG, "the model needs ndim >= 1 and dims (ndim = %d)", s.ndim);
        m.dims.assign(s.dims, s.dims + s.ndim);
        for (int64_t d : m.dims) PLM_REQUIRE(d >= 1, PLM_ERR_INVALID_ARG, "model dimensions must be >= 1 (got %lld)",
                                             static_cast<long long>(d));
        // The model's bytes bound every buffer the operator makes (ghost rows are model rows).
        checked_bytes(checked_product(m.dims, "the model's element count"), m.dt, "the model in bytes");
        PLM_REQUIRE(s.local_rows == -1 || (s.local_rows >= 0 && s.local_rows <= m.dims[0]), PLM_ERR_INVALID_ARG,
                    "local_rows %lld is not -1 or in 0..%lld", static_cast<long long>(s.local_rows),
                    static_cast<long long>(m.dims[0]));
        m.local_rows = s.local_rows;
    });
    ag.fold(static_cast<int64_t>(m.dt));
    ag.fold_all(m.dims);
    ag.fold(m.local_rows == -1);
    return m;
}

int check_axis(comm::Agreement &ag, const Model &m, int axis)
{
    int a = 0;
    ag.check([&] { a = normalize_axis(axis, static_cast<int>(m.dims.size())); });
    ag.fold(a);
    return a;
}

double check_factor(comm::Agreement &ag, double sampling, int order, double weight)
{
    double f = 0;
    ag.check([&] {
        PLM_REQUIRE(std::isfinite(sampling) && sampling != 0, PLM_ERR_INVALID_ARG,
                    "sampling must be finite and non-zero (got %g)", sampling);
        PLM_REQUIRE(std::isfinite(weight), PLM_ERR_INVALID_ARG, "weights must be finite (got %g)", weight);
        f = weight / std::pow(sampling, order);
    });
    ag.fold_double(f);
    return f;
}

void check_kind(comm::Agreement &ag, int kind, int order, bool edge)
{
    ag.check([&] {
        PLM_REQUIRE(kind >= PLM_DERIV_FORWARD && kind <= PLM_DERIV_CENTERED, PLM_ERR_INVALID_ARG,
                    "unknown derivative kind %d", kind);
        PLM_REQUIRE(kind != PLM_DERIV_CENTERED || order == 3 || order == 5, PLM_ERR_INVALID_ARG,
                    "centered derivatives have order 3 or 5 (got %d)", order);
    });
    ag.fold(kind);
    ag.fold(kind == PLM_DERIV_CENTERED ? order : 3);
    ag.fold(edge);
}

// Every rank's rows along axis 0: the default split, or the ones gathered by the agreement
// (lane from add_rows). The same on every rank: all refuse a bad sum alike.
std::vector<int64_t> model_rows(const comm::Agreement &ag, const Model &m, size_t lane)
{
    const int P = ag.comm().size();
    std::vector<int64_t> rows;
    for (int r = 0; r < P; ++r) rows.push_back(m.local_rows == -1 ? split_count(m.dims[0], P, r) : ag.gathered(lane, r));
    const int64_t total = checked_sum(rows, "local_rows summed over the ranks", PLM_ERR_SIZE_MISMATCH);
    PLM_REQUIRE(total == m.dims[0], PLM_ERR_SIZE_MISMATCH, "local_rows sum to %lld over the ranks, dims[0] is %lld",
                static_cast<long long>(total), static_cast<long long>(m.dims[0]));
    return rows;
}

// The model layout: a 1-D SCATTER of whole rows.
ArrayLayout::Ptr model_layout(const CommPtr &c, const Model &m, const std::vector<int64_t> &rows)
{
    const int64_t row_len = plm::product(Shape(m.dims.begin() + 1, m.dims.end()));
    std::vector<int64_t> sizes;
    for (int64_t v : rows) sizes.push_back(v * row_len);
    return vector_layout(c, sizes, PLM_PARTITION_SCATTER, {});
}

// One stencil operator per entry of members (each a set of axis parts) on one model layout,
// made after ag ran; a stacked vstack of them when stack. Agreed a second time: the objects and
// their plans are made then.
Operator::Ptr build(comm::Agreement &ag, const CommPtr &c, const Model &m, size_t rows_lane,
                    std::vector<std::vector<AxisPart>> members, bool stack)
{
    return comm::finish_collective(*c, "stencil operator", {}, [&]() -> Operator::Ptr {
        const std::vector<int64_t> rows = model_rows(ag, m, rows_lane);
        ArrayLayout::Ptr l = model_layout(c, m, rows);
        std::vector<Operator::Ptr> ops;
        for (std::vector<AxisPart> &parts : members)
            ops.push_back(std::make_shared<Stencil>(m.dt, l, m.dims, rows, std::move(parts)));
        return stack ? stacked_vstack(std::move(ops)) : ops.front();
    });
}

// This rank's rows through the agreement, when they are given (not the default split).
// (Always P lanes: the words of an agreement must not depend on the arguments.)
size_t add_rows(comm::Agreement &ag, const Model &m) { return ag.add_gather(m.local_rows); }

}  // namespace

Operator::Ptr first_derivative(comm::Agreement &ag, const CommPtr &c, const StencilModel &s, int axis, double sampling,
                               int kind, int order, bool edge)
{
    const Model m = check_model(ag, s);
    const int a = check_axis(ag, m, axis);
    check_kind(ag, kind, order, edge);
    const double f = check_factor(ag, sampling, 1, 1.0);
    std::vector<std::vector<AxisPart>> members;
    ag.check([&] { members.push_back({first_part(a, m.dims[static_cast<size_t>(a)], kind, order, edge, f)}); });
    const size_t rows = add_rows(ag, m);
    ag.run();
    return build(ag, c, m, rows, std::move(members), false);
}

Operator::Ptr second_derivative(comm::Agreement &ag, const CommPtr &c, const StencilModel &s, int axis,
                                double sampling, int kind, bool edge)
{
    const Model m = check_model(ag, s);
    const int a = check_axis(ag, m, axis);
    check_kind(ag, kind, 3, edge);
    const double f = check_factor(ag, sampling, 2, 1.0);
    std::vector<std::vector<AxisPart>> members;
    ag.check([&] { members.push_back({second_part(a, m.dims[static_cast<size_t>(a)], kind, edge, f)}); });
    const size_t rows = add_rows(ag, m);
    ag.run();
    return build(ag, c, m, rows, std::move(members), false);
}

Operator::Ptr laplacian(comm::Agreement &ag, const CommPtr &c, const StencilModel &s, const std::vector<int> &axes,
                        const std::vector<double> &weights, const std::vector<double> &sampling, int kind, bool edge)
{
    const Model m = check_model(ag, s);
    check_kind(ag, kind, 3, edge);
    ag.check([&] {
        PLM_REQUIRE(!axes.empty() && weights.size() == axes.size() && sampling.size() == axes.size(),
                    PLM_ERR_INVALID_ARG, "the Laplacian needs naxes >= 1 axes, weights and samplings");
    });
    ag.fold(static_cast<int64_t>(axes.size()));
    std::vector<AxisPart> parts;
    std::vector<int> seen;
    for (size_t k = 0; k < axes.size() && ag.ok(); ++k) {
        const int a = check_axis(ag, m, axes[k]);
        const double f = check_factor(ag, sampling[k], 2, weights[k]);
        ag.check([&] {
            PLM_REQUIRE(std::find(seen.begin(), seen.end(), a) == seen.end(), PLM_ERR_INVALID_ARG,
                        "axis %d appears twice in the Laplacian's axes", a);
            seen.push_back(a);
            parts.push_back(second_part(a, m.dims[static_cast<size_t>(a)], kind, edge, f));
        });
    }
    std::vector<std::vector<AxisPart>> members;  // one operator of every axis' part
    ag.check([&] { members.push_back(std::move(parts)); });
    const size_t rows = add_rows(ag, m);
    ag.run();
    return build(ag, c, m, rows, std::move(members), false);
}

Operator::Ptr gradient(comm::Agreement &ag, const CommPtr &c, const StencilModel &s, const std::vector<double> &sampling,
                       int kind, bool edge)
{
    const Model m = check_model(ag, s);
    check_kind(ag, kind, 3, edge);
    ag.check([&] {
        PLM_REQUIRE(sampling.empty() || sampling.size() == m.dims.size(), PLM_ERR_INVALID_ARG,
                    "the gradient takes one sampling per axis");
    });
    std::vector<std::vector<AxisPart>> members;  // one first derivative per axis, on one domain
    for (size_t a = 0; a < m.dims.size() && ag.ok(); ++a) {
        const double f = check_factor(ag, sampling.empty() ? 1.0 : sampling[a], 1, 1.0);
        ag.check([&] { members.push_back({first_part(static_cast<int>(a), m.dims[a], kind, 3, edge, f)}); });
    }
    const size_t rows = add_rows(ag, m);
    ag.run();
    return build(ag, c, m, rows, std::move(members), true);
}

}  // namespace plm::ops
