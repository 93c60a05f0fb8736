#include "solvers/solvers.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

namespace plm::solvers {

namespace {

// A solver vector: one array, or the members of a stack (the parts of an operator's domain
// or range). Work vectors own their arrays.
struct Vec {
    std::vector<DistributedArray *> p;
    std::vector<DistributedArray::Ptr> own;
    const DistributedArray &front() const { return *p.front(); }
    ops::Operator::In in() const { return ops::Operator::In(p.begin(), p.end()); }
};

Vec on(const std::vector<ArrayLayout::Ptr> &layouts, DType dt)
{
    Vec v;
    for (const ArrayLayout::Ptr &l : layouts) {
        v.own.push_back(DistributedArray::create_from_layout(l, to_public(dt), PLM_MEMORY_HOST, nullptr));
        v.p.push_back(v.own.back().get());
    }
    return v;
}

Vec view(const Parts &a)
{
    Vec v;
    v.p = a;
    return v;
}

// y = a x + b y on the local blocks (real coefficients).
void axpby(double a, const Vec &x, double b, Vec &y)
{
    for (size_t i = 0; i < y.p.size(); ++i) {
        DistributedArray &yi = *y.p[i];
        const Scalar sa = make_scalar(yi.dtype(), a, 0, "solver"), sb = make_scalar(yi.dtype(), b, 0, "solver");
        kernels::axpby(yi.exec(), yi.dtype(), yi.local_size(), sa.data(), x.p[i]->data(), sb.data(), yi.data());
    }
}

void copy(const Vec &x, Vec &y)
{
    for (size_t i = 0; i < y.p.size(); ++i)
        kernels::copy(y.p[i]->exec(), y.p[i]->dtype(), y.p[i]->local_size(), x.p[i]->data(), y.p[i]->data());
}

// Solver vectors are host arrays (the C API stages device arrays to host twins).
void apply(const ops::Operator &op, const Vec &x, Vec &y, bool adjoint) { op.apply_parts(x.in(), y.p, adjoint); }

// Several reductions in one agreement: add them, run, then read each. A stack's dot product
// or 1-norm is the sum over its members (each over its own mask group).
class Dots {
public:
    explicit Dots(const Vec &any) : ag_(any.front().base(), "solver reductions") {}
    // Adds a^H b and returns its index.
    size_t add(const Vec &a, const Vec &b)
    {
        std::vector<std::pair<const DistributedArray *, size_t>> e;
        for (size_t i = 0; i < a.p.size(); ++i) e.emplace_back(a.p[i], a.p[i]->add_dot(ag_, b.p[i], true));
        dots_.push_back(std::move(e));
        return dots_.size() - 1;
    }
    std::complex<double> get(size_t i) const
    {
        std::complex<double> s = 0;
        for (const auto &[a, lane] : dots_[i]) {
            double re = 0, im = 0;
            a->read_dot(ag_, lane, &re, &im);
            s += std::complex<double>(re, im);
        }
        return s;
    }
    double norm2(size_t i) const { return get(i).real(); }  // a^H a
    // Adds the 1-norm of a and returns its index among the norms.
    size_t add_norm1(const Vec &a)
    {
        std::vector<std::pair<const DistributedArray *, DistributedArray::NormLanes>> e;
        for (const DistributedArray *m : a.p) e.emplace_back(m, m->add_norm(ag_, 1.0));
        norms_.push_back(std::move(e));
        return norms_.size() - 1;
    }
    double norm1(size_t i) const
    {
        double s = 0;
        for (const auto &[a, lanes] : norms_[i]) s += a->read_norm(ag_, lanes);
        return s;
    }
    // Adds a flag that is true after run() when it was true on any rank.
    size_t add_flag(bool v)
    {
        const size_t lane = ag_.add_lanes(1, comm::LaneOp::max);
        ag_.set(lane, v ? 1 : 0);
        flags_.push_back(lane);
        return flags_.size() - 1;
    }
    bool flag(size_t i) const { return ag_.get(flags_[i]) != 0; }
    void add_error(const std::optional<Error> &e) { ag_.add_error(e); }
    void run() { ag_.run(); }

private:
    comm::Agreement ag_;
    std::vector<std::vector<std::pair<const DistributedArray *, size_t>>> dots_;
    std::vector<std::vector<std::pair<const DistributedArray *, DistributedArray::NormLanes>>> norms_;
    std::vector<size_t> flags_;
};

// The iteration table of show (rank 0, like PyLops: the first 10 iterations, every 10th,
// and the last 10) and the user's stop callback, agreed over the ranks.
class Progress {
public:
    Progress(const Monitor &m, const Vec &x, const char *name, int64_t niter, double tol)
        : m_(m), x_(x), niter_(niter), print_(m.show && x.front().base().rank() == 0)
    {
        if (!print_) return;
        int64_t n = 0;
        for (const DistributedArray *a : x.p) n += product(a->layout().global);
        std::printf("%s\n", std::string(72, '-').c_str());
        std::printf("%s (pylopsmpi): %lld ranks, %lld unknowns, niter = %lld, tol = %g\n", name,
                    static_cast<long long>(x.front().base().size()), static_cast<long long>(n),
                    static_cast<long long>(niter), tol);
        std::printf("%s\n%8s %14s %14s %14s\n", std::string(72, '-').c_str(), "Itn", "x[0]", "r1norm", "r2norm");
    }
    ~Progress()
    {
        if (print_) std::printf("%s\n", std::string(72, '-').c_str());
    }
    // After iteration it (1-based): prints, then asks the callback. True: stop.
    bool after(int64_t it, double r1, double r2)
    {
        if (print_ && (it <= 10 || it % 10 == 0 || it > niter_ - 10)) {
            double x0 = 0;
            const DistributedArray &a = x_.front();
            if (a.local_size() > 0)
                dispatch_float(a.dtype(), [&](auto t) { x0 = std::real(static_cast<const decltype(t) *>(a.data())[0]); });
            std::printf("%8lld %14.6e %14.6e %14.6e\n", static_cast<long long>(it), x0, r1, r2);
        }
        if (!m_.stop) return false;
        bool mine = false;
        Dots d(x_);
        d.add_error(comm::capture([&] { mine = m_.stop(it, r2); }));  // a failure fails every rank
        const size_t f = d.add_flag(mine);
        d.run();
        return d.flag(f);
    }

private:
    const Monitor &m_;
    const Vec &x_;
    int64_t niter_;
    bool print_;
};

void require_solvable(const ops::Operator &op, const Parts &y, const Parts &x, int64_t niter)
{
    PLM_REQUIRE(niter >= 0, PLM_ERR_INVALID_ARG, "niter %lld is negative", static_cast<long long>(niter));
    PLM_REQUIRE(!op.is_local(), PLM_ERR_INVALID_ARG, "solvers need a distributed operator");
    op.check_parts(ops::Operator::In(x.begin(), x.end()), y, false);
}

bool square(const ops::Operator &op)
{
    const std::vector<ArrayLayout::Ptr> d = op.domain_parts(), r = op.range_parts();
    if (d.size() != r.size()) return false;
    for (size_t i = 0; i < d.size(); ++i)
        if (!d[i]->same_as(*r[i])) return false;
    return true;
}

}  // namespace

void cg(const ops::Operator &op, const Parts &yp, const Parts &xp, int64_t niter, double tol, Info &info,
        const Monitor &mon)
{
    require_solvable(op, yp, xp, niter);
    PLM_REQUIRE(square(op), PLM_ERR_SIZE_MISMATCH, "CG needs a square operator (domain == range)");
    const DType dt = op.dtype();
    const Vec y = view(yp);
    Vec x = view(xp), r = on(op.range_parts(), dt), c = on(op.domain_parts(), dt), opc = on(op.range_parts(), dt);
    info = Info{};
    apply(op, x, r, false);
    axpby(1, y, -1, r);  // r = y - Op x
    copy(r, c);
    Dots d0(x);
    d0.add(r, r);
    d0.run();
    double kold = d0.norm2(0);
    info.cost.push_back(std::sqrt(kold));
    Progress progress(mon, x, "CG", niter, tol);
    int64_t it = 0;
    while (it < niter && kold > tol) {
        apply(op, c, opc, false);
        Dots d1(x);
        d1.add(c, opc);
        d1.run();
        const double a = kold / std::abs(d1.get(0));
        axpby(a, c, 1, x);
        axpby(-a, opc, 1, r);
        Dots d2(x);
        d2.add(r, r);
        d2.run();
        const double knew = d2.norm2(0), b = knew / kold;
        axpby(1, r, b, c);  // c = r + b c
        kold = knew;
        ++it;
        info.cost.push_back(std::sqrt(kold));
        if (progress.after(it, kold, std::sqrt(kold))) break;
    }
    info.iterations = it;
    info.istop = kold <= tol ? 1 : 2;
    info.r1norm = kold;
    info.r2norm = std::sqrt(kold);
}

void cgls(const ops::Operator &op, const Parts &yp, const Parts &xp, int64_t niter, double damp, double tol,
          Info &info, const Monitor &mon)
{
    require_solvable(op, yp, xp, niter);
    const DType dt = op.dtype();
    const double d2 = damp * damp;
    const Vec y = view(yp);
    Vec x = view(xp), s = on(op.range_parts(), dt), q = on(op.range_parts(), dt), r = on(op.domain_parts(), dt),
        c = on(op.domain_parts(), dt);
    info = Info{};
    apply(op, x, s, false);
    axpby(1, y, -1, s);  // s = y - Op x
    apply(op, s, r, true);
    if (d2 != 0) axpby(-d2, x, 1, r);  // r = Op^H s - damp^2 x (PyLops: damp, unsquared)
    copy(r, c);
    apply(op, c, q, false);
    // ||x||^2 and ||c||^2 only matter with damping: without it they are not reduced.
    Dots d0(x);
    d0.add(r, r);
    d0.add(s, s);
    if (d2 != 0) d0.add(x, x);
    d0.run();
    double kold = d0.norm2(0), ss = d0.norm2(1), xx = d2 != 0 ? d0.norm2(2) : 0;
    info.cost.push_back(std::sqrt(ss));
    double r2 = std::sqrt(ss + d2 * xx);
    Progress progress(mon, x, "CGLS", niter, tol);
    int64_t it = 0;
    while (it < niter && kold > tol) {
        Dots d1(x);
        d1.add(q, q);
        if (d2 != 0) d1.add(c, c);
        d1.run();
        const double a = kold / (d1.norm2(0) + (d2 != 0 ? d2 * d1.norm2(1) : 0));
        axpby(a, c, 1, x);
        axpby(-a, q, 1, s);
        apply(op, s, r, true);
        if (d2 != 0) axpby(-d2, x, 1, r);
        Dots d3(x);
        d3.add(r, r);
        d3.add(s, s);
        if (d2 != 0) d3.add(x, x);
        d3.run();
        const double k = d3.norm2(0), b = k / kold;
        axpby(1, r, b, c);  // c = r + b c
        apply(op, c, q, false);
        kold = k;
        ss = d3.norm2(1);
        xx = d2 != 0 ? d3.norm2(2) : 0;
        ++it;
        info.cost.push_back(std::sqrt(ss));
        r2 = std::sqrt(ss + d2 * xx);
        if (progress.after(it, kold, r2)) break;
    }
    info.iterations = it;
    info.istop = kold < tol ? 1 : 2;
    info.r1norm = kold;
    info.r2norm = r2;
}

namespace {

// The same value for global index g on every rank count: a hash of (g, seed) in [-1, 1).
double noise(int64_t g, int seed)
{
    uint64_t z = static_cast<uint64_t>(g) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(seed) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
}

// Offset of this rank's block among its mask group's blocks (the global offset without a
// mask), so copies of replicated data held by different groups draw the same values.
int64_t noise_offset(const DistributedArray &a)
{
    const Layout &l = a.layout();
    if (!a.has_mask() || !l.scattered()) return l.offset(a.rank());
    int64_t off = 0;
    for (int q = 0; q < a.rank(); ++q)
        if (a.mask()[static_cast<size_t>(q)] == a.mask()[static_cast<size_t>(a.rank())])
            off += l.local[static_cast<size_t>(q)][static_cast<size_t>(l.axis)];
    return off;
}

// Fills operator vectors from their global indices within the mask group (replicated data
// stay equal; member i draws from seed + 100 i).
void fill_noise(Vec &v, int seed)
{
    for (size_t m = 0; m < v.p.size(); ++m) {
        DistributedArray &a = *v.p[m];
        const int64_t off = noise_offset(a);
        const int sd = seed + 100 * static_cast<int>(m);
        dispatch_float(a.dtype(), [&](auto t) {
            using T = decltype(t);
            T *p = static_cast<T *>(a.data());
            for (int64_t i = 0; i < a.local_size(); ++i) {
                const int64_t g = off + i;
                if constexpr (is_complex_v<T>)
                    p[i] = T(static_cast<real_t<T>>(noise(g, sd)), static_cast<real_t<T>>(noise(g, sd + 7)));
                else
                    p[i] = static_cast<T>(noise(g, sd));
            }
        });
    }
}

}  // namespace

DotTest dottest(const ops::Operator &op, double rtol)
{
    PLM_REQUIRE(!op.is_local(), PLM_ERR_INVALID_ARG, "dottest needs a distributed operator");
    PLM_REQUIRE(rtol >= 0, PLM_ERR_INVALID_ARG, "rtol is negative");
    const DType dt = op.dtype();
    Vec u = on(op.domain_parts(), dt), v = on(op.range_parts(), dt), y = on(op.range_parts(), dt),
        x = on(op.domain_parts(), dt);
    fill_noise(u, 1);
    fill_noise(v, 2);
    apply(op, u, y, false);
    apply(op, v, x, true);
    Dots d(u);
    d.add(y, v);  // (Op u)^H v
    d.add(u, x);  // u^H Op^H v
    d.run();
    const std::complex<double> yy = d.get(0), xx = d.get(1);
    DotTest t{yy.real(), yy.imag(), xx.real(), xx.imag(), false};
    t.passed = std::abs(xx - yy) <= rtol * std::max(std::abs(xx), std::abs(yy)) + 1e-300;
    return t;
}

Eigen power_iteration(const ops::Operator &op, int64_t niter, double tol, uint64_t seed)
{
    PLM_REQUIRE(!op.is_local(), PLM_ERR_INVALID_ARG, "power iteration needs a distributed operator");
    PLM_REQUIRE(square(op), PLM_ERR_SIZE_MISMATCH, "power iteration needs a square operator (domain == range)");
    PLM_REQUIRE(niter >= 0 && tol >= 0, PLM_ERR_INVALID_ARG, "niter and tol must be non-negative");
    const DType dt = op.dtype();
    Vec b = on(op.domain_parts(), dt), b1 = on(op.range_parts(), dt);
    fill_noise(b, static_cast<int>(seed % 1000003) + 11);
    Dots d0(b);
    d0.add(b, b);
    d0.run();
    axpby(0, b, 1 / std::sqrt(d0.norm2(0)), b);  // b /= ||b||
    std::complex<double> lambda = 0;
    int64_t it = 0;
    while (it < niter) {
        apply(op, b, b1, false);
        Dots d(b);
        d.add(b, b1);  // lambda = b^H Op b
        d.add(b1, b1);
        d.run();
        const std::complex<double> old = lambda;
        lambda = d.get(0);
        ++it;
        const double n1 = std::sqrt(d.norm2(1));
        if (n1 == 0) break;  // Op b = 0: lambda is 0
        axpby(1 / n1, b1, 0, b);
        if (std::abs(lambda - old) < tol * std::abs(lambda)) break;
    }
    return {lambda.real(), lambda.imag(), it};
}

namespace {

// PyLops' thresholds on one element (complex: applied to the magnitude, phase kept).
template <typename T> T threshold(T v, double t, Thresh kind)
{
    const double a = std::abs(v);
    switch (kind) {
    case Thresh::soft: {
        const double m = std::max(a - t, 0.0);
        return a == 0 ? T(0) : static_cast<T>(v * static_cast<real_t<T>>(m / a));
    }
    case Thresh::hard: return a <= std::sqrt(2 * t) ? T(0) : v;
    case Thresh::half: {
        if (a <= std::cbrt(54.0) / 4 * std::pow(t, 2.0 / 3)) return T(0);
        const double arg = std::clamp(t / 8 * std::pow(a / 3, -1.5), -1.0, 1.0);
        const double phi = 2.0 / 3 * std::acos(arg);
        return static_cast<T>(v * static_cast<real_t<T>>(2.0 / 3 * (1 + std::cos(2 * M_PI / 3 - phi))));
    }
    }
    return v;
}

void threshold_all(Vec &x, double t, Thresh kind)
{
    for (DistributedArray *a : x.p)
        dispatch_float(a->dtype(), [&](auto z) {
            using T = decltype(z);
            T *p = static_cast<T *>(a->data());
            for (int64_t i = 0; i < a->local_size(); ++i) p[i] = threshold(p[i], t, kind);
        });
}

}  // namespace

void ista(const ops::Operator::Ptr &opp, const Parts &yp, const Parts &xp, const Sparse &o, Info &info,
          const Monitor &mon)
{
    const ops::Operator &op = *opp;
    require_solvable(op, yp, xp, o.niter);
    PLM_REQUIRE(o.decay.empty() || static_cast<int64_t>(o.decay.size()) >= o.niter, PLM_ERR_SIZE_MISMATCH,
                "decay has %zu values for %lld iterations", o.decay.size(), static_cast<long long>(o.niter));
    double alpha = o.alpha;
    if (alpha <= 0) {  // 1 / |lambda_max(Op^H Op)|
        const Eigen e = power_iteration(*ops::product(ops::adjoint(opp), opp), 30, 1e-5, 0);
        alpha = 1 / std::abs(std::complex<double>(e.re, e.im));
    }
    const double thresh = o.eps * alpha * 0.5;
    const DType dt = op.dtype();
    const Vec y = view(yp);
    Vec x = view(xp), res = on(op.range_parts(), dt), grad = on(op.domain_parts(), dt),
        xold = on(op.domain_parts(), dt), z = on(op.domain_parts(), dt);
    copy(x, z);
    info = Info{};
    Progress progress(mon, x, o.fista ? "FISTA" : "ISTA", o.niter, o.tol);
    double t = 1, xupdate = std::numeric_limits<double>::infinity(), normres_old = std::numeric_limits<double>::infinity();
    double last_res = 0;
    int64_t it = 0;
    while (it < o.niter && xupdate > o.tol) {
        copy(x, xold);
        const Vec &base = o.fista ? z : x;
        apply(op, base, res, false);
        axpby(1, y, -1, res);  // res = y - Op base
        if (o.monitorres) {
            Dots d(x);
            d.add(res, res);
            d.run();
            const double nr = std::sqrt(d.norm2(0));
            PLM_REQUIRE(nr <= normres_old, PLM_ERR_NOT_CONVERGED,
                        "%s: the residual norm grew from %g to %g at iteration %lld (monitorres)",
                        o.fista ? "FISTA" : "ISTA", normres_old, nr, static_cast<long long>(it + 1));
            normres_old = nr;
        }
        apply(op, res, grad, true);
        copy(base, x);
        axpby(alpha, grad, 1, x);  // x = base + alpha Op^H res
        threshold_all(x, (o.decay.empty() ? 1.0 : o.decay[static_cast<size_t>(it)]) * thresh, o.kind);
        if (o.fista) {
            const double told = t;
            t = (1 + std::sqrt(1 + 4 * t * t)) / 2;
            copy(x, z);
            axpby(-(told - 1) / t, xold, 1 + (told - 1) / t, z);  // z = x + (told-1)/t (x - xold)
            apply(op, x, res, false);                             // FISTA's cost: a fresh residual
            axpby(1, y, -1, res);
        }
        axpby(1, x, -1, xold);  // xold = x - xold
        Dots d(x);
        d.add(xold, xold);
        d.add(res, res);
        const size_t l1 = d.add_norm1(x);
        d.run();
        xupdate = std::sqrt(d.norm2(0));
        last_res = d.norm2(1);
        info.cost.push_back(0.5 * last_res + o.eps * d.norm1(l1));
        ++it;
        if (progress.after(it, info.cost.back(), std::sqrt(last_res))) break;
    }
    info.iterations = it;
    info.istop = xupdate <= o.tol ? 1 : 2;
    info.r1norm = xupdate;
    info.r2norm = std::sqrt(last_res);
}

}  // namespace plm::solvers
