// Finite differences on an N-D model split along axis 0 in whole rows: FirstDerivative,
// SecondDerivative, Laplacian and Gradient. The difference matrix of one axis is banded:
// explicit rows near the ends, the same terms in between; the adjoint is its exact transpose,
// each written as PyLops' numpy expressions evaluate it (term order, divisions, the sampling
// divided last), so results are PyLops' bit for bit. Each operator turns its bands into the fused stencil kernel's plans
// (kernels::stencil, host and device) when it is made. Along axis 0 the rows a rank needs
// from others arrive through one persistent exchange, which runs while the rows that need
// none are computed.
#include <algorithm>
#include <cmath>

#include "kernels/element.hpp"
#include "ops/operator.hpp"

namespace plm::ops {

namespace {

using kernels::Band;
using kernels::BandRow;

// A term of a row: input index minus output index, weight, divisor (1: none).
struct Term {
    int off;
    double w;
    int d = 1;
};

void push(BandRow &r, const Term &t)
{
    PLM_REQUIRE(r.nterms < kernels::kMaxTerms, PLM_ERR_INTERNAL, "a stencil row of more than %d terms",
                kernels::kMaxTerms);
    r.off[r.nterms] = t.off;
    r.w[r.nterms] = t.w;
    r.d[r.nterms++] = static_cast<unsigned char>(t.d);
}

BandRow row(std::initializer_list<Term> terms)
{
    BandRow r;
    for (const Term &t : terms) push(r, t);
    return r;
}

// ---- PyLops' expressions -------------------------------------------------------------------
// The rows follow PyLops' numpy expressions term for term (pylops/basicoperators/
// firstderivative.py, secondderivative.py; PyLops-MPI's operators evaluate the same), so the
// kernel's results are PyLops' bit for bit: the terms in the expression's order, x / 12.0 as a
// division, the sampling divided at the end. One liberty: 0.5 * (a - b) is summed as
// 0.5 a - 0.5 b, which differs only where halving leaves the normal range.

// The forward (matvec) rows of an axis of n points. Where PyLops assigns rows in turn, the
// later assignment wins here too.
BandRow first_row(int kind, int order, bool edge, int64_t n, int64_t i)
{
    if (kind == PLM_DERIV_FORWARD) return i < n - 1 ? row({{1, 1}, {0, -1}}) : BandRow{};  // x[i+1] - x[i]
    if (kind == PLM_DERIV_BACKWARD) return i >= 1 ? row({{0, 1}, {-1, -1}}) : BandRow{};   // x[i] - x[i-1]
    if (edge && i == n - 1) return row({{0, 1}, {-1, -1}});  // x[-1] - x[-2]
    if (order == 3) {
        if (edge && i == 0) return row({{1, 1}, {0, -1}});                          // x[1] - x[0]
        return i >= 1 && i <= n - 2 ? row({{1, 0.5}, {-1, -0.5}}) : BandRow{};      // 0.5 (x[i+1] - x[i-1])
    }
    if (edge && (i == n - 2 || i == 1)) return row({{1, 0.5}, {-1, -0.5}});
    if (edge && i == 0) return row({{1, 1}, {0, -1}});
    // x[i-2] / 12 - 2 x[i-1] / 3 + 2 x[i+1] / 3 - x[i+2] / 12
    return i >= 2 && i <= n - 3 ? row({{-2, 1, 12}, {-1, -2, 3}, {1, 2, 3}, {2, -1, 12}}) : BandRow{};
}

BandRow second_row(int kind, bool edge, int64_t n, int64_t i)
{
    // x[i+2] - 2 x[i+1] + x[i], x[i] - 2 x[i-1] + x[i-2], x[i+1] - 2 x[i] + x[i-1]
    if (kind == PLM_DERIV_FORWARD) return i <= n - 3 ? row({{2, 1}, {1, -2}, {0, 1}}) : BandRow{};
    if (kind == PLM_DERIV_BACKWARD) return i >= 2 ? row({{0, 1}, {-1, -2}, {-2, 1}}) : BandRow{};
    if (edge && i == n - 1) return row({{-2, 1}, {-1, -2}, {0, 1}});  // x[-3] - 2 x[-2] + x[-1]
    if (edge && i == 0) return row({{0, 1}, {1, -2}, {2, 1}});        // x[0] - 2 x[1] + x[2]
    return i >= 1 && i <= n - 2 ? row({{1, 1}, {0, -2}, {-1, 1}}) : BandRow{};
}

// The adjoint (rmatvec) rows: PyLops zeroes y, then adds slices of x in turn
// (y[:-1] += -x[:-1]; y[1:] += x[:-1]; ...), so row j sums, in statement order, the terms of
// the statements whose slice holds j. A statement adds one term to each j in [lo, hi] (ends
// counted from the axis' end when negative, as numpy's slices), or, grouped, the sum of its
// terms at one j (y[0] -= x[0] + 0.5 * x[1]).
struct Stmt {
    int64_t lo, hi;  // j from lo to hi; negative: from n
    std::vector<Term> terms;
    bool group = false, neg = false;
};

std::vector<Stmt> first_adjoint(int kind, int order, bool edge)
{
    if (kind == PLM_DERIV_FORWARD) return {{0, -2, {{0, -1}}}, {1, -1, {{-1, 1}}}};
    if (kind == PLM_DERIV_BACKWARD) return {{0, -2, {{1, -1}}}, {1, -1, {{0, 1}}}};
    std::vector<Stmt> s;
    if (order == 3) {
        s = {{0, -3, {{1, -0.5}}}, {2, -1, {{-1, 0.5}}}};
        if (edge) s.insert(s.end(), {{0, 0, {{0, -1}}}, {1, 1, {{-1, 1}}}, {-2, -2, {{1, -1}}}, {-1, -1, {{0, 1}}}});
        return s;
    }
    s = {{0, -5, {{2, 1, 12}}}, {1, -4, {{1, -2, 3}}}, {3, -2, {{-1, 2, 3}}}, {4, -1, {{-2, -1, 12}}}};
    if (edge)
        s.insert(s.end(), {{0, 0, {{0, 1}, {1, 0.5}}, true, true},
                           {1, 1, {{-1, 1}}},
                           {2, 2, {{-1, 0.5}}},
                           {-3, -3, {{1, -0.5}}},
                           {-2, -2, {{1, -1}}},
                           {-1, -1, {{-1, 0.5}, {0, 1}}, true, false}});
    return s;
}

std::vector<Stmt> second_adjoint(int kind, bool edge)
{
    if (kind == PLM_DERIV_FORWARD) return {{0, -3, {{0, 1}}}, {1, -2, {{-1, -2}}}, {2, -1, {{-2, 1}}}};
    if (kind == PLM_DERIV_BACKWARD) return {{0, -3, {{2, 1}}}, {1, -2, {{1, -2}}}, {2, -1, {{0, 1}}}};
    std::vector<Stmt> s = {{0, -3, {{1, 1}}}, {1, -2, {{0, -2}}}, {2, -1, {{-1, 1}}}};
    if (edge)
        s.insert(s.end(), {{0, 0, {{0, 1}}},
                           {1, 1, {{-1, -2}}},
                           {2, 2, {{-2, 1}}},
                           {-3, -3, {{2, 1}}},
                           {-2, -2, {{1, -2}}},
                           {-1, -1, {{0, 1}}}});
    return s;
}

// Row j of the statements on an axis of n points.
BandRow stmt_row(const std::vector<Stmt> &stmts, int64_t n, int64_t j)
{
    BandRow r;
    for (const Stmt &st : stmts) {
        const int64_t lo = st.lo < 0 ? n + st.lo : st.lo, hi = st.hi < 0 ? n + st.hi : st.hi;
        if (j < lo || j > hi) continue;
        if (st.group) {
            PLM_REQUIRE(r.group >= r.nterms, PLM_ERR_INTERNAL, "a stencil row with two groups");
            r.group = static_cast<unsigned char>(r.nterms);
            r.gneg = st.neg;
        }
        for (const Term &t : st.terms) push(r, t);
        if (st.group) r.gend = static_cast<unsigned char>(r.nterms);
    }
    return r;
}

// The largest |off| of a band.
int reach(const Band &b)
{
    int r = 0;
    for (int e = -1; e < b.lo + b.hi; ++e) {
        const BandRow &row = e < 0 ? b.mid : b.ends[e];
        for (int t = 0; t < row.nterms; ++t) r = std::max(r, std::abs(row.off[t]));
    }
    return r;
}

constexpr int64_t kEndRows = 3;     // forward rows at each end of an axis that may differ from the middle
constexpr int64_t kEndRowsAdj = 5;  // adjoint rows likewise (PyLops' slices start up to 4 in)
constexpr int64_t kFar = 1 << 20;   // an axis long enough for its middle row

// The banded matrix of one axis of n points (the kernel's Band): the rows within `ends` of
// either end listed (all of them on a short axis), checking that every term stays on the axis.
template <typename RowAt> Band make_band(int64_t n, int64_t ends, const BandRow &mid, RowAt row_at)
{
    const int64_t lo = 2 * ends >= n ? n : ends, hi = 2 * ends >= n ? 0 : ends;
    PLM_REQUIRE(lo + hi <= kernels::kMaxEnds, PLM_ERR_INTERNAL, "a band of %lld end rows",
                static_cast<long long>(lo + hi));
    Band b;
    b.n = n;
    b.lo = static_cast<int>(lo);
    b.hi = static_cast<int>(hi);
    b.mid = mid;
    for (int64_t e = 0; e < lo + hi; ++e) {
        const int64_t i = e < lo ? e : n - hi + (e - lo);
        const BandRow &r = b.ends[e] = row_at(i);
        for (int t = 0; t < r.nterms; ++t)
            PLM_REQUIRE(i + r.off[t] >= 0 && i + r.off[t] < n, PLM_ERR_INVALID_ARG,
                        "an axis of %lld points is too short for this stencil", static_cast<long long>(n));
    }
    return b;
}

// The exact transpose of b: row j lists the entries of column j (in row order).
Band transpose(const Band &b)
{
    BandRow mid;
    for (int t = b.mid.nterms - 1; t >= 0; --t) push(mid, {-b.mid.off[t], b.mid.w[t], b.mid.d[t]});
    const int64_t R = reach(b);
    return make_band(b.n, std::max(b.lo, b.hi) + R, mid, [&](int64_t j) {
        BandRow r;
        for (int64_t i = std::max<int64_t>(0, j - R); i <= std::min(b.n - 1, j + R); ++i) {
            const BandRow &row = kernels::element::band_row(b, i);
            for (int t = 0; t < row.nterms; ++t)
                if (i + row.off[t] == j) push(r, {static_cast<int>(i - j), row.w[t], row.d[t]});
        }
        return r;
    });
}

// Whether a is the matrix transpose of b: every entry, the sum of its terms' w / d (a group
// subtracted with its sign). The rows past 16 of either end repeat the middle: one of them
// stands for all.
bool is_transpose(const Band &a, const Band &b)
{
    const int64_t n = a.n;
    for (int64_t j = 0; j < n; ++j) {
        if (j == 17 && n > 34) j = n - 17;
        const BandRow &ra = kernels::element::band_row(a, j);
        std::vector<std::pair<int64_t, double>> col;  // entries of column j of b: (row i, value)
        for (int64_t i = std::max<int64_t>(0, j - 8); i <= std::min(n - 1, j + 8); ++i) {
            const BandRow &rb = kernels::element::band_row(b, i);
            double v = 0;
            for (int t = 0; t < rb.nterms; ++t)
                if (i + rb.off[t] == j) v += rb.w[t] / rb.d[t];
            if (v != 0) col.push_back({i, v});
        }
        std::vector<std::pair<int64_t, double>> row;
        for (int t = 0; t < ra.nterms; ++t) {
            const double sign = t >= ra.group && t < ra.gend && ra.gneg ? -1 : 1;
            const int64_t i = j + ra.off[t];
            auto it = std::find_if(row.begin(), row.end(), [&](const auto &e) { return e.first == i; });
            if (it == row.end()) row.push_back({i, sign * ra.w[t] / ra.d[t]});
            else it->second += sign * ra.w[t] / ra.d[t];
        }
        row.erase(std::remove_if(row.begin(), row.end(), [](const auto &e) { return std::abs(e.second) < 1e-14; }),
                  row.end());
        if (row.size() != col.size()) return false;
        for (const auto &e : row) {
            auto it = std::find_if(col.begin(), col.end(), [&](const auto &c) { return c.first == e.first; });
            if (it == col.end() || std::abs(it->second - e.second) > 1e-14) return false;
        }
    }
    return true;
}

// PyLops' adjoint rows, or - on the short axes where PyLops' statements count an end row
// twice (the centered 5-point edge rows on 3 points: its rmatvec is not its matvec's adjoint
// there) - the exact transpose.
Band adjoint_band(const Band &fwd, const std::vector<Stmt> &st, int64_t n)
{
    Band a = make_band(n, kEndRowsAdj, stmt_row(st, kFar, kFar / 2), [&](int64_t j) { return stmt_row(st, n, j); });
    return is_transpose(a, fwd) ? a : transpose(fwd);
}

// One axis of an operator: its forward and adjoint bands and PyLops' factors (the sums
// divided by sampling^order, then multiplied by the weight).
struct AxisPart {
    int axis;
    Band fwd, adj;
    double div, weight;
};

AxisPart first_part(int axis, int64_t n, int kind, int order, bool edge, double div)
{
    Band b = make_band(n, kEndRows, first_row(kind, order, edge, kFar, kFar / 2),
                       [&](int64_t i) { return first_row(kind, order, edge, n, i); });
    return {axis, b, adjoint_band(b, first_adjoint(kind, order, edge), n), div, 1.0};
}

AxisPart second_part(int axis, int64_t n, int kind, bool edge, double div, double weight)
{
    Band b = make_band(n, kEndRows, second_row(kind, edge, kFar, kFar / 2),
                       [&](int64_t i) { return second_row(kind, edge, n, i); });
    return {axis, b, adjoint_band(b, second_adjoint(kind, edge), n), div, weight};
}

// The kernel's plan of one direction on this rank's block, the axes in the parts' order (the
// first writes y, the others add to it, as PyLops sums the Laplacian's terms). Axes without a stencil next to each other
// (axis 0 excepted) become one dimension of the plan, the same memory, so a model of any rank
// fits the plan's PLM_MAX_NDIM dimensions unless a Laplacian has too many axes for that.
kernels::StencilPlan make_plan(const Shape &dims, const std::vector<AxisPart> &parts, int64_t row0, int64_t nrows,
                               int64_t before, int64_t after, bool adjoint)
{
    const size_t nd = dims.size();
    std::vector<bool> has(nd, false);
    for (const AxisPart &p : parts) has[static_cast<size_t>(p.axis)] = true;
    std::vector<int> dim_of(nd, 0);  // the plan's dimension of each model axis
    kernels::StencilPlan p;
    p.dims[0] = dims[0];
    int k = 0;
    for (size_t a = 1; a < nd; ++a) {
        if (a == 1 || has[a] || has[a - 1]) {
            PLM_REQUIRE(++k < PLM_MAX_NDIM, PLM_ERR_INVALID_ARG,
                        "a stencil on %d of the model's %zu axes, too many apart for the %d dimensions of a plan",
                        static_cast<int>(parts.size()), nd, PLM_MAX_NDIM);
            p.dims[k] = 1;
        }
        p.dims[k] *= dims[a];
        dim_of[a] = k;
    }
    p.ndim = k + 1;
    p.row0 = row0;
    p.nrows = nrows;
    p.before = before;
    p.after = after;
    for (const AxisPart &part : parts) {  // in the caller's order: PyLops sums the axes so
        kernels::StencilAxis &ax = p.axes[p.naxes++];
        ax.axis = dim_of[static_cast<size_t>(part.axis)];
        ax.div = part.div;
        ax.weight = part.weight;
        ax.band = adjoint ? part.adj : part.fwd;
    }
    kernels::check_plan(p);
    return p;
}

// The rows received along axis 0 in one apply: `before` rows ahead of the block, then
// `after` rows past it.
struct GhostWork : Work {
    Buffer ghost;
};

// One operator: the kernel's plans for both directions, made here, and the exchange of the
// rows along axis 0. An apply starts the exchange, computes the rows that read no ghost,
// waits, then computes the rows next to the block's ends: three kernel calls, no allocation.
class Stencil final : public Operator {
public:
    Stencil(DType dt, ArrayLayout::Ptr model, const Shape &dims, const std::vector<int64_t> &rows,
            const std::vector<AxisPart> &parts)
        : Operator(dt, model, model)
    {
        const comm::Communicator &c = model->comm();
        const size_t me = static_cast<size_t>(c.rank());
        row_len_ = plm::product(Shape(dims.begin() + 1, dims.end()));
        int64_t row0 = 0;
        for (size_t q = 0; q < me; ++q) row0 += rows[q];
        int r = 0;
        for (const AxisPart &p : parts)
            if (p.axis == 0) r = std::max(reach(p.fwd), reach(p.adj));
        if (r > 0 && c.size() > 1) {  // rank-independent: every rank makes the exchange or none
            GhostCounts g = ghost_counts(rows, c.rank(), row_len_, r);
            before_ = g.before;
            after_ = g.after;
            staged_ = (g.before + g.after) * row_len_;
            for (int64_t v : g.sc) staged_ += v;
            plan_ = std::make_unique<comm::AlltoallvPlan>(c, dt, std::move(g.sc), std::move(g.sd), std::move(g.rc),
                                                          std::move(g.rd));
        }
        for (bool adjoint : {false, true}) {
            Direction &d = dir_[adjoint];
            d.plan = make_plan(dims, parts, row0, rows[me], before_, after_, adjoint);
            kernels::interior_rows(d.plan, &d.r0, &d.r1);
        }
    }

