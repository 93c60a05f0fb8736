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
// on every rank) through plans made once with the operator (FFTW), or for device data once
// per device by the first device apply's make_work (cuFFT); the products are Fredholm1's
// (host CBLAS, device one strided-batched cuBLAS gemm). Host and device run the same steps.
#include <array>
#include <cmath>
#include <cstring>

#include "kernels/fft.hpp"
#include "kernels/kernels.hpp"
#include "ops/signal/slices.hpp"

namespace plm::ops {

namespace {

DType real_dtype(DType complex_dt) { return complex_dt == DType::c64 ? DType::f32 : DType::f64; }

using Plans = std::array<std::unique_ptr<kernels::FftPlan>, 4>;

struct MdcWork : SlicesWork {
    Buffer spec, prod, shifted;  // the input's spectrum, the products' spectrum, a (shifted) time series
    std::shared_ptr<const Plans> dev_plans;  // device data: the plans of the device
    Buffer fft_work;                         // and cuFFT's work area
};

class Mdc final : public Operator {
public:
    struct Sizes {
        int64_t nt = 0, nv = 0, nfreq = 0, ns = 0, nr = 0;
        bool twosided = false;
    };
    // plans: r2c of the model (nt, nr nv), c2r into the data (nt, ns nv), r2c of the data, c2r
    // into the model.
    Mdc(ArrayLayout::Ptr domain, ArrayLayout::Ptr range, DType cdt, Sizes z, Slices s, Plans plans)
        : Operator(real_dtype(cdt), std::move(domain), std::move(range)), cdt_(cdt), z_(z), s_(std::move(s)),
          plans_(std::move(plans))
    {
    }

    WorkPtr make_work(const Exec &e) const override
    {
        const size_t rs = dtype_size(dtype_), cs = dtype_size(cdt_);
        const int64_t side = std::max(z_.nr, z_.ns) * z_.nv, nfft = z_.nt / 2 + 1;
        const bool device = e.space == Space::device;
        auto w = std::make_unique<MdcWork>();
        s_.prepare(e, *w);
        if (device) use_device(e.device);
        w->spec = Buffer::allocate(e.space, static_cast<size_t>(nfft * side) * cs);
        w->prod = Buffer::allocate(e.space, static_cast<size_t>(nfft * side) * cs);
        // device: also where operands cuFFT cannot take (kernels::fft_aligned) are copied
        if (z_.twosided || device) w->shifted = Buffer::allocate(e.space, static_cast<size_t>(z_.nt * side) * rs);
        if (device) {
            w->dev_plans = device_plans(e.device);
            size_t work = 0;
            for (const auto &p : *w->dev_plans) work = std::max(work, p->work_bytes());
            w->fft_work = Buffer::allocate(Space::device, work);
            reserve_staging(e, 2 * s_.gathered());  // the gather moves complex bins: 2 reals each
        }
        return w;
    }

    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        auto &mw = *static_cast<MdcWork *>(w);
        const Exec e = x.exec();
        const bool device = e.space == Space::device;
        const Plans &plans = device ? *mw.dev_plans : plans_;
        // The local work before the gather is agreed there, the rest after it (a device fault
        // on one rank fails every rank).
        agree_on(*this, comm(), comm::capture([&] { first_half(e, plans, adjoint, x.data(), mw); }), device);
        s_.gather(comm(), e, adjoint, mw.prod.data());
        agree_on(*this, comm(), comm::capture([&] { second_half(e, plans, adjoint, y.data(), mw); }), device);
    }

private:
    // Forward: (nt, nr, nv) model x -> this rank's bins of the data's spectrum in w.prod; the
    // adjoint the same from (nt, ns, nv) data to the model's spectrum.
    void first_half(const Exec &e, const Plans &plans, bool adjoint, const void *x, MdcWork &w) const
    {
        const int64_t rows = adjoint ? z_.ns : z_.nr;
        const void *src = x;
        if (!adjoint && z_.twosided) {  // ifftshift along time
            const int64_t shape[2] = {z_.nt, rows * z_.nv};
            kernels::roll(e, dtype_, 2, shape, 0, z_.nt - z_.nt / 2, x, w.shifted.data());
            src = w.shifted.data();
        } else if (misaligned(e, x)) {
            kernels::copy(e, dtype_, z_.nt * rows * z_.nv, x, w.shifted.data());
            src = w.shifted.data();
        }
        plans[adjoint ? 2 : 0]->execute(e, src, w.spec.data(), w.fft_work.data());
        s_.multiply(e, adjoint, w.spec.data(), w.prod.data(), w);
    }

