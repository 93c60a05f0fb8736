// MDC (PyLops-MPI's MPIMDC): multi-dimensional convolution y = F1^H I1^H Fredholm I F x of a
// model x (nt, nr, nv) into data y (nt, ns, nv), both BROADCAST, with the kernel G split over
// the ranks by frequency. F and F1 are PyLops' real FFT along time (norm "ortho", the bins
// 1 .. (nt-1)/2 times sqrt 2, F with ifftshift before it when twosided); I keeps the first nfreq
// of the nt/2 + 1 bins (I^H pads zeros); Fredholm is Fredholm1 on the frequencies (slices.hpp).
//
// Per bin k the FFT scalings multiply to 1/nt in either direction: F's ortho and sqrt 2 factor
// (a_k) meets F1^H's (b_k = 1/(sqrt nt) over sqrt 2 on the same bins, 1/sqrt nt elsewhere), and
// a_k b_k = 1/nt for every kept bin. So G is stored once times dr dt sqrt(nt) (unless
// prescaled) / nt, and the transforms run unnormalised: r2c, the products of this rank's bins,
// one allgatherv of the bins, zero bins past nfreq, c2r. The FFTs are local (x and y are whole
// on every rank) through plans made once with the operator.
#include <cmath>
#include <cstring>

#include "kernels/fft.hpp"
#include "ops/signal/slices.hpp"

namespace plm::ops {

namespace {

DType real_dtype(DType complex_dt) { return complex_dt == DType::c64 ? DType::f32 : DType::f64; }

// dst = src rolled by `shift` rows along axis 0 (dst[(i + shift) % n] = src[i]) for n rows of
// `row` bytes: numpy's fftshift is shift n/2, ifftshift shift n - n/2.
void roll_rows(const void *src, void *dst, int64_t n, int64_t shift, size_t row)
{
    const auto *s = static_cast<const char *>(src);
    auto *d = static_cast<char *>(dst);
    const size_t tail = static_cast<size_t>(n - shift) * row;  // src rows [0, n - shift) go to [shift, n)
    std::memcpy(d + static_cast<size_t>(shift) * row, s, tail);
    std::memcpy(d, s + tail, static_cast<size_t>(shift) * row);
}

struct MdcWork : HostCopies {
    Buffer spec, prod, shifted;  // the input's spectrum, the products' spectrum, a shifted time series
};

class Mdc final : public Operator {
public:
    struct Sizes {
        int64_t nt = 0, nv = 0, nfreq = 0, ns = 0, nr = 0;
        bool twosided = false;
    };
    // plans: r2c of the model (nt, nr nv), c2r into the data (nt, ns nv), r2c of the data, c2r
    // into the model.
    Mdc(ArrayLayout::Ptr domain, ArrayLayout::Ptr range, DType cdt, Sizes z, Slices s,
        std::unique_ptr<kernels::FftPlan> plans[4])
        : Operator(real_dtype(cdt), std::move(domain), std::move(range)), cdt_(cdt), z_(z), s_(std::move(s))
    {
        for (int i = 0; i < 4; ++i) plans_[i] = std::move(plans[i]);
    }
    bool native(Space s) const override { return s == Space::host; }

    WorkPtr make_work(const Exec &e) const override
    {
        const size_t rs = dtype_size(dtype_), cs = dtype_size(cdt_);
        const int64_t side = std::max(z_.nr, z_.ns) * z_.nv, nfft = z_.nt / 2 + 1;
        const size_t vec = static_cast<size_t>(std::max(rows_, cols_)) * rs;
        std::unique_ptr<MdcWork> w = host_copies<MdcWork>(e, vec, vec);
        w->spec = Buffer::allocate(Space::host, static_cast<size_t>(nfft * side) * cs);
        w->prod = Buffer::allocate(Space::host, static_cast<size_t>(nfft * side) * cs);
        if (z_.twosided) w->shifted = Buffer::allocate(Space::host, static_cast<size_t>(z_.nt * z_.nr * z_.nv) * rs);
        return w;
    }

    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        auto &mw = *static_cast<MdcWork *>(w);
        on_host(*this, x, y, w, [&](const Exec &e, const void *in, void *out) {
            if (adjoint)
                backward(e, in, out, mw);
            else
                forward(e, in, out, mw);
        });
    }

private:
    // (nt, nr, nv) model -> (nt, ns, nv) data.
    void forward(const Exec &e, const void *x, void *y, MdcWork &w) const
    {
        const size_t row = static_cast<size_t>(z_.nr * z_.nv) * dtype_size(dtype_);
        const void *src = x;
        if (z_.twosided) {  // ifftshift along time
            roll_rows(x, w.shifted.data(), z_.nt, z_.nt - z_.nt / 2, row);
            src = w.shifted.data();
        }
        plans_[0]->execute(src, w.spec.data());
        s_.apply(comm(), e, false, w.spec.data(), w.prod.data());
        pad(w.prod.data(), z_.ns);
        plans_[1]->execute(w.prod.data(), y);  // c2r overwrites prod, which is scratch
    }