    WorkPtr make_work(const Exec &e) const override
    {
        if (!plan_) return nullptr;
        if (e.space == Space::device) use_device(e.device);
        auto w = std::make_unique<GhostWork>();
        w->ghost = Buffer::allocate(e.space, checked_bytes(checked_mul(before_ + after_, row_len_, "the ghost rows"),
                                                           dtype_, "the ghost rows in bytes"));
        reserve_staging(e, staged_);
        return w;
    }

    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        const Exec e = x.exec();
        const Direction &d = dir_[adjoint];
        const void *in = x.data();
        void *out = y.data();
        char *ghost = plan_ ? static_cast<char *>(static_cast<GhostWork *>(w)->ghost.data()) : nullptr;
        const char *after = ghost ? ghost + before_ * row_len_ * static_cast<int64_t>(dtype_size(dtype_)) : nullptr;
        comm::Request r;
        if (plan_) r = plan_->start(e, in, ghost);
        kernels::stencil(e, dtype_, d.plan, in, nullptr, nullptr, d.r0, d.r1, false, out);
        r.wait();
        kernels::stencil(e, dtype_, d.plan, in, ghost, after, 0, d.r0, false, out);
        kernels::stencil(e, dtype_, d.plan, in, ghost, after, d.r1, d.plan.nrows, false, out);
    }

private:
    struct Direction {
        kernels::StencilPlan plan;
        int64_t r0 = 0, r1 = 0;  // the rows that read no ghost row
    };
    Direction dir_[2];  // forward, adjoint
    int64_t row_len_ = 0;  // elements per row of axis 0
    std::unique_ptr<comm::AlltoallvPlan> plan_;
    int64_t before_ = 0, after_ = 0;  // rows received ahead of and past this block
    int64_t staged_ = 0;              // elements a host-staged exchange stages (sends and ghosts)
};

// PyLops' divisor sampling^order (sampling ** 2 in Python: the rounded square), checked
// into ag and folded.
double check_sampling(comm::Agreement &ag, double sampling, int order)
{
    double d = 1;
    ag.check([&] {
        PLM_REQUIRE(std::isfinite(sampling) && sampling != 0, PLM_ERR_INVALID_ARG,
                    "sampling must be finite and non-zero (got %g)", sampling);
        d = order == 1 ? sampling : sampling * sampling;
        PLM_REQUIRE(std::isfinite(d) && d != 0, PLM_ERR_INVALID_ARG, "sampling %g squared is not finite and non-zero",
                    sampling);
    });
    ag.fold_double(d);
    return d;
}

double check_weight(comm::Agreement &ag, double weight)
{
    ag.check([&] { PLM_REQUIRE(std::isfinite(weight), PLM_ERR_INVALID_ARG, "weights must be finite (got %g)", weight); });
    ag.fold_double(weight);
    return weight;
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

// One stencil operator per entry of members (each a set of axis parts) on one model layout,
// made after ag ran; a stacked vstack of them when stack. Agreed a second time: the objects and
// their plans are made then.
Operator::Ptr build(comm::Agreement &ag, const CommPtr &c, const RowModel &m, size_t rows_lane,
                    std::vector<std::vector<AxisPart>> members, bool stack)
{
    return comm::finish_collective(*c, "stencil operator", {}, [&]() -> Operator::Ptr {
        const std::vector<int64_t> rows = model_rows(ag, m, rows_lane);
        ArrayLayout::Ptr l = model_layout(c, m, rows);
        std::vector<Operator::Ptr> ops;
        for (const std::vector<AxisPart> &parts : members)
            ops.push_back(std::make_shared<Stencil>(m.dt, l, m.dims, rows, parts));
        return stack ? stacked_vstack(std::move(ops)) : ops.front();
    });
}

}  // namespace

// ---- models split along axis 0 in whole rows (shared with ops/signal/nonstat.cpp) ----

// What a rank receives along axis 0: `before` rows ahead of its block and `after` rows past
// it (as far as the stencil reaches), from whichever ranks hold them; and what it sends.
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

RowModel check_model(comm::Agreement &ag, const StencilModel &s)
{
    RowModel m;
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

int check_axis(comm::Agreement &ag, const RowModel &m, int axis)
{
    int a = 0;
    ag.check([&] { a = normalize_axis(axis, static_cast<int>(m.dims.size())); });
    ag.fold(a);
    return a;
}

// Every rank's rows along axis 0: the default split, or the ones gathered by the agreement
// (lane from add_rows). The same on every rank: all refuse a bad sum alike.
std::vector<int64_t> model_rows(const comm::Agreement &ag, const RowModel &m, size_t lane)
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
ArrayLayout::Ptr model_layout(const CommPtr &c, const RowModel &m, const std::vector<int64_t> &rows)
{
    const int64_t row_len = plm::product(Shape(m.dims.begin() + 1, m.dims.end()));
    std::vector<int64_t> sizes;
    for (int64_t v : rows) sizes.push_back(v * row_len);
    return vector_layout(c, sizes, PLM_PARTITION_SCATTER, {});
}

// This rank's rows through the agreement, when they are given (not the default split).
// (Always P lanes: the words of an agreement must not depend on the arguments.)
size_t add_rows(comm::Agreement &ag, const RowModel &m) { return ag.add_gather(m.local_rows); }

// ---- the stencil operators ----

Operator::Ptr first_derivative(comm::Agreement &ag, const CommPtr &c, const StencilModel &s, int axis, double sampling,
                               int kind, int order, bool edge)
{
    const RowModel m = check_model(ag, s);
    const int a = check_axis(ag, m, axis);
    check_kind(ag, kind, order, edge);
    const double f = check_sampling(ag, sampling, 1);
    std::vector<std::vector<AxisPart>> members;
    ag.check([&] { members.push_back({first_part(a, m.dims[static_cast<size_t>(a)], kind, order, edge, f)}); });
    const size_t rows = add_rows(ag, m);
    ag.run();
    return build(ag, c, m, rows, std::move(members), false);
}

Operator::Ptr second_derivative(comm::Agreement &ag, const CommPtr &c, const StencilModel &s, int axis,
                                double sampling, int kind, bool edge)
{
    const RowModel m = check_model(ag, s);
    const int a = check_axis(ag, m, axis);
    check_kind(ag, kind, 3, edge);
    const double f = check_sampling(ag, sampling, 2);
    std::vector<std::vector<AxisPart>> members;
    ag.check([&] { members.push_back({second_part(a, m.dims[static_cast<size_t>(a)], kind, edge, f, 1.0)}); });
    const size_t rows = add_rows(ag, m);
    ag.run();
    return build(ag, c, m, rows, std::move(members), false);
}

Operator::Ptr laplacian(comm::Agreement &ag, const CommPtr &c, const StencilModel &s, const std::vector<int> &axes,
                        const std::vector<double> &weights, const std::vector<double> &sampling, int kind, bool edge)
{
    const RowModel m = check_model(ag, s);
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
        const double f = check_sampling(ag, sampling[k], 2), w = check_weight(ag, weights[k]);
        ag.check([&] {
            PLM_REQUIRE(std::find(seen.begin(), seen.end(), a) == seen.end(), PLM_ERR_INVALID_ARG,
                        "axis %d appears twice in the Laplacian's axes", a);
            seen.push_back(a);
            parts.push_back(second_part(a, m.dims[static_cast<size_t>(a)], kind, edge, f, w));
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
    const RowModel m = check_model(ag, s);
    check_kind(ag, kind, 3, edge);
    ag.check([&] {
        PLM_REQUIRE(sampling.empty() || sampling.size() == m.dims.size(), PLM_ERR_INVALID_ARG,
                    "the gradient takes one sampling per axis");
    });
    std::vector<std::vector<AxisPart>> members;  // one first derivative per axis, on one domain
    for (size_t a = 0; a < m.dims.size() && ag.ok(); ++a) {
        const double f = check_sampling(ag, sampling.empty() ? 1.0 : sampling[a], 1);
        ag.check([&] { members.push_back({first_part(static_cast<int>(a), m.dims[a], kind, 3, edge, f)}); });
    }
    const size_t rows = add_rows(ag, m);
    ag.run();
    return build(ag, c, m, rows, std::move(members), true);
}

}  // namespace plm::ops
