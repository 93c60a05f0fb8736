// The distributed N-D FFT (PyLops-MPI's MPIFFTND), slab decomposition. The input is an N-D
// array split along axis 0 (default split), passed as a 1-D SCATTER vector like the stencil
// operators' models. An apply is a fixed pipeline of steps made once, with every FFT plan and
// exchange plan, when the operator is made:
//   - no FFT along axis 0: everything is local, and the output stays split along axis 0;
//   - otherwise the FFTs of the other axes run first (split along axis 0), one all-to-all
//     moves the data to a split along the output axis d (the first axis off the transform,
//     else axis 1), and the FFT along axis 0 runs last; with PLM_FFT_OUTPUT_AXIS0 a second
//     all-to-all (the first one's reverse) brings the output back to a split along axis 0.
// The adjoint runs the same steps backwards, each one's adjoint. Real transforms (real = 1)
// use r2c / c2r plans when the last FFT axis is transformed first; when that axis is 0 (it is
// transformed last) they run complex and keep the first n / 2 + 1 bins. Shifts run where
// their axis is local. The norm's 1 / N scales the output of both directions.
//
// Device arrays run the same pipeline on the device: the same kernels (kernels.hpp dispatches
// on the memory space), the FFT steps through cuFFT plans (kernels/fft.hpp) made once per
// device by the first device apply's make_work (before that apply's agreement) and kept by the
// operator, the transposes through the all-to-all plans on device buffers (the communicator's
// device backend). The local work between two exchanges is agreed before the next exchange
// (a device fault on one rank fails every rank there, not in the exchange). The one layout
// cuFFT's real passes do not take (device_fft_layout_ok) is staged through host buffers.
#include "ops/signal/fft.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <array>

#include "kernels/fft.hpp"

namespace plm::ops {

namespace {

DType complex_of(DType dt) { return dt == DType::f32 || dt == DType::c64 ? DType::c64 : DType::c128; }
DType real_of(DType dt) { return dt == DType::f32 || dt == DType::c64 ? DType::f32 : DType::f64; }

Shape with(Shape s, int axis, int64_t n)
{
    s[static_cast<size_t>(axis)] = n;
    return s;
}

// The checked arguments.
struct Params {
    DType dt = DType::c128;  // the operator's (complex) dtype
    bool clinear = true;     // false: real input (real = 1, or a real dtype given)
    bool real = false;
    Shape dims;
    std::vector<int> axes;
    std::vector<double> sampling;
    bool unit = false;  // norm 1/n
    std::vector<bool> ifs, ffs;  // per FFT axis
    bool rows = false;           // the output split along axis 0 (PLM_FFT_OUTPUT_AXIS0)
};

// One step of the pipeline, forward from a block of shape in (element type in_dt) to one of
// shape out (out_dt); the adjoint goes back.
struct Step {
    enum Kind { to_real, real_part, roll, fft, bins, truncate, transpose } kind = fft;
    Shape in, out;
    DType in_dt = DType::c128, out_dt = DType::c128;
    int axis = 0;        // roll, bins, truncate
    std::vector<int> axes;  // fft: the axes transformed
    bool r2c = false;       // fft: r2c / c2r (else c2c)
    int64_t shift = 0;   // roll
    double factor[2] = {1, 1};  // bins: forward, adjoint
    int64_t b0 = 0, b1 = 0;     // bins: [b0, b1) along axis
    std::shared_ptr<kernels::FftPlan> plan[2];  // fft: forward, adjoint (none on an empty block)

    // transpose: from the block split along axis 0 (rows) to the one split along axis d, or
    // back (reverse); boxes per rank for the rows -> d direction
    bool reverse = false;
    Shape rows;                    // the block split along axis 0
    std::vector<Shape> sbox, sat;  // the box of the rows block going to each rank, and where it sits
    std::shared_ptr<comm::AlltoallvPlan> xplan[2];
    std::vector<int64_t> sd, rd;  // forward displacements (elements)
    Shape origin;                 // ndim zeros (made here: an apply allocates nothing)

