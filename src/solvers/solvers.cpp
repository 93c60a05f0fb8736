#include "solvers/solvers.hpp"

#include <cmath>
#include <complex>
#include <cstring>

namespace plm::solvers {

namespace {

// y = a x + b y on the local blocks (real coefficients).
void axpby(double a, const DistributedArray &x, double b, DistributedArray &y)
{
    const Scalar sa = make_scalar(y.dtype(), a, 0, "solver"), sb = make_scalar(y.dtype(), b, 0, "solver");
    kernels::axpby(y.exec(), y.dtype(), y.local_size(), sa.data(), x.data(), sb.data(), y.data());
}

void copy(const DistributedArray &x, DistributedArray &y)
{
    kernels::copy(y.exec(), y.dtype(), y.local_size(), x.data(), y.data());
}

// Several dot products in one agreement: add them, run, then read each.
class Dots {
public:
    explicit Dots(const DistributedArray &any) : ag_(any.base(), "solver reductions") {}
    // Adds a.b (conjugated: sum conj(a) b) and returns its index.
    size_t add(const DistributedArray &a, const DistributedArray &b)
    {
        arrays_.push_back(&a);
        lanes_.push_back(a.add_dot(ag_, &b, true));
        return lanes_.size() - 1;
    }
    void run() { ag_.run(); }
    std::complex<double> get(size_t i) const
    {
        double re = 0, im = 0;
        arrays_[i]->read_dot(ag_, lanes_[i], &re, &im);
        return {re, im};
    }
    double norm2(size_t i) const { return get(i).real(); }  // a.a

private:
    comm::Agreement ag_;
    std::vector<const DistributedArray *> arrays_;
    std::vector<size_t> lanes_;
};

DistributedArray::Ptr on(const ArrayLayout::Ptr &l, DType dt)
{
    return DistributedArray::create_from_layout(l, to_public(dt), PLM_MEMORY_HOST, nullptr);
}

void require_solvable(const ops::Operator &op, const DistributedArray &y, const DistributedArray &x, int64_t niter)
{
    PLM_REQUIRE(niter >= 0, PLM_ERR_INVALID_ARG, "niter %lld is negative", static_cast<long long>(niter));
    op.check_operands(x, y, false);
}

}  // namespace

void cg(const ops::Operator &op, const DistributedArray &y, DistributedArray &x, int64_t niter, double tol, Info &info)
{
    require_solvable(op, y, x, niter);
    PLM_REQUIRE(op.domain()->same_as(*op.range()), PLM_ERR_SIZE_MISMATCH, "CG needs a square operator (domain == range)");
    const DType dt = x.dtype();
    DistributedArray::Ptr r = on(op.range(), dt), c = on(op.domain(), dt), opc = on(op.range(), dt);
    info = Info{};
    op.apply(x, *r, false);
    axpby(1, y, -1, *r);  // r = y - Op x
    copy(*r, *c);
    Dots d0(x);
    d0.add(*r, *r);
    d0.run();
    double kold = d0.norm2(0);
    info.cost.push_back(std::sqrt(kold));
    int64_t it = 0;
    while (it < niter && kold > tol) {
        op.apply(*c, *opc, false);
        Dots d1(x);
        d1.add(*c, *opc);
        d1.run();
        const double a = kold / std::abs(d1.get(0));
        axpby(a, *c, 1, x);
        axpby(-a, *opc, 1, *r);
        Dots d2(x);
        d2.add(*r, *r);
        d2.run();
        const double knew = d2.norm2(0), b = knew / kold;
        axpby(1, *r, b, *c);  // c = r + b c
        kold = knew;
        ++it;
        info.cost.push_back(std::sqrt(kold));
    }
    info.iterations = it;
    info.istop = kold <= tol ? 1 : 2;
    info.r1norm = kold;
    info.r2norm = std::sqrt(kold);
}

void cgls(const ops::Operator &op, const DistributedArray &y, DistributedArray &x, int64_t niter, double damp,
          double tol, Info &info)
{
    require_solvable(op, y, x, niter);
    const DType dt = x.dtype();
    const double d2 = damp * damp;
    DistributedArray::Ptr s = on(op.range(), dt), q = on(op.range(), dt), r = on(op.domain(), dt),
                          c = on(op.domain(), dt);
    info = Info{};
    op.apply(x, *s, false);
    axpby(1, y, -1, *s);  // s = y - Op x
    op.apply(*s, *r, true);
    if (d2 != 0) axpby(-d2, x, 1, *r);  // r = Op^H s - damp^2 x (PyLops: damp, unsquared)
    copy(*r, *c);
    op.apply(*c, *q, false);
    // ||x||^2 and ||c||^2 only matter with damping: without it they are not reduced.
    Dots d0(x);
    d0.add(*r, *r);
    d0.add(*s, *s);
    if (d2 != 0) d0.add(x, x);
    d0.run();
    double kold = d0.norm2(0), ss = d0.norm2(1), xx = d2 != 0 ? d0.norm2(2) : 0;
    info.cost.push_back(std::sqrt(ss));
    double r2 = std::sqrt(ss + d2 * xx);
    int64_t it = 0;
    while (it < niter && kold > tol) {
        Dots d1(x);
        d1.add(*q, *q);
        if (d2 != 0) d1.add(*c, *c);
        d1.run();
        const double a = kold / (d1.norm2(0) + (d2 != 0 ? d2 * d1.norm2(1) : 0));
        axpby(a, *c, 1, x);
        axpby(-a, *q, 1, *s);
        op.apply(*s, *r, true);
        if (d2 != 0) axpby(-d2, x, 1, *r);
        Dots d3(x);
        d3.add(*r, *r);
        d3.add(*s, *s);
        if (d2 != 0) d3.add(x, x);
        d3.run();
        const double k = d3.norm2(0), b = k / kold;
        axpby(1, *r, b, *c);  // c = r + b c
        op.apply(*c, *q, false);
        kold = k;
        ss = d3.norm2(1);
        xx = d2 != 0 ? d3.norm2(2) : 0;
        ++it;
        info.cost.push_back(std::sqrt(ss));
        r2 = std::sqrt(ss + d2 * xx);
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

// Fills a 1-D operator vector from its global indices (replicated data stay equal).
void fill_noise(DistributedArray &a, int seed)
{
    const int64_t off = a.layout().offset(a.rank());
    dispatch_float(a.dtype(), [&](auto t) {
        using T = decltype(t);
        T *p = static_cast<T *>(a.data());
        for (int64_t i = 0; i < a.local_size(); ++i) {
            const int64_t g = off + i;
            if constexpr (is_complex_v<T>)
                p[i] = T(static_cast<real_t<T>>(noise(g, seed)), static_cast<real_t<T>>(noise(g, seed + 7)));
            else
                p[i] = static_cast<T>(noise(g, seed));
        }
    });
}

}  // namespace

DotTest dottest(const ops::Operator &op, double rtol)
{
    PLM_REQUIRE(!op.is_local(), PLM_ERR_INVALID_ARG, "dottest needs a distributed operator");
    PLM_REQUIRE(rtol >= 0, PLM_ERR_INVALID_ARG, "rtol is negative");
    const DType dt = op.dtype();
    DistributedArray::Ptr u = on(op.domain(), dt), v = on(op.range(), dt), y = on(op.range(), dt),
                          x = on(op.domain(), dt);
    fill_noise(*u, 1);
    fill_noise(*v, 2);
    op.apply(*u, *y, false);
    op.apply(*v, *x, true);
    Dots d(*u);
    d.add(*y, *v);  // sum conj(Op u) v
    d.add(*u, *x);  // sum conj(u) Op^H v
    d.run();
    const std::complex<double> yy = d.get(0), xx = d.get(1);
    DotTest t{yy.real(), yy.imag(), xx.real(), xx.imag(), false};
    t.passed = std::abs(xx - yy) <= rtol * std::max(std::abs(xx), std::abs(yy)) + 1e-300;
    return t;
}

}  // namespace plm::solvers