    // (nt, ns, nv) data -> (nt, nr, nv) model.
    void backward(const Exec &e, const void *y, void *x, MdcWork &w) const
    {
        plans_[2]->execute(y, w.spec.data());
        s_.apply(comm(), e, true, w.spec.data(), w.prod.data());
        pad(w.prod.data(), z_.nr);
        if (!z_.twosided) return plans_[3]->execute(w.prod.data(), x);
        plans_[3]->execute(w.prod.data(), w.shifted.data());
        const size_t row = static_cast<size_t>(z_.nr * z_.nv) * dtype_size(dtype_);
        roll_rows(w.shifted.data(), x, z_.nt, z_.nt / 2, row);  // fftshift along time
    }

    // Zeroes the bins past nfreq of a spectrum (nt/2 + 1, rows, nv): I^H.
    void pad(void *spec, int64_t rows) const
    {
        const int64_t nfft = z_.nt / 2 + 1, per = rows * z_.nv;
        const size_t cs = dtype_size(cdt_);
        std::memset(static_cast<char *>(spec) + static_cast<size_t>(z_.nfreq * per) * cs, 0,
                    static_cast<size_t>((nfft - z_.nfreq) * per) * cs);
    }

    DType cdt_;
    Sizes z_;
    Slices s_;
    std::unique_ptr<kernels::FftPlan> plans_[4];
};

}  // namespace

Operator::Ptr mdc(comm::Agreement &ag, const CommPtr &c, const MdcArgs &a)
{
    DType cdt = DType::c128;
    Mdc::Sizes z;
    Slices s;
    std::unique_ptr<kernels::FftPlan> plans[4];
    ag.check([&] {
        cdt = from_public(a.dtype);
        PLM_REQUIRE(cdt == DType::c64 || cdt == DType::c128, PLM_ERR_INVALID_ARG,
                    "MDC: G is a frequency-domain kernel of complex64 or complex128, not %s", dtype_name(cdt));
        PLM_REQUIRE(a.nt >= 1 && a.nv >= 1 && a.ns >= 1 && a.nr >= 1 && a.nfreq >= 1, PLM_ERR_INVALID_ARG,
                    "MDC needs nt, nv, ns, nr and nfreq >= 1 (nt %lld, nv %lld, ns %lld, nr %lld, nfreq %lld)",
                    static_cast<long long>(a.nt), static_cast<long long>(a.nv), static_cast<long long>(a.ns),
                    static_cast<long long>(a.nr), static_cast<long long>(a.nfreq));
        PLM_REQUIRE(!a.twosided || a.nt % 2 == 1, PLM_ERR_INVALID_ARG, "MDC: twosided needs an odd nt (nt = %lld)",
                    static_cast<long long>(a.nt));
        PLM_REQUIRE(std::isfinite(a.dt) && std::isfinite(a.dr), PLM_ERR_INVALID_ARG, "MDC: dt and dr must be finite");
        z = {a.nt, a.nv, std::min(a.nfreq, a.nt / 2 + 1), a.ns, a.nr, a.twosided};
        checked_product({a.nt, std::max(a.ns, a.nr), a.nv}, "the MDC vectors");
        const double scale = (a.prescaled ? 1.0 : a.dr * a.dt * std::sqrt(static_cast<double>(a.nt))) / a.nt;
        s = Slices(cdt, a.nf, a.ns, a.nr, a.nv, a.g, a.g_bytes, a.save_gt, scale, a.conj);
        const DType rdt = real_dtype(cdt);
        const std::vector<int> axis{0};
        plans[0] = std::make_unique<kernels::FftPlan>(Space::host, rdt, kernels::FftKind::r2c,
                                                      std::vector<int64_t>{a.nt, a.nr * a.nv}, axis);
        plans[1] = std::make_unique<kernels::FftPlan>(Space::host, rdt, kernels::FftKind::c2r,
                                                      std::vector<int64_t>{a.nt, a.ns * a.nv}, axis);
        plans[2] = std::make_unique<kernels::FftPlan>(Space::host, rdt, kernels::FftKind::r2c,
                                                      std::vector<int64_t>{a.nt, a.ns * a.nv}, axis);
        plans[3] = std::make_unique<kernels::FftPlan>(Space::host, rdt, kernels::FftKind::c2r,
                                                      std::vector<int64_t>{a.nt, a.nr * a.nv}, axis);
    });
    for (int64_t v : {int64_t{a.dtype}, a.nt, a.nv, a.nfreq, a.ns, a.nr, int64_t{a.twosided}, int64_t{a.conj},
                      int64_t{a.prescaled}})
        ag.fold(v);
    ag.fold_double(a.dt);
    ag.fold_double(a.dr);
    const size_t lane = ag.add_gather(a.nf);
    ag.run();
    return comm::finish_collective(*c, "op_mdc", {}, [&]() -> Operator::Ptr {
        std::vector<int64_t> counts;
        for (int r = 0; r < c->size(); ++r) counts.push_back(ag.gathered(lane, r));
        s.plan(counts, c->rank());
        PLM_REQUIRE(s.total() == z.nfreq, PLM_ERR_INVALID_ARG,
                    "MDC: the ranks' frequencies of G sum to %lld, expected nfreq = %lld (min(nfreq, nt/2 + 1))",
                    static_cast<long long>(s.total()), static_cast<long long>(z.nfreq));
        auto layout = [&](int64_t n) {
            return vector_layout(c, std::vector<int64_t>(counts.size(), a.nt * n * a.nv), PLM_PARTITION_BROADCAST,
                                 {});
        };
        return std::make_shared<Mdc>(layout(a.nr), layout(a.ns), cdt, z, std::move(s), plans);
    });
}

}  // namespace plm::ops