    int64_t bytes() const
    {
        return std::max(plm::product(in) * static_cast<int64_t>(dtype_size(in_dt)),
                        plm::product(out) * static_cast<int64_t>(dtype_size(out_dt)));
    }
};

Step make_step(Step::Kind k, const Shape &in, const Shape &out, DType in_dt, DType out_dt)
{
    Step s;
    s.kind = k;
    s.in = in;
    s.out = out;
    s.in_dt = in_dt;
    s.out_dt = out_dt;
    return s;
}

// The device plans of an operator's FFT steps on one device: [step][0 forward, 1 adjoint]
// (null for other steps and empty blocks), and the largest work area one of them needs.
struct DevicePlans {
    std::vector<std::array<std::unique_ptr<kernels::FftPlan>, 2>> plan;
    size_t work = 0;
};

struct FftWork : Work {
    Buffer buf[2], xfer;  // the pipeline's blocks; the packed side of an exchange
    Buffer stage_in, stage_out;  // host copies of device operands (staged applies)
    std::shared_ptr<const DevicePlans> dev;  // device applies: the plans of the device
    Buffer fft_work;                          // and cuFFT's work area
};

char *at(const void *p, int64_t elems, DType dt)
{
    return const_cast<char *>(static_cast<const char *>(p)) + elems * static_cast<int64_t>(dtype_size(dt));
}

// The axis the data is split along between the passes when axis 0 is transformed: the first
// axis off the transform, else axis 1.
int exchange_axis(const Params &p)
{
    int d = 1;
    for (int a = static_cast<int>(p.dims.size()) - 1; a >= 1; --a)
        if (std::find(p.axes.begin(), p.axes.end(), a) == p.axes.end()) d = a;
    return d;
}

// The output's global shape, its distributed axis and the domain and range layouts.
struct Geometry {
    Shape dimsd;
    int out_axis = 0;
    ArrayLayout::Ptr domain, range;
};

Geometry geometry(const CommPtr &c, const Params &p)
{
    const int P = c->size();
    const int r = p.axes.back();
    const auto in_T = [&](int a) { return std::find(p.axes.begin(), p.axes.end(), a) != p.axes.end(); };
    Geometry g;
    g.dimsd = with(p.dims, r, p.real ? p.dims[static_cast<size_t>(r)] / 2 + 1 : p.dims[static_cast<size_t>(r)]);
    if (in_T(0) && !p.rows) g.out_axis = exchange_axis(p);
    // Domain and range: 1-D SCATTER vectors of the blocks (default splits).
    const size_t d = static_cast<size_t>(g.out_axis);
    std::vector<int64_t> in_sizes, out_sizes;
    for (int q = 0; q < P; ++q) {
        in_sizes.push_back(plm::product(with(p.dims, 0, split_count(p.dims[0], P, q))));
        out_sizes.push_back(plm::product(with(g.dimsd, g.out_axis, split_count(g.dimsd[d], P, q))));
    }
    g.domain = vector_layout(c, in_sizes, PLM_PARTITION_SCATTER, {});
    g.range = vector_layout(c, out_sizes, PLM_PARTITION_SCATTER, {});
    return g;
}

class Fft final : public Operator {
public:
    Fft(const CommPtr &c, Params p, Geometry g)
        : Operator(p.dt, g.domain, g.range), p_(std::move(p)), dimsd_(std::move(g.dimsd)), out_axis_(g.out_axis)
    {
        const int P = c->size(), me = c->rank();
        const DType cdt = p_.dt, rdt = real_of(p_.dt);
        const std::vector<int> &T = p_.axes;
        const int r = T.back();
        const bool along0 = std::find(T.begin(), T.end(), 0) != T.end();
        const auto flag = [&](const std::vector<bool> &f, int a) {
            for (size_t i = 0; i < T.size(); ++i)
                if (T[i] == a) return static_cast<bool>(f[i]);
            return false;
        };
        const int d = exchange_axis(p_);  // the split between the two passes
        const bool r2c = p_.real && r != 0;  // the r2c axis is transformed first

        Shape shape = with(p_.dims, 0, split_count(p_.dims[0], P, me));
        DType dt = cdt;
        if (r2c) {
            push(make_step(Step::to_real, shape, shape, cdt, rdt));
            dt = rdt;
        } else if (!p_.clinear) {
            push(make_step(Step::real_part, shape, shape, cdt, cdt));
        }
        for (size_t i = 0; i < T.size(); ++i)
            if (p_.ifs[i] && T[i] != 0) push_roll(shape, dt, T[i], -(p_.dims[static_cast<size_t>(T[i])] / 2));
        std::vector<int> first;  // the axes transformed while split along axis 0
        for (int a : T)
            if (a != 0) first.push_back(a);
        if (!first.empty()) {
            const Shape out = r2c ? with(shape, r, dimsd_[static_cast<size_t>(r)]) : shape;
            push_fft(shape, out, dt, first, r2c);
            shape = out;
            dt = cdt;
            if (r2c) push_bins(shape, r, std::sqrt(2.0), 1 / std::sqrt(2.0));
        }
        if (along0) {
            if (flag(p_.ffs, d)) push_roll(shape, dt, d, shape[static_cast<size_t>(d)] / 2);
            const Shape M = with(shape, 0, p_.dims[0]);  // the global shape in between
            const Shape S2 = with(M, d, split_count(M[static_cast<size_t>(d)], P, me));
            push_transpose(*c, shape, S2, M, d, false);
            shape = S2;
            if (flag(p_.ifs, 0)) push_roll(shape, dt, 0, -(p_.dims[0] / 2));
            push_fft(shape, shape, dt, {0}, false);
            if (p_.real && r == 0) {
                const Shape cut = with(shape, 0, dimsd_[0]);
                push(make_step(Step::truncate, shape, cut, cdt, cdt));
                shape = cut;
                push_bins(shape, 0, std::sqrt(2.0), std::sqrt(2.0));
            }
        }
        for (size_t i = 0; i < T.size(); ++i)
            if (p_.ffs[i] && !(along0 && T[i] == d)) push_roll(shape, dt, T[i], dimsd_[static_cast<size_t>(T[i])] / 2);
        if (along0 && p_.rows) {  // back to a split along axis 0
            const Shape M = with(shape, d, dimsd_[static_cast<size_t>(d)]);
            push_transpose(*c, with(M, 0, split_count(M[0], P, me)), shape, M, d, true);
        }
        if (p_.unit) {
            double n = 1;
            for (int a : T) n *= static_cast<double>(p_.dims[static_cast<size_t>(a)]);
            scale_ = 1 / n;
        }

    }

