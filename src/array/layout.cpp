#include "array/layout.hpp"

#include <algorithm>
#include <string>

namespace plm {

int64_t product(const Shape &s)
{
    int64_t p = 1;
    for (int64_t v : s) p *= v;
    return p;
}

int64_t split_count(int64_t n, int nranks, int rank) { return n / nranks + (rank < n % nranks ? 1 : 0); }

int64_t split_start(int64_t n, int nranks, int rank) { return rank * (n / nranks) + std::min<int64_t>(rank, n % nranks); }

int64_t ceil_split_start(int64_t n, int64_t nparts, int64_t i)
{
    const int64_t b = n / nparts + (n % nparts != 0);
    return b > 0 && i > n / b ? n : std::min(n, i * b);  // i b > n when i > n / b: no overflow
}

int64_t Layout::offset(int r) const
{
    if (!scattered()) return 0;
    int64_t off = 0;
    for (int q = 0; q < r; ++q) off += local[static_cast<size_t>(q)][static_cast<size_t>(axis)];
    return off;
}

int64_t Layout::outer(const Shape &s, int a)
{
    int64_t p = 1;
    for (int d = 0; d < a; ++d) p *= s[static_cast<size_t>(d)];
    return p;
}

int64_t Layout::inner(const Shape &s, int a)
{
    int64_t p = 1;
    for (size_t d = static_cast<size_t>(a) + 1; d < s.size(); ++d) p *= s[d];
    return p;
}

bool Layout::same_as(const Layout &o) const
{
    return global == o.global && axis == o.axis && partition == o.partition && local == o.local;
}

std::vector<Shape> default_local_shapes(const Shape &global, int axis, plm_partition_t p, int nranks)
{
    std::vector<Shape> out(static_cast<size_t>(nranks), global);
    if (p != PLM_PARTITION_SCATTER) return out;
    for (int r = 0; r < nranks; ++r)
        out[static_cast<size_t>(r)][static_cast<size_t>(axis)] = split_count(global[static_cast<size_t>(axis)], nranks, r);
    return out;
}

namespace {
std::string str(const Shape &s)
{
    std::string t = "(";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
    return t + (s.size() == 1 ? ",)" : ")");
}
}  // namespace

void validate_local_shapes(const Layout &l)
{
    int64_t sum = 0;
    for (int r = 0; r < l.nranks(); ++r) {
        const Shape &s = l.local[static_cast<size_t>(r)];
        for (int d = 0; d < l.ndim(); ++d) {
            const int64_t want = l.global[static_cast<size_t>(d)];
            const int64_t got = s[static_cast<size_t>(d)];
            PLM_REQUIRE(got >= 0, PLM_ERR_INVALID_ARG, "local shape %s of rank %d has a negative extent",
                        str(s).c_str(), r);
            if (l.scattered() && d == l.axis) continue;
            PLM_REQUIRE(got == want, PLM_ERR_SIZE_MISMATCH,
                        "local shape %s of rank %d does not match global shape %s %s", str(s).c_str(), r,
                        str(l.global).c_str(),
                        l.scattered() ? "outside the distributed axis" : "(BROADCAST kinds hold it all)");
        }
        if (l.scattered())
            sum = checked_add(sum, s[static_cast<size_t>(l.axis)], "the local extents along the distributed axis",
                              PLM_ERR_SIZE_MISMATCH);
    }
    PLM_REQUIRE(!l.scattered() || sum == l.global[static_cast<size_t>(l.axis)], PLM_ERR_SIZE_MISMATCH,
                "local extents along axis %d sum to %lld, global extent is %lld", l.axis, static_cast<long long>(sum),
                static_cast<long long>(l.global[static_cast<size_t>(l.axis)]));
}

void validate_own_shape(const Layout &l, const Shape &mine, int rank)
{
    for (int d = 0; d < l.ndim(); ++d) {
        const int64_t want = l.global[static_cast<size_t>(d)], got = mine[static_cast<size_t>(d)];
        PLM_REQUIRE(got >= 0, PLM_ERR_INVALID_ARG, "local shape %s of rank %d has a negative extent",
                    str(mine).c_str(), rank);
        if (l.scattered() && d == l.axis) {
            PLM_REQUIRE(got <= want, PLM_ERR_SIZE_MISMATCH,
                        "local shape %s of rank %d exceeds global shape %s along the distributed axis",
                        str(mine).c_str(), rank, str(l.global).c_str());
            continue;
        }
        PLM_REQUIRE(got == want, PLM_ERR_SIZE_MISMATCH, "local shape %s of rank %d does not match global shape %s %s",
                    str(mine).c_str(), rank, str(l.global).c_str(),
                    l.scattered() ? "outside the distributed axis" : "(BROADCAST kinds hold it all)");
    }
}

Shape drop_axis(const Shape &s, int a)
{
    Shape out;
    for (size_t d = 0; d < s.size(); ++d)
        if (static_cast<int>(d) != a) out.push_back(s[d]);
    return out;
}

int normalize_axis(int axis, int ndim)
{
    PLM_REQUIRE(axis >= -ndim && axis < ndim, PLM_ERR_INVALID_ARG, "axis %d out of range for %d dimensions", axis,
                ndim);
    return axis < 0 ? axis + ndim : axis;
}

}  // namespace plm
