// NonStationaryConvolve1D (PyLops-MPI's MPINonStationaryConvolve1D) on an N-D model split along
// axis 0 in whole rows, the model of the stencil operators. Every rank keeps all the filters
// (nfilt x nh, small) and interpolates the filter of each sample from its global index, so no
// rank needs a filter position of its own and any split works. Along axis 0 a rank needs the
// nh / 2 samples either side of its block, whichever ranks hold them: one persistent
// exchange (the stencils' ghost rows), overlapped with the rows that need none. Along another
// axis the convolution is local.
#include <cstring>

#include "kernels/kernels.hpp"
#include "ops/operator.hpp"

namespace plm::ops {

namespace {

// The filters, copied, and their regular positions ih[k] = oh + k dh.
struct Filters {
    Buffer hs;
    int64_t nfilt = 0, nh = 0, oh = 0, dh = 1;
};

Filters check_filters(const RowModel &m, int axis, int64_t nfilt, int64_t nh, const void *hs, int64_t hs_bytes,
                      const int64_t *ih)
{
    PLM_REQUIRE(nfilt >= 1 && ih, PLM_ERR_INVALID_ARG, "the filters need nfilt >= 1 positions ih (nfilt = %lld)",
                static_cast<long long>(nfilt));
    PLM_REQUIRE(nh >= 1 && nh % 2 == 1, PLM_ERR_INVALID_ARG, "filters hs must have odd length (nh = %lld)",
                static_cast<long long>(nh));
    PLM_REQUIRE(hs, PLM_ERR_INVALID_ARG, "hs is NULL");
    const int64_t n = m.dims[static_cast<size_t>(axis)];
    for (int64_t k = 0; k < nfilt; ++k)
        PLM_REQUIRE(ih[k] >= 0 && ih[k] < n, PLM_ERR_INVALID_ARG,
                    "the filter positions ih must lie in [0, dims[axis] = %lld): ih[%lld] = %lld",
                    static_cast<long long>(n), static_cast<long long>(k), static_cast<long long>(ih[k]));
    Filters f;
    f.nfilt = nfilt;
    f.nh = nh;
    f.oh = ih[0];
    f.dh = nfilt > 1 ? ih[1] - ih[0] : 1;
    PLM_REQUIRE(f.dh >= 1, PLM_ERR_INVALID_ARG, "the filter positions ih must increase (ih[0] = %lld, ih[1] = %lld)",
                static_cast<long long>(ih[0]), static_cast<long long>(nfilt > 1 ? ih[1] : ih[0]));
    for (int64_t k = 2; k < nfilt; ++k)
        PLM_REQUIRE(ih[k] - ih[k - 1] == f.dh, PLM_ERR_INVALID_ARG,
                    "the filter positions ih must be regularly sampled: ih[1] - ih[0] = %lld, ih[%lld] - ih[%lld] = %lld",
                    static_cast<long long>(f.dh), static_cast<long long>(k), static_cast<long long>(k - 1),
                    static_cast<long long>(ih[k] - ih[k - 1]));
    const int64_t count = checked_mul(nfilt, nh, "the filters' element count");
    f.hs = Buffer::allocate(Space::host, require_buffer_bytes("nonstationary_convolve1d: hs", hs_bytes, count, m.dt));
    std::memcpy(f.hs.data(), hs, f.hs.bytes());
    return f;
}

// The ghost rows received along axis 0 in one apply: `before` rows, then `after` rows.
struct GhostWork : Work {
    Buffer ghost;
};

class NonStatConvolve final : public Operator {
public:
    NonStatConvolve(DType dt, ArrayLayout::Ptr model, const Shape &dims, const std::vector<int64_t> &rows, int axis,
                    Filters f)
        : Operator(dt, model, model), f_(std::move(f))
    {
        const comm::Communicator &c = model->comm();
        const size_t me = static_cast<size_t>(c.rank()), a = static_cast<size_t>(axis);
        p_.nfilt = f_.nfilt;
        p_.nh = f_.nh;
        p_.oh = f_.oh;
        p_.dh = f_.dh;
        p_.hs = f_.hs.data();
        p_.inner = plm::product(Shape(dims.begin() + static_cast<std::ptrdiff_t>(a) + 1, dims.end()));
        if (axis > 0) {  // local: every line along the axis is wholly in the block
            p_.outer = rows[me] * plm::product(Shape(dims.begin() + 1, dims.begin() + static_cast<std::ptrdiff_t>(a)));
            p_.n = dims[a];
            return;
        }
        p_.n = rows[me];
        for (size_t q = 0; q < me; ++q) p_.row0 += rows[q];
        if (f_.nh / 2 > 0 && c.size() > 1) {  // rank-independent: every rank makes the exchange or none
            GhostCounts g = ghost_counts(rows, c.rank(), p_.inner, f_.nh / 2);
            p_.before = g.before;
            p_.after = g.after;
            staged_ = (g.before + g.after) * p_.inner;
            for (int64_t v : g.sc) staged_ += v;
            plan_ = std::make_unique<comm::AlltoallvPlan>(c, dt, std::move(g.sc), std::move(g.sd), std::move(g.rc),
                                                          std::move(g.rd));
        }
    }