    bool native(Space sp) const override { return sp == Space::host || on_device(sp); }

    WorkPtr make_work(const Exec &e) const override
    {
        auto w = std::make_unique<FftWork>();
        const Space ws = on_device(e.space) ? Space::device : Space::host;
        if (ws == Space::device) use_device(e.device);
        for (Buffer &b : w->buf) b = Buffer::allocate(ws, static_cast<size_t>(work_bytes_));
        w->xfer = Buffer::allocate(ws, static_cast<size_t>(xfer_bytes_));
        if (ws == Space::device) {
            w->dev = device_plans(e.device);
            w->fft_work = Buffer::allocate(Space::device, w->dev->work);
            reserve_staging(e, staged_elems_);
        } else if (e.space != Space::host) {
            const int64_t most = std::max(domain_->local_size(), range_->local_size());
            const size_t bytes = checked_bytes(most, dtype_, "the FFT's host staging buffer");
            w->stage_in = Buffer::allocate(Space::host, bytes);
            w->stage_out = Buffer::allocate(Space::host, bytes);
            count_twin();
        }
        return w;
    }

    void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const override
    {
        if (on_device(x.space())) return apply_device(x, y, adjoint, *static_cast<FftWork *>(w));
        FftWork &fw = *static_cast<FftWork *>(w);
        const Exec e = comm().exec(Space::host);
        const bool staged = x.space() != Space::host;
        const size_t es = dtype_size(dtype_);
        const void *src = x.data();
        void *out = y.data();
        if (staged) {  // a failed copy on one rank must not leave the others in the exchange
            agree_on(*this, comm(), comm::capture([&] {
                         copy_bytes(Space::host, fw.stage_in.data(), x.space(), x.data(),
                                    static_cast<size_t>(x.local_size()) * es, x.exec().stream);
                     }),
                     true);
            src = fw.stage_in.data();
            out = fw.stage_out.data();
        }
        std::optional<Error> err = pipeline(e, adjoint, src, out, fw, false);
        if (staged && !err)
            err = comm::capture([&] {
                copy_bytes(y.space(), y.data(), Space::host, out, static_cast<size_t>(y.local_size()) * es,
                           y.exec().stream);
            });
        agree_on(*this, comm(), err, staged);
    }