    // After the gather: the bins past nfreq zeroed (I^H), c2r into the output y (the model
    // for the adjoint, fftshifted along time when twosided).
    void second_half(const Exec &e, const Plans &plans, bool adjoint, void *y, MdcWork &w) const
    {
        const int64_t rows = adjoint ? z_.nr : z_.ns;
        pad(e, w.prod.data(), rows);
        const bool shift = adjoint && z_.twosided, via = shift || misaligned(e, y);
        // c2r overwrites prod, which is scratch
        plans[adjoint ? 3 : 1]->execute(e, w.prod.data(), via ? w.shifted.data() : y, w.fft_work.data());
        const int64_t shape[2] = {z_.nt, rows * z_.nv};
        if (shift) kernels::roll(e, dtype_, 2, shape, 0, z_.nt / 2, w.shifted.data(), y);  // fftshift along time
        else if (via) kernels::copy(e, dtype_, shape[0] * shape[1], w.shifted.data(), y);
    }

    // Device operands cuFFT cannot read or write in place (wrapped memory aligned for a real
    // only) go through w.shifted.
    bool misaligned(const Exec &e, const void *p) const
    {
        return e.space == Space::device && !kernels::fft_aligned(p, dtype_);
    }

    // Zeroes the bins past nfreq of a spectrum (nt/2 + 1, rows, nv): I^H.
    void pad(const Exec &e, void *spec, int64_t rows) const
    {
        const int64_t nfft = z_.nt / 2 + 1, per = rows * z_.nv;
        const unsigned char zero[16] = {};
        kernels::fill(e, cdt_, (nfft - z_.nfreq) * per,  zero,
                      static_cast<char *>(spec) + static_cast<size_t>(z_.nfreq * per) * dtype_size(cdt_));
    }

    // The four plans on a device, made by the first device apply there and kept.
    std::shared_ptr<const Plans> device_plans(int device) const
    {
        std::lock_guard<std::mutex> g(dev_lock_);
        std::shared_ptr<const Plans> &slot = dev_[device];
        if (!slot) slot = std::make_shared<const Plans>(make_plans(Space::device, real_dtype(cdt_), z_, device));
        return slot;
    }

public:
    // r2c of the model (nt, nr nv), c2r into the data (nt, ns nv), r2c of the data, c2r into
    // the model: transforms along time (axis 0), the traces a strided batch.
    static Plans make_plans(Space sp, DType rdt, const Sizes &z, int device = -1)
    {
        using K = kernels::FftKind;
        const std::vector<int> axis{0};
        const std::vector<int64_t> model{z.nt, z.nr * z.nv}, data{z.nt, z.ns * z.nv};
        Plans p;
        p[0] = std::make_unique<kernels::FftPlan>(sp, rdt, K::r2c, model, axis, device);
        p[1] = std::make_unique<kernels::FftPlan>(sp, rdt, K::c2r, data, axis, device);
        p[2] = std::make_unique<kernels::FftPlan>(sp, rdt, K::r2c, data, axis, device);
        p[3] = std::make_unique<kernels::FftPlan>(sp, rdt, K::c2r, model, axis, device);
        return p;
    }

private:
    DType cdt_;
    Sizes z_;
    Slices s_;
    Plans plans_;  // host
    mutable std::mutex dev_lock_;
    mutable std::map<int, std::shared_ptr<const Plans>> dev_;  // by device
};

}  // namespace

Operator::Ptr mdc(comm::Agreement &ag, const CommPtr &c, const MdcArgs &a)
{
    DType cdt = DType::c128;
    Mdc::Sizes z;
    Slices s;
    Plans plans;
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
        plans = Mdc::make_plans(Space::host, real_dtype(cdt), z);
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
        return std::make_shared<Mdc>(layout(a.nr), layout(a.ns), cdt, z, std::move(s), std::move(plans));
    });
}

}  // namespace plm::ops