    bool native(Space s) const override { return s == Space::host; }

    WorkPtr make_work(const Exec &e) const override
    {
        PLM_REQUIRE(e.space == Space::host, PLM_ERR_NOT_SUPPORTED,
                    "the non-stationary convolution applies to host arrays only");
        if (!plan_) return nullptr;
        auto w = std::make_unique<GhostWork>();
        w->ghost = Buffer::allocate(e.space, checked_bytes(checked_mul(p_.before + p_.after, p_.inner, "the ghost rows"),
                                                           dtype_, "the ghost rows in bytes"));
        reserve_staging(e, staged_);
        return w;
    }

    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        const Exec e = x.exec();
        char *ghost = plan_ ? static_cast<char *>(static_cast<GhostWork *>(w)->ghost.data()) : nullptr;
        const char *after = ghost ? ghost + p_.before * p_.inner * static_cast<int64_t>(dtype_size(dtype_)) : nullptr;
        comm::Request r;
        if (plan_) r = plan_->start(e, x.data(), ghost);
        // Rows [lo, hi) read no ghost: computed while the ghosts travel.
        const int64_t reach = p_.nh / 2, lo = std::min(reach, p_.n), hi = std::max(lo, p_.n - reach);
        kernels::nonstat_convolve(e, dtype_, p_, adjoint, x.data(), nullptr, nullptr, lo, hi, y.data());
        r.wait();
        kernels::nonstat_convolve(e, dtype_, p_, adjoint, x.data(), ghost, after, 0, lo, y.data());
        kernels::nonstat_convolve(e, dtype_, p_, adjoint, x.data(), ghost, after, hi, p_.n, y.data());
    }

private:
    Filters f_;
    kernels::NonstatPlan p_;
    std::unique_ptr<comm::AlltoallvPlan> plan_;
    int64_t staged_ = 0;  // elements a host-staged exchange stages (sends and ghosts)
};

}  // namespace

Operator::Ptr nonstat_convolve1d(comm::Agreement &ag, const CommPtr &c, const StencilModel &s, int axis, int64_t nfilt,
                                 int64_t nh, const void *hs, int64_t hs_bytes, const int64_t *ih)
{
    const RowModel m = check_model(ag, s);
    const int a = check_axis(ag, m, axis);
    Filters f;
    ag.check([&] { f = check_filters(m, a, nfilt, nh, hs, hs_bytes, ih); });
    ag.fold(f.nfilt);
    ag.fold(f.nh);
    ag.fold(f.oh);
    ag.fold(f.dh);
    // The filters must be the same everywhere: their bits go into the fingerprint.
    const unsigned char *bytes = static_cast<const unsigned char *>(f.hs.data());
    for (size_t i = 0; i < f.hs.bytes(); i += sizeof(int64_t)) {
        int64_t word = 0;
        std::memcpy(&word, bytes + i, std::min(sizeof word, f.hs.bytes() - i));
        ag.fold(word);
    }
    const size_t rows = add_rows(ag, m);
    ag.run();
    return comm::finish_collective(*c, "op_nonstationary_convolve1d", {}, [&]() -> Operator::Ptr {
        const std::vector<int64_t> r = model_rows(ag, m, rows);
        return std::make_shared<NonStatConvolve>(m.dt, model_layout(c, m, r), m.dims, r, a, std::move(f));
    });
}

}  // namespace plm::ops