    // Device arrays, computed on the device. Buffers cuFFT cannot take (aligned for the real
    // type only: wrapped user memory) are copied through the Work's blocks.
    void apply_device(const DistributedArray &x, DistributedArray &y, bool adjoint, FftWork &fw) const
    {
        const Exec e = x.exec();
        const size_t n = steps_.size();
        const bool copy_in = !kernels::fft_aligned(x.data(), dtype_), copy_out = !kernels::fft_aligned(y.data(), dtype_);
        // the first step writes buf[0] (or the output), so x's copy goes to buf[1]; the last
        // writes buf[(n - 1) % 2], which its input never is
        const void *src = copy_in ? fw.buf[1].data() : x.data();
        void *out = copy_out ? fw.buf[(n - 1) % 2].data() : y.data();
        std::optional<Error> err;
        if (copy_in) err = comm::capture([&] { kernels::copy(e, dtype_, x.local_size(), x.data(), fw.buf[1].data()); });
        err = pipeline(e, adjoint, src, out, fw, true, err);  // every rank meets every agreement
        if (!err && copy_out) err = comm::capture([&] { kernels::copy(e, dtype_, y.local_size(), out, y.data()); });
        agree_on(*this, comm(), err, true);
    }

    // Runs the steps from src to out, then the norm, on host or device blocks (device: the
    // Work's plans). The local work before each exchange is agreed there (a failure on one
    // rank fails every rank before the exchange); the error of the local work after the last
    // exchange is returned, for the caller to agree on. err: a local error from before (the
    // local steps are skipped, the agreements still met).
    std::optional<Error> pipeline(const Exec &e, bool adjoint, const void *src, void *out, FftWork &fw, bool device,
                                  std::optional<Error> err = std::nullopt) const
    {
        const auto local = [&](auto &&f) {
            if (!err) err = comm::capture(f);
        };
        const size_t n = steps_.size();
        for (size_t k = 0; k < n; ++k) {
            const size_t i = adjoint ? n - 1 - k : k;
            const Step &s = steps_[i];
            void *dst = k + 1 == n ? out : fw.buf[k % 2].data();
            if (s.kind == Step::transpose) {
                const bool back = adjoint != s.reverse;  // to the split along axis 0
                if (!back) local([&] { pack(e, s, src, fw); });
                agree_on(*this, comm(), err, device);
                err.reset();
                s.xplan[back]->start(e, back ? src : fw.xfer.data(), back ? fw.xfer.data() : dst).wait();
                if (back) local([&] { unpack(e, s, fw, dst); });
            } else {
                const kernels::FftPlan *plan = device ? fw.dev->plan[i][adjoint].get() : s.plan[adjoint].get();
                local([&] { run(e, s, adjoint, src, dst, plan, fw); });
            }
            src = dst;
        }
        if (scale_ != 1)
            local([&] {
                const Scalar f = make_scalar(dtype_, scale_, 0, "the FFT norm");
                kernels::scale(e, dtype_, plm::product(adjoint ? steps_.front().in : steps_.back().out), f.data(), out);
            });
        return err;
    }

