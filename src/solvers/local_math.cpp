#include "solvers/local_math.hpp"

#include <complex>

#include "kernels/kernels.hpp"
#include "memory/space.hpp"

namespace plm::solvers::local {

void copy(const DistributedArray &x, DistributedArray &y)
{
    if (&x != &y) kernels::copy(y.exec(), y.dtype(), y.local_size(), x.data(), y.data());
}

void axpby(double a, const DistributedArray &x, double b, DistributedArray &y)
{
    const Scalar sa = make_scalar(y.dtype(), a, 0, "solver"), sb = make_scalar(y.dtype(), b, 0, "solver");
    kernels::axpby(y.exec(), y.dtype(), y.local_size(), sa.data(), x.data(), sb.data(), y.data());
}

void scale(double a, DistributedArray &y)
{
    const Scalar sa = make_scalar(y.dtype(), a, 0, "solver");
    kernels::scale(y.exec(), y.dtype(), y.local_size(), sa.data(), y.data());
}

double first(const DistributedArray &a)
{
    double x0 = 0;
    if (a.local_size() == 0) return 0;
    dispatch_float(a.dtype(), [&](auto t) {
        using T = decltype(t);
        T v{};
        copy_bytes(Space::host, &v, a.space(), a.data(), sizeof v, a.exec().stream);
        x0 = static_cast<double>(std::real(v));
    });
    return x0;
}

}  // namespace plm::solvers::local