    const Params &params() const { return p_; }
    const Shape &dimsd() const { return dimsd_; }
    int out_axis() const { return out_axis_; }

private:
    bool on_device(Space sp) const { return sp == Space::device && kernels::device_fft_available() && device_ok_; }

    // The device plans of every FFT step on device, made on the first call for it and kept.
    std::shared_ptr<const DevicePlans> device_plans(int device) const
    {
        std::lock_guard<std::mutex> g(dev_lock_);
        std::shared_ptr<const DevicePlans> &slot = dev_[device];
        if (slot) return slot;
        auto d = std::make_shared<DevicePlans>();
        d->plan.resize(steps_.size());
        using K = kernels::FftKind;
        for (size_t i = 0; i < steps_.size(); ++i) {
            const Step &s = steps_[i];
            if (s.kind != Step::fft || !s.plan[0]) continue;
            for (int a = 0; a < 2; ++a) {
                const K k = s.r2c ? (a ? K::c2r : K::r2c) : (a ? K::c2c_backward : K::c2c_forward);
                d->plan[i][a] = std::make_unique<kernels::FftPlan>(Space::device, s.in_dt, k, s.in, s.axes, device);
                d->work = std::max(d->work, d->plan[i][a]->work_bytes());
            }
        }
        slot = std::move(d);
        return slot;
    }

    void push(Step s)
    {
        work_bytes_ = std::max(work_bytes_, s.bytes());
        steps_.push_back(std::move(s));
    }

    void push_roll(const Shape &shape, DType dt, int axis, int64_t shift)
    {
        Step s = make_step(Step::roll, shape, shape, dt, dt);
        s.axis = axis;
        s.shift = shift;
        push(std::move(s));
    }

    // FFTs over axes (the last one r2c when r2c) from a block of shape in (real side for r2c)
    // to one of shape out.
    void push_fft(const Shape &in, const Shape &out, DType dt, const std::vector<int> &axes, bool r2c)
    {
        Step s = make_step(Step::fft, in, out, dt, r2c ? complex_of(dt) : dt);
        s.axes = axes;
        s.r2c = r2c;
        if (r2c) {  // cuFFT's real passes: see kernels::device_fft_layout_ok (rank-independent here)
            const size_t r = static_cast<size_t>(axes.back());
            int64_t inner = 1;
            for (size_t a = r + 1; a < in.size(); ++a) inner *= in[a];
            device_ok_ = device_ok_ && (inner <= 1 || (in[r] * inner) % 2 == 0);
        }
        if (plm::product(in) > 0) {
            using K = kernels::FftKind;
            s.plan[0] = std::make_shared<kernels::FftPlan>(Space::host, dt, r2c ? K::r2c : K::c2c_forward, in, axes);
            s.plan[1] = std::make_shared<kernels::FftPlan>(Space::host, dt, r2c ? K::c2r : K::c2c_backward, in, axes);
        }
        push(std::move(s));
    }

    // Bins [1, 1 + (n - 1) / 2) of axis (n its real length) times factor[0] forward,
    // factor[1] adjoint: the ones rfft keeps once of two.
    void push_bins(const Shape &shape, int axis, double fwd, double adj)
    {
        Step s = make_step(Step::bins, shape, shape, dtype_, dtype_);
        s.axis = axis;
        s.factor[0] = fwd;
        s.factor[1] = adj;
        s.b0 = 1;
        s.b1 = 1 + (p_.dims[static_cast<size_t>(axis)] - 1) / 2;
        push(std::move(s));
    }

    // Between rank's blocks of M split along axis 0 (rows) and split along d (cols), as
    // DistributedArray::redistribute, with plans for both directions made here: forward
    // rows -> cols, or cols -> rows when back.
    void push_transpose(const comm::Communicator &c, const Shape &rows, const Shape &cols, const Shape &M, int d,
                        bool back)
    {
        const int P = c.size();
        Step s = back ? make_step(Step::transpose, cols, rows, dtype_, dtype_)
                      : make_step(Step::transpose, rows, cols, dtype_, dtype_);
        s.reverse = back;
        s.rows = rows;
        s.origin.assign(rows.size(), 0);
        std::vector<int64_t> sc, rc;
        int64_t soff = 0, roff = 0;
        for (int q = 0; q < P; ++q) {
            const int64_t nd = split_count(M[static_cast<size_t>(d)], P, q), n0 = split_count(M[0], P, q);
            s.sbox.push_back(with(rows, d, nd));
            s.sat.push_back(with(Shape(rows.size(), 0), d, split_start(M[static_cast<size_t>(d)], P, q)));
            sc.push_back(plm::product(s.sbox.back()));
            rc.push_back(plm::product(with(cols, 0, n0)));  // rows of M[0] split along axis 0
            s.sd.push_back(soff);
            s.rd.push_back(roff);
            soff += sc.back();
            roff += rc.back();
        }
        s.xplan[0] = std::make_shared<comm::AlltoallvPlan>(c, dtype_, sc, s.sd, rc, s.rd);
        s.xplan[1] = std::make_shared<comm::AlltoallvPlan>(c, dtype_, rc, s.rd, sc, s.sd);
        xfer_bytes_ = std::max(xfer_bytes_, plm::product(rows) * static_cast<int64_t>(dtype_size(dtype_)));
        staged_elems_ = std::max(staged_elems_, plm::product(rows) + plm::product(cols));  // alltoallv: both sides
        push(std::move(s));
    }

    // One local step forward (in -> out) or adjoint (out-shaped src -> in-shaped dst); plan:
    // the FFT step's plan for this direction and space (null on an empty block).
    void run(const Exec &e, const Step &s, bool adjoint, const void *src, void *dst, const kernels::FftPlan *plan,
             FftWork &w) const
    {
        const Shape &from = adjoint ? s.out : s.in;
        const int64_t n = plm::product(from);
        const DType rdt = real_of(dtype_);
        const unsigned char zero[16] = {};
        switch (s.kind) {
        case Step::to_real:  // complex <-> its real part
            if (!adjoint) return kernels::copy_slab(e, rdt, n, 1, src, 2, 0, dst, 1, 0, 1);
            kernels::fill(e, dtype_, n, zero, dst);
            return kernels::copy_slab(e, rdt, n, 1, src, 1, 0, dst, 2, 0, 1);
        case Step::real_part:
            kernels::fill(e, dtype_, n, zero, dst);
            return kernels::copy_slab(e, rdt, n, 1, src, 2, 0, dst, 2, 0, 1);
        case Step::roll:
            return kernels::roll(e, s.in_dt, static_cast<int>(s.in.size()), s.in.data(), s.axis,
                                 adjoint ? -s.shift : s.shift, src, dst);
        case Step::fft:
            if (plan) plan->execute(e, src, dst, w.fft_work.data());
            return;
        case Step::bins: {
            kernels::copy(e, dtype_, n, src, dst);
            const Scalar f = make_scalar(dtype_, s.factor[adjoint], 0, "the real FFT's bin weight");
            const int64_t outer = Layout::outer(s.in, s.axis), inner = Layout::inner(s.in, s.axis),
                          len = s.in[static_cast<size_t>(s.axis)];
            if (s.b1 > s.b0) kernels::scale_slab(e, dtype_, outer, len, inner, s.b0, s.b1 - s.b0, f.data(), dst);
            return;
        }
        case Step::truncate: {  // along axis 0: keep the first out[0] entries, or pad with zeros
            const int64_t inner = Layout::inner(s.in, 0), full = s.in[0], cut = s.out[0];
            if (!adjoint) return kernels::copy_slab(e, dtype_, 1, inner, src, full, 0, dst, cut, 0, cut);
            kernels::fill(e, dtype_, plm::product(s.in), zero, dst);
            return kernels::copy_slab(e, dtype_, 1, inner, src, cut, 0, dst, full, 0, cut);
        }
        case Step::transpose: break;  // pipeline(): pack, exchange, unpack
        }
    }

    // A transpose: the blocks along axis 0 (received going to d, sent going back) lie in rank
    // order in the block split along d, so they go straight to dst / from src, unpacked; the
    // rows-side blocks are packed into (to d) or unpacked from (back) the exchange buffer.
    void pack(const Exec &e, const Step &s, const void *src, FftWork &w) const
    {
        const int nd = static_cast<int>(s.rows.size());
        for (size_t q = 0; q < s.sbox.size(); ++q)
            kernels::copy_box(e, dtype_, nd, src, s.rows.data(), s.sat[q].data(), at(w.xfer.data(), s.sd[q], dtype_),
                              s.sbox[q].data(), s.origin.data(), s.sbox[q].data());
    }
    void unpack(const Exec &e, const Step &s, FftWork &w, void *dst) const
    {
        const int nd = static_cast<int>(s.rows.size());
        for (size_t q = 0; q < s.sbox.size(); ++q)
            kernels::copy_box(e, dtype_, nd, at(w.xfer.data(), s.sd[q], dtype_), s.sbox[q].data(), s.origin.data(), dst,
                              s.rows.data(), s.sat[q].data(), s.sbox[q].data());
    }

    Params p_;
    Shape dimsd_;
    int out_axis_ = 0;
    double scale_ = 1;
    std::vector<Step> steps_;
    int64_t work_bytes_ = 0, xfer_bytes_ = 0, staged_elems_ = 0;
    bool device_ok_ = true;  // every step runs on device (else device arrays are staged to host)
    mutable std::mutex dev_lock_;
    mutable std::map<int, std::shared_ptr<const DevicePlans>> dev_;  // by device
};

const Fft &fft_of(const Operator &op)
{
    const Fft *f = dynamic_cast<const Fft *>(&op);
    PLM_REQUIRE(f, PLM_ERR_INVALID_ARG, "not an FFT operator (made by plm_op_fftnd)");
    return *f;
}

Params check(const FftSpec &s)
{
    Params p;
    const DType given = from_public(s.dtype);
    p.dt = complex_of(given);
    p.real = s.real != 0;
    p.clinear = !p.real && is_complex(given);
    PLM_REQUIRE(!s.dims.empty(), PLM_ERR_INVALID_ARG, "the FFT needs ndim >= 1 dims");
    for (int64_t v : s.dims) PLM_REQUIRE(v >= 1, PLM_ERR_INVALID_ARG, "dimensions must be >= 1 (got %lld)",
                                         static_cast<long long>(v));
    checked_bytes(checked_product(s.dims, "the FFT's element count"), p.dt, "the FFT's model in bytes");
    p.dims = s.dims;
    const int nd = static_cast<int>(s.dims.size());
    PLM_REQUIRE(!s.axes.empty(), PLM_ERR_INVALID_ARG, "the FFT needs naxes >= 1 axes");
    for (int a : s.axes) {
        const int b = normalize_axis(a, nd);
        PLM_REQUIRE(std::find(p.axes.begin(), p.axes.end(), b) == p.axes.end(), PLM_ERR_INVALID_ARG,
                    "axis %d appears twice in the FFT's axes", b);
        p.axes.push_back(b);
    }
    PLM_REQUIRE(nd >= 2 || p.axes[0] != 0, PLM_ERR_INVALID_ARG,
                "an FFT along the distributed axis 0 needs ndim >= 2 (slab decomposition)");
    PLM_REQUIRE(s.sampling.size() == p.axes.size() && s.ifftshift_before.size() == p.axes.size() &&
                    s.fftshift_after.size() == p.axes.size(),
                PLM_ERR_INVALID_ARG, "sampling and the shift flags take one value per axis");
    for (double v : s.sampling)
        PLM_REQUIRE(std::isfinite(v) && v != 0, PLM_ERR_INVALID_ARG, "sampling must be finite and non-zero (got %g)", v);
    p.sampling = s.sampling;
    PLM_REQUIRE(s.norm == PLM_FFT_NORM_NONE || s.norm == PLM_FFT_NORM_1_N, PLM_ERR_INVALID_ARG,
                "norm must be PLM_FFT_NORM_NONE or PLM_FFT_NORM_1_N (got %d)", s.norm);
    p.unit = s.norm == PLM_FFT_NORM_1_N;
    PLM_REQUIRE(s.real == 0 || s.real == 1, PLM_ERR_INVALID_ARG, "real must be 0 or 1 (got %d)", s.real);
    for (const std::vector<int> *f : {&s.ifftshift_before, &s.fftshift_after})
        for (int v : *f) PLM_REQUIRE(v == 0 || v == 1, PLM_ERR_INVALID_ARG, "shift flags must be 0 or 1 (got %d)", v);
    PLM_REQUIRE(s.output == PLM_FFT_OUTPUT_FEWEST_EXCHANGES || s.output == PLM_FFT_OUTPUT_AXIS0, PLM_ERR_INVALID_ARG,
                "output must be PLM_FFT_OUTPUT_FEWEST_EXCHANGES or PLM_FFT_OUTPUT_AXIS0 (got %d)", s.output);
    p.rows = s.output == PLM_FFT_OUTPUT_AXIS0;
    p.ifs.assign(s.ifftshift_before.begin(), s.ifftshift_before.end());
    p.ffs.assign(s.fftshift_after.begin(), s.fftshift_after.end());
    PLM_REQUIRE(kernels::fft_available(), PLM_ERR_NOT_SUPPORTED,
                "this build has no FFTW: the FFT operator is not available");
    return p;
}

}  // namespace

Operator::Ptr fftnd(comm::Agreement &ag, const CommPtr &c, const FftSpec &s)
{
    Params p;
    ag.check([&] { p = check(s); });
    ag.fold(s.dtype);
    ag.fold_all(s.dims);
    ag.fold_all(s.axes);
    ag.fold(static_cast<int64_t>(s.sampling.size()));
    for (double v : s.sampling) ag.fold_double(v);
    ag.fold(s.norm);
    ag.fold(s.real);
    ag.fold_all(s.ifftshift_before);
    ag.fold_all(s.fftshift_after);
    ag.fold(s.output);
    ag.run();
    return comm::finish_collective(*c, "op_fftnd", {}, [&]() -> Operator::Ptr { return std::make_shared<Fft>(c, p, geometry(c, p)); });
}

void fft_range(const Operator &op, Shape *dimsd, int *axis)
{
    const Fft &f = fft_of(op);
    *dimsd = f.dimsd();
    *axis = f.out_axis();
}

std::vector<double> fft_frequencies(const Operator &op, int i)
{
    const Fft &f = fft_of(op);
    const Params &p = f.params();
    PLM_REQUIRE(i >= 0 && i < static_cast<int>(p.axes.size()), PLM_ERR_INVALID_ARG,
                "FFT axis index %d is not in 0..%zu", i, p.axes.size() - 1);
    const size_t k = static_cast<size_t>(i);
    const int64_t n = p.dims[static_cast<size_t>(p.axes[k])];
    const double step = 1 / (static_cast<double>(n) * p.sampling[k]);
    std::vector<double> out;
    if (p.real && k + 1 == p.axes.size()) {
        for (int64_t j = 0; j <= n / 2; ++j) out.push_back(static_cast<double>(j) * step);  // rfftfreq
    } else {
        for (int64_t j = 0; j < n; ++j) out.push_back(static_cast<double>(j <= (n - 1) / 2 ? j : j - n) * step);
    }
    if (p.ffs[k]) std::rotate(out.begin(), out.end() - static_cast<std::ptrdiff_t>(out.size() / 2), out.end());
    return out;
}

}  // namespace plm::ops
