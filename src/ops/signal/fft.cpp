// The distributed FFT (PyLops-MPI's MPIFFTND, and PyLops' FFT / FFT2D / FFTND semantics with
// nffts), slab decomposition. The input is an N-D array split along axis 0 (default split),
// passed as a 1-D SCATTER vector like the stencil operators' models. An apply is a fixed
// pipeline of steps made once, with every FFT plan and exchange plan, when the operator is
// made; which buffer each step reads and writes is fixed then too (Route), per direction, so a
// step runs in place where it can and the last one writes the output.
//
//   local (axis 0 not transformed, or one rank): [real part] [ifftshift rolls] [pad / crop]
//     one FFTW plan over every FFT axis (r2c straight from the real parts of the complex
//     input), [weights: the real transform's sqrt(2) bins and the norm, one pass], [fftshift
//     rolls]. One rank is FFTW's own multi-axis plan of the whole array.
//   N-D, axis 0 transformed on P > 1 ranks: the FFTs of the other axes first (split along
//     axis 0), one all-to-all to a split along the exchange axis d (the first axis off the
//     transform, else axis 1), the FFT along axis 0 last, in place in the output; with
//     PLM_FFT_OUTPUT_AXIS0 a second all-to-all brings it back to rows of axis 0. The packing
//     around an all-to-all is one box copy per peer that also applies the weights (the bins
//     and the norm ride on a copy the exchange makes anyway); this rank's own block goes
//     straight to its place, never through the exchange buffer; the received blocks land in
//     place (they lie in rank order), unpacked only on the way back.
//   1-D on P > 1 ranks: n = n1 n2 (n1 the largest divisor <= sqrt n), the six-step algorithm
//     through three all-to-alls: x as [n2][n1] to columns, FFTs of length n2, twiddles
//     w^(j1 k2) (the norm folded in), to rows, FFTs of length n1 writing their output
//     transposed (FFTW's strides: the local transpose is free), to the output's chunks.
//     ifftshift / fftshift along the split axis move data between ranks (a planned exchange).
//
// The adjoint runs the same steps backwards, each one's adjoint. nffts: an FFT axis of n
// points is cropped or zero-padded to nfft before its transform (PyLops' s=nffts); along axis
// 0 the exchange does it. Real transforms (real = 1) use r2c / c2r plans where the real axis
// is transformed locally; along the split axis they run complex and keep the first nfft/2+1
// bins. The norm's 1 / N scales the output of both directions.
//
// Planning effort (estimate, measure, patient, exhaustive) is agreed over the ranks; when it
// measures on several ranks, rank 0's wisdom is broadcast and every rank plans again from it,
// so ranks with the same local problem run the same plan.
//
// Device arrays run the same steps on the device: the same kernels (kernels.hpp dispatches on
// the memory space), the FFT steps through cuFFT plans (kernels/fft.hpp) made once per device
// by the first device apply's make_work (before that apply's agreement) and kept by the
// operator with the twiddle tables, the exchanges on device buffers (the communicator's device
// backend). The local work between two exchanges is agreed before the next exchange (a device
// fault on one rank fails every rank there, not in the exchange).
#include "ops/signal/fft.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <string>

#include "kernels/fft.hpp"
#include "kernels/kernels.hpp"

namespace plm::ops {

namespace {

using kernels::BoxScale;
using kernels::FftEffort;
using kernels::FftKind;

DType complex_of(DType dt) { return dt == DType::f32 || dt == DType::c64 ? DType::c64 : DType::c128; }

Shape with(Shape s, int axis, int64_t n)
{
    s[static_cast<size_t>(axis)] = n;
    return s;
}

int64_t flat_index(const Shape &shape, const Shape &idx)
{
    int64_t f = 0;
    for (size_t k = 0; k < shape.size(); ++k) f = f * shape[k] + idx[k];
    return f;
}

// The checked arguments.
struct Params {
    DType dt = DType::c128;  // the operator's (complex) dtype
    bool clinear = true;     // false: real input (real = 1, or a real dtype given)
    bool real = false;
    Shape dims;                  // the input's global shape
    std::vector<int> axes;
    Shape nffts;                 // per FFT axis
    std::vector<double> sampling;
    bool unit = false;           // norm 1/n
    std::vector<bool> ifs, ffs;  // per FFT axis
    bool rows = false;           // the output split along axis 0 (PLM_FFT_OUTPUT_AXIS0)
    FftEffort effort = FftEffort::measure;

    int ndim() const { return static_cast<int>(dims.size()); }
    int r() const { return axes.back(); }  // the real transform's axis
    // the index of axis a in axes, or -1
    int index(int a) const
    {
        for (size_t i = 0; i < axes.size(); ++i)
            if (axes[i] == a) return static_cast<int>(i);
        return -1;
    }
    bool in_T(int a) const { return index(a) >= 0; }
    bool ifs_of(int a) const { return in_T(a) && ifs[static_cast<size_t>(index(a))]; }
    bool ffs_of(int a) const { return in_T(a) && ffs[static_cast<size_t>(index(a))]; }
    int64_t nfft(int a) const { return in_T(a) ? nffts[static_cast<size_t>(index(a))] : dims[static_cast<size_t>(a)]; }
    // The transform's global shape: dims with every FFT axis at its nfft.
    Shape full() const
    {
        Shape s = dims;
        for (size_t i = 0; i < axes.size(); ++i) s[static_cast<size_t>(axes[i])] = nffts[i];
        return s;
    }
    // The output's global shape: full(), with nfft / 2 + 1 bins along r when real.
    Shape dimsd() const
    {
        Shape s = full();
        if (real) s[static_cast<size_t>(r())] = s[static_cast<size_t>(r())] / 2 + 1;
        return s;
    }
    // 1/N of the norm (N the product of the nffts), or 1.
    double norm() const
    {
        double n = 1;
        for (int64_t v : nffts) n *= static_cast<double>(v);
        return unit ? 1 / n : 1;
    }
};

// The axis the data is split along between the passes when axis 0 is transformed: the first
// axis off the transform, else axis 1.
int exchange_axis(const Params &p)
{
    int d = 1;
    for (int a = p.ndim() - 1; a >= 1; --a)
        if (!p.in_T(a)) d = a;
    return d;
}

// ---- boxes and exchanges ----------------------------------------------------------------

struct Box {
    Shape start, len;
    int64_t size() const { return plm::product(len); }
};

// The boxes of the C-order array of shape M that cover its flat range [lo, hi), in flat
// order: at most two partial boxes per dimension and one of whole rows.
void flat_boxes(const Shape &M, size_t k, Shape &at, int64_t lo, int64_t hi, std::vector<Box> &out)
{
    if (lo >= hi) return;
    const size_t nd = M.size();
    int64_t inner = 1;
    for (size_t j = k + 1; j < nd; ++j) inner *= M[j];
    const auto rows_box = [&](int64_t r0, int64_t r1) {
        Box b{at, Shape(nd, 1)};
        b.start[k] = r0;
        b.len[k] = r1 - r0;
        for (size_t j = k + 1; j < nd; ++j) {
            b.start[j] = 0;
            b.len[j] = M[j];
        }
        out.push_back(b);
    };
    if (k + 1 == nd) return rows_box(lo, hi);
    int64_t r0 = lo / inner;
    const int64_t r1 = hi / inner;
    if (r0 == r1) {
        at[k] = r0;
        return flat_boxes(M, k + 1, at, lo - r0 * inner, hi - r0 * inner, out);
    }
    if (lo % inner) {
        at[k] = r0;
        flat_boxes(M, k + 1, at, lo % inner, inner, out);
        ++r0;
    }
    if (r1 > r0) rows_box(r0, r1);
    if (hi % inner) {
        at[k] = r1;
        flat_boxes(M, k + 1, at, 0, hi % inner, out);
    }
}

// The boxes of M's flat range [lo, hi) restricted to [a, a + w) along axis d, in flat order.
std::vector<Box> range_boxes(const Shape &M, int64_t lo, int64_t hi, int d, int64_t a, int64_t w)
{
    std::vector<Box> all, out;
    Shape at(M.size(), 0);
    flat_boxes(M, 0, at, lo, hi, all);
    const size_t k = static_cast<size_t>(d);
    for (Box b : all) {
        const int64_t s = std::max(b.start[k], a), e = std::min(b.start[k] + b.len[k], a + w);
        if (e <= s) continue;
        b.start[k] = s;
        b.len[k] = e - s;
        out.push_back(b);
    }
    return out;
}

// A box copy between this rank's rows-side block and a cols-side place: from rows + roff with
// the strides of M, to place + coff with those of cshape (a packed block: cshape = box); the
// weights' axis index of the box's first entry is first.
struct Piece {
    int64_t roff = 0, coff = 0;
    Shape cshape, box;
    int64_t first = 0;
};

// A transpose between the rows side - rank p holds the flat chunk [f_p, f_p + n_p) of a
// C-order array M (whole rows of axis 0 for the N-D FFT, any chunks for the 1-D one), of
// which the prefix [0, L) is exchanged (the rest of M is zero on the cols side, the rest of
// the chunks zero on the rows side: a crop or a pad) - and the cols side, rank q holding
// M[..., a_q : a_q + w_q, ...] along axis d (the default split) in C order. Every rank's
// covered flat range restricted to q's columns is contiguous in q's block, and those ranges
// lie in rank order: the cols side receives in place and sends straight from its block; the
// rows side packs (to cols) or unpacks (to rows) box copies, weighted (w).
struct Transpose {
    Shape M;
    int d = 1;
    int64_t f = 0, n = 0;       // my chunk (flat start, length: my rows-side block)
    Shape cols;                 // my cols-side block's shape
    bool fill_cols = false, fill_rows = false;  // entries no piece covers
    std::vector<std::vector<Piece>> pieces;  // per peer: my rows-side boxes for its columns
    std::vector<int64_t> sc, sd, rc, rd;     // packed blocks in the exchange buffer (s), cols-side blocks (r)
    std::shared_ptr<comm::AlltoallvPlan> plan[2];  // [0] rows -> cols, [1] cols -> rows
    BoxScale w[2];              // rows-side weights going to cols [0] and to rows [1] (axis, b0, b1, factors)
    bool weighted = false;

    int64_t xfer() const { return std::accumulate(sc.begin(), sc.end(), int64_t{0}); }
    int64_t staged() const { return xfer() + plm::product(cols); }
};

// f, n: every rank's chunk; L: the prefix of M exchanged.
std::shared_ptr<Transpose> make_transpose(const comm::Communicator &c, DType dt, const Shape &M, int d,
                                          const std::vector<int64_t> &f, const std::vector<int64_t> &n, int64_t L)
{
    const int P = c.size(), me = c.rank();
    auto t = std::make_shared<Transpose>();
    t->M = M;
    t->d = d;
    t->f = f[static_cast<size_t>(me)];
    t->n = n[static_cast<size_t>(me)];
    const size_t kd = static_cast<size_t>(d);
    const auto col0 = [&](int q) { return split_start(M[kd], P, q); };
    const auto ncol = [&](int q) { return split_count(M[kd], P, q); };
    t->cols = with(M, d, ncol(me));
    const auto covered = [&](int p, int64_t *lo, int64_t *hi) {
        *lo = std::min(f[static_cast<size_t>(p)], L);
        *hi = std::min(f[static_cast<size_t>(p)] + n[static_cast<size_t>(p)], L);
    };
    int64_t lo = 0, hi = 0;
    covered(me, &lo, &hi);
    t->fill_rows = hi - lo < t->n;
    t->fill_cols = L < plm::product(M) && plm::product(t->cols) > 0;
    t->pieces.resize(static_cast<size_t>(P));
    int64_t soff = 0;
    for (int q = 0; q < P; ++q) {
        int64_t packed = 0;
        for (const Box &b : range_boxes(M, lo, hi, d, col0(q), ncol(q))) {
            Piece pc;
            pc.roff = flat_index(M, b.start) - t->f;
            pc.box = b.len;
            if (q == me) {
                pc.cshape = t->cols;
                pc.coff = flat_index(t->cols, with(b.start, d, b.start[kd] - col0(me)));
            } else {
                pc.cshape = b.len;
                pc.coff = packed;
            }
            pc.first = flat_index(M, b.start);  // the weights find the box's index along their axis here
            packed += b.size();
            t->pieces[static_cast<size_t>(q)].push_back(pc);
        }
        t->sc.push_back(q == me ? 0 : packed);
        t->sd.push_back(soff);
        if (q != me) soff += packed;
    }
    // cols side: what each rank's covered range holds of my columns, in rank order
    int64_t roff = 0;
    for (int p = 0; p < P; ++p) {
        int64_t plo = 0, phi = 0;
        covered(p, &plo, &phi);
        int64_t cnt = 0;
        for (const Box &b : range_boxes(M, plo, phi, d, col0(me), ncol(me))) cnt += b.size();
        t->rc.push_back(p == me ? 0 : cnt);
        t->rd.push_back(roff);
        roff += cnt;
    }
    t->plan[0] = std::make_shared<comm::AlltoallvPlan>(c, dt, t->sc, t->sd, t->rc, t->rd);
    t->plan[1] = std::make_shared<comm::AlltoallvPlan>(c, dt, t->rc, t->rd, t->sc, t->sd);
    return t;
}

// The runs of a roll by s (new[i] = old[(i - s) mod n]) that the block [dlo, dhi) takes from
// the block [slo, shi), in destination order: (dst, src, len) in global indices.
struct Run {
    int64_t dst, src, len;
};
std::vector<Run> roll_runs(int64_t n, int64_t s, int64_t dlo, int64_t dhi, int64_t slo, int64_t shi)
{
    std::vector<Run> out;
    for (int64_t i = dlo; i < dhi;) {
        const int64_t j = ((i - s) % n + n) % n;
        const int64_t len = std::min(dhi - i, n - j);
        const int64_t lo = std::max(j, slo), h = std::min(j + len, shi);
        if (h > lo) out.push_back({i + (lo - j), lo, h - lo});
        i += len;
    }
    return out;
}

// A roll of a 1-D array split over the ranks (default split): runs packed per peer, one
// all-to-all, runs unpacked; this rank's own runs copied directly.
struct RollX {
    int64_t mine = 0;                             // my block's global start
    std::vector<std::vector<Run>> send, recv;     // per peer
    std::vector<int64_t> sc, sd, rc, rd;
    std::shared_ptr<comm::AlltoallvPlan> plan;
    int64_t bytes_s = 0, bytes_r = 0;             // elements
};

std::shared_ptr<RollX> make_roll(const comm::Communicator &c, DType dt, int64_t n, int64_t s)
{
    const int P = c.size(), me = c.rank();
    auto x = std::make_shared<RollX>();
    x->mine = split_start(n, P, me);
    const int64_t mhi = x->mine + split_count(n, P, me);
    int64_t so = 0, ro = 0;
    for (int q = 0; q < P; ++q) {
        const int64_t qlo = split_start(n, P, q), qhi = qlo + split_count(n, P, q);
        x->send.push_back(roll_runs(n, s, qlo, qhi, x->mine, mhi));
        x->recv.push_back(roll_runs(n, s, x->mine, mhi, qlo, qhi));
        int64_t ns = 0, nr = 0;
        for (const Run &r : x->send.back()) ns += r.len;
        for (const Run &r : x->recv.back()) nr += r.len;
        x->sc.push_back(q == me ? 0 : ns);
        x->rc.push_back(q == me ? 0 : nr);
        x->sd.push_back(so);
        x->rd.push_back(ro);
        if (q != me) {
            so += ns;
            ro += nr;
        }
    }
    x->bytes_s = so;
    x->bytes_r = ro;
    x->plan = std::make_shared<comm::AlltoallvPlan>(c, dt, x->sc, x->sd, x->rc, x->rd);
    return x;
}

// ---- the pipeline -------------------------------------------------------------------------

// One step, forward from a block of shape in to one of shape out (complex elements; the real
// side of r2c / c2r is the real parts of complex blocks); the adjoint goes back.
struct Step {
    enum Kind { real_part, roll, resize, fft, weights, transpose, twiddle, droll } kind = fft;
    Shape in, out;
    int axis = 0;            // roll
    int64_t shift = 0;       // roll
    // fft: the axes, the plan shape (the real side for r2c), the kinds of both directions and
    // the transposed spectrum of the 1-D FFT; plans made once the routes are known
    std::vector<int> axes;
    Shape plan_shape;
    bool r2c = false, transposed = false;
    // blocked: a c2c FFT along axes[0] = a run chunk by chunk on host (see push_blocked):
    // chunks of `chunk` (len along a = the axis' length, 1 above, the box below), gathered
    // with the weights w into scratch, transformed there in place, scattered (device: one plan
    // over the block, then the weights in place)
    bool blocked = false;
    // sliced: an r2c / c2r whose axis 0 is a batch axis runs slice by slice on host (each
    // slice's real side de-interleaved into, or c2r'ed out of, a cache-sized real scratch), so
    // FFTW works on contiguous reals and the complex result is written once (device: one plan
    // over the block on the interleaved real side)
    bool sliced = false;
    Shape chunk;
    int split = 0;  // the axis the chunks step along below a (with full axes after it)
    std::shared_ptr<kernels::FftPlan> plan[2];  // forward, adjoint (none on an empty block)
    BoxScale w[2];                                // weights: forward, adjoint
    std::shared_ptr<Transpose> tr;                // transpose
    bool to_cols = true;                          // transpose: the forward direction
    std::shared_ptr<RollX> rx[2];                 // droll: forward, adjoint
    Buffer table[2];                              // twiddle: host factors, forward and adjoint

    // Whether the step may run with its output in its input's buffer.
    bool in_place_ok() const
    {
        return (kind == fft && !r2c && !transposed) || kind == weights || kind == twiddle;  // blocked too
    }
};

// Where the data are: the apply's input (read-only), its output, two work buffers.
enum Loc : int { kIn = 0, kOut = 1, kB0 = 2, kB1 = 3 };

// The buffers each step reads and writes in one direction, in that direction's order.
struct Route {
    std::vector<Loc> src, dst;
};

// The device state of an operator on one device: the FFT steps' plans [step][direction]
// (null for other steps and empty blocks), the largest work area one needs, the twiddle
// tables [step][direction].
struct DevicePlans {
    std::vector<std::array<std::unique_ptr<kernels::FftPlan>, 2>> plan;
    std::vector<std::array<Buffer, 2>> table;
    size_t work = 0;
};

struct FftWork : Work {
    Buffer buf[2], xfer, xfer2;      // the work buffers; the exchanges' packed sides
    Buffer scratch;                  // host: a blocked FFT's chunk
    Buffer stage_in, stage_out;      // host copies of device operands (staged applies)
    Buffer dev_in, dev_out;          // device copies of operands cuFFT cannot take (alignment)
    std::shared_ptr<const DevicePlans> dev;  // device applies: the plans of the device
    Buffer fft_work;                          // and cuFFT's work area
};

// Zeros: the start of every box the pipeline copies (an apply allocates nothing).
constexpr int64_t kOrigin[PLM_MAX_NDIM] = {};

// A blocked FFT (Step::blocked) for strides of kFarStride elements and more, in chunks of
// about kChunk elements (256 KiB of complex128: the chunk and its transform stay in cache).
constexpr int64_t kFarStride = 64;
constexpr int64_t kChunk = 16384;

char *at(const void *p, int64_t elems, DType dt)
{
    return const_cast<char *>(static_cast<const char *>(p)) + elems * static_cast<int64_t>(dtype_size(dt));
}

kernels::FftEffort effort_of(int planning)
{
    switch (planning) {
    case kPlanningEstimate: return FftEffort::estimate;
    case kPlanningPatient: return FftEffort::patient;
    case kPlanningExhaustive: return FftEffort::exhaustive;
    default: return FftEffort::measure;  // kPlanningMeasure and the default
    }
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
    Geometry g;
    g.dimsd = p.dimsd();
    if (p.in_T(0) && !p.rows && p.ndim() >= 2) g.out_axis = exchange_axis(p);
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
        const int P = c->size();
        const bool split0 = p_.in_T(0) && P > 1;  // a transform along the split axis
        if (!split0) build_local();
        else if (p_.ndim() >= 2) build_slabs(*c);
        else build_1d(*c);
        route_[0] = make_route(false);
        route_[1] = make_route(true);
        size_buffers();
        make_plans();
    }

    bool native(Space sp) const override { return sp == Space::host || on_device(sp); }
    bool clinear() const override { return p_.clinear; }

    WorkPtr make_work(const Exec &e) const override
    {
        auto w = std::make_unique<FftWork>();
        const Space ws = on_device(e.space) ? Space::device : Space::host;
        if (ws == Space::device) use_device(e.device);
        for (int i = 0; i < 2; ++i) w->buf[i] = Buffer::allocate(ws, static_cast<size_t>(buf_bytes_[i]));
        w->xfer = Buffer::allocate(ws, static_cast<size_t>(xfer_bytes_));
        w->xfer2 = Buffer::allocate(ws, static_cast<size_t>(xfer2_bytes_));
        if (ws == Space::host) w->scratch = Buffer::allocate(Space::host, static_cast<size_t>(scratch_bytes_));
        if (ws == Space::device) {
            w->dev = device_plans(e.device);
            w->fft_work = Buffer::allocate(Space::device, w->dev->work);
            const size_t es = dtype_size(dtype_);
            w->dev_in = Buffer::allocate(Space::device,
                                         static_cast<size_t>(std::max(domain_->local_size(), range_->local_size())) * es);
            w->dev_out = Buffer::allocate(Space::device, w->dev_in.bytes());
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
    // type only: wrapped user memory) are copied through device buffers of the Work.
    void apply_device(const DistributedArray &x, DistributedArray &y, bool adjoint, FftWork &fw) const
    {
        const Exec e = x.exec();
        const bool copy_in = !kernels::fft_aligned(x.data(), dtype_), copy_out = !kernels::fft_aligned(y.data(), dtype_);
        const void *src = copy_in ? fw.dev_in.data() : x.data();
        void *out = copy_out ? fw.dev_out.data() : y.data();
        std::optional<Error> err;
        if (copy_in) err = comm::capture([&] { kernels::copy(e, dtype_, x.local_size(), x.data(), fw.dev_in.data()); });
        err = pipeline(e, adjoint, src, out, fw, true, err);  // every rank meets every agreement
        if (!err && copy_out) err = comm::capture([&] { kernels::copy(e, dtype_, y.local_size(), out, y.data()); });
        agree_on(*this, comm(), err, true);
    }

    // Runs the steps from src to out on host or device blocks (device: the Work's plans and
    // tables). The local work before each exchange is agreed there (a failure on one rank
    // fails every rank before the exchange); the error of the local work after the last
    // exchange is returned, for the caller to agree on. err: a local error from before (the
    // local steps are skipped, the agreements still met).
    std::optional<Error> pipeline(const Exec &e, bool adjoint, const void *src, void *out, FftWork &fw, bool device,
                                  std::optional<Error> err = std::nullopt) const
    {
        const auto local = [&](auto &&f) {
            if (!err) err = comm::capture(f);
        };
        void *ptr[4] = {const_cast<void *>(src), out, fw.buf[0].data(), fw.buf[1].data()};
        const Route &r = route_[adjoint];
        const size_t n = steps_.size();
        for (size_t k = 0; k < n; ++k) {
            const size_t i = adjoint ? n - 1 - k : k;
            const Step &s = steps_[i];
            const void *from = ptr[r.src[k]];
            void *to = ptr[r.dst[k]];
            if (s.kind == Step::transpose) {
                exchange(e, *s.tr, s.to_cols != adjoint, s.tr->w[adjoint], from, to, fw, device, err);
            } else if (s.kind == Step::droll) {
                roll_exchange(e, *s.rx[adjoint], from, to, fw, device, err);
            } else {
                const kernels::FftPlan *plan = device ? fw.dev->plan[i][adjoint].get() : s.plan[adjoint].get();
                const void *table = s.kind != Step::twiddle ? nullptr
                                    : device           ? fw.dev->table[i][adjoint].data()
                                                       : s.table[adjoint].data();
                local([&] { run(e, s, adjoint, from, to, plan, table, fw); });
            }
        }
        return err;
    }

    const Params &params() const { return p_; }
    const Shape &dimsd() const { return dimsd_; }
    int out_axis() const { return out_axis_; }

    // Plans every FFT step again (after wisdom arrived: planned from it). Not collective.
    void replan() { make_plans(); }

    // A text naming every host plan's problem (shape, axes, kind, options, dtype): equal texts,
    // equal FFTW problems.
    std::string plan_keys() const
    {
        std::string k;
        const size_t n = steps_.size();
        for (size_t i = 0; i < n; ++i) {
            const Step &s = steps_[i];
            for (int adj = 0; adj < 2; ++adj) {
                if (!s.plan[adj]) continue;
                const kernels::FftOptions &o = s.plan[adj]->options();
                k += std::to_string(static_cast<int>(dtype_)) + ':' + std::to_string(static_cast<int>(kind_of(s, adj)));
                for (int64_t v : s.plan_shape) k += ',' + std::to_string(v);
                k += '/';
                for (int a : s.axes) k += std::to_string(a) + ',';
                k += std::to_string(static_cast<int>(o.effort)) + std::to_string(o.in_place) +
                     std::to_string(o.interleaved_real) + std::to_string(o.transposed) + ';';
            }
        }
        return k;
    }

private:
    bool on_device(Space sp) const { return sp == Space::device && kernels::device_fft_available(); }

    // ---- building the steps ----

    // Every FFT axis local: one transform over all of them.
    void build_local()
    {
        const int P = comm().size(), me = comm().rank();
        const std::vector<int> &T = p_.axes;
        Shape shape = with(p_.dims, 0, split_count(p_.dims[0], P, me));
        if (!p_.clinear && !p_.real) push(plain(Step::real_part, shape, shape));
        for (int a : T)
            if (p_.ifs_of(a)) push_roll(shape, a, -(p_.dims[static_cast<size_t>(a)] / 2));
        Shape padded = shape;
        for (int a : T)
            if (a != 0 || P == 1) padded[static_cast<size_t>(a)] = p_.nfft(a);
        if (padded != shape) push(plain(Step::resize, shape, padded));
        const Shape out = p_.real ? with(padded, p_.r(), padded[static_cast<size_t>(p_.r())] / 2 + 1) : padded;
        BoxScale w[2];
        if (p_.real) set_bins(w, p_.r(), 0, p_.nfft(p_.r()), false);
        set_norm(w);
        // the outermost FFT axis strides far: its transform runs blocked (cache-sized chunks,
        // the weights applied on the way in), the other axes' transform before it
        const int a0 = *std::min_element(T.begin(), T.end());
        if (strides_far(out, a0) && !(p_.real && p_.r() == a0)) {
            std::vector<int> rest;
            for (int a : T)
                if (a != a0) rest.push_back(a);
            if (!rest.empty()) push_fft(padded, out, rest, p_.real, false);
            push_blocked(out, a0, w);
        } else {
            push_fft(padded, out, T, p_.real, false);
            if (!w[0].none() || !w[1].none() || p_.real) {  // real: c2r's input must be scratch
                Step s = plain(Step::weights, out, out);
                s.w[0] = w[0];
                s.w[1] = w[1];
                push(std::move(s));
            }
        }
        for (int a : T)
            if (p_.ffs_of(a)) push_roll(out, a, out[static_cast<size_t>(a)] / 2);
    }

    // N-D with axis 0 transformed on P > 1 ranks (see the top of the file).
    void build_slabs(const comm::Communicator &c)
    {
        const int P = c.size(), me = c.rank();
        const std::vector<int> &T = p_.axes;
        const int r = p_.r(), d = exchange_axis(p_);
        const bool r2c = p_.real && r != 0;  // the real axis is transformed first, locally
        Shape shape = with(p_.dims, 0, split_count(p_.dims[0], P, me));
        if (!p_.clinear && !r2c) push(plain(Step::real_part, shape, shape));
        for (int a : T)
            if (a != 0 && p_.ifs_of(a)) push_roll(shape, a, -(p_.dims[static_cast<size_t>(a)] / 2));
        Shape padded = shape;
        for (int a : T)
            if (a != 0) padded[static_cast<size_t>(a)] = p_.nfft(a);
        if (padded != shape) push(plain(Step::resize, shape, padded));
        shape = padded;
        std::vector<int> first;  // the axes transformed while split along axis 0
        for (int a : T)
            if (a != 0) first.push_back(a);
        BoxScale w[2];  // the weights the first exchange applies
        set_norm(w);
        if (!first.empty()) {
            const Shape out = r2c ? with(shape, r, p_.nfft(r) / 2 + 1) : shape;
            push_fft(shape, out, first, r2c, false);
            shape = out;
            if (r2c) {
                if (p_.ffs_of(d) && d == r) {  // the bins before their roll: a step of their own
                    Step s = plain(Step::weights, shape, shape);
                    set_bins(s.w, r, 0, p_.nfft(r), false);
                    push(std::move(s));
                } else {
                    set_bins(w, r, 0, p_.nfft(r), false);
                }
            }
        }
        if (p_.ffs_of(d)) push_roll(shape, d, shape[static_cast<size_t>(d)] / 2);
        // the exchange: M has nfft rows of axis 0 (crop / pad in the exchange), or all of the
        // input's rows when they are rolled first (then cropped or padded after the roll)
        const int64_t D0 = p_.dims[0], N0 = p_.nfft(0);
        const bool roll0 = p_.ifs_of(0);
        const Shape M = with(shape, 0, roll0 ? D0 : N0);
        const int64_t row = plm::product(with(M, 0, 1));
        std::vector<int64_t> f, n;
        for (int q = 0; q < P; ++q) {
            f.push_back(split_start(D0, P, q) * row);
            n.push_back(split_count(D0, P, q) * row);
        }
        auto t = make_transpose(c, dtype_, M, d, f, n, std::min(D0, M[0]) * row);
        set_weights(*t, w);
        Step s = plain(Step::transpose, shape, t->cols);
        s.tr = t;
        s.to_cols = true;
        push(std::move(s));
        shape = t->cols;
        if (roll0) {
            push_roll(shape, 0, -(D0 / 2));
            if (N0 != D0) push(plain(Step::resize, shape, with(shape, 0, N0)));
            shape = with(shape, 0, N0);
        }
        if (strides_far(shape, 0)) push_blocked(shape, 0, nullptr);
        else push_fft(shape, shape, {0}, false, false);
        if (p_.real && r == 0) {
            const Shape cut = with(shape, 0, N0 / 2 + 1);
            push(plain(Step::resize, shape, cut));
            shape = cut;
            Step b = plain(Step::weights, shape, shape);
            set_bins(b.w, 0, 0, N0, true);
            push(std::move(b));
        }
        for (int a : T)
            if (p_.ffs_of(a) && a != d) push_roll(shape, a, dimsd_[static_cast<size_t>(a)] / 2);
        if (p_.rows) {  // back to a split along axis 0
            const Shape Md = with(shape, d, dimsd_[static_cast<size_t>(d)]);
            const int64_t row2 = plm::product(with(Md, 0, 1));
            std::vector<int64_t> f2, n2;
            for (int q = 0; q < P; ++q) {
                f2.push_back(split_start(Md[0], P, q) * row2);
                n2.push_back(split_count(Md[0], P, q) * row2);
            }
            auto back = make_transpose(c, dtype_, Md, d, f2, n2, plm::product(Md));
            Step b = plain(Step::transpose, shape, with(Md, 0, split_count(Md[0], P, me)));
            b.tr = back;
            b.to_cols = false;
            push(std::move(b));
        }
    }

    // 1-D on P > 1 ranks: the six-step algorithm (see the top of the file).
    void build_1d(const comm::Communicator &c)
    {
        const int P = c.size(), me = c.rank();
        const int64_t D = p_.dims[0], N = p_.nffts[0];
        int64_t n1 = 1;
        for (int64_t k = 1; k * k <= N; ++k)
            if (N % k == 0) n1 = k;
        const int64_t n2 = N / n1;
        const int64_t L = p_.real ? N / 2 + 1 : N;  // the output's length
        Shape shape{split_count(D, P, me)};
        if (!p_.clinear) push(plain(Step::real_part, shape, shape));
        if (p_.ifs[0] && D > 1) push_droll(c, D, -(D / 2));
        // to columns of x as [n2][n1] (j = j2 n1 + j1): cropped or padded to N there
        std::vector<int64_t> f, n;
        for (int q = 0; q < P; ++q) {
            f.push_back(split_start(D, P, q));
            n.push_back(split_count(D, P, q));
        }
        auto t1 = make_transpose(c, dtype_, Shape{n2, n1}, 1, f, n, std::min(D, N));
        Step s1 = plain(Step::transpose, shape, t1->cols);
        s1.tr = t1;
        push(std::move(s1));
        shape = t1->cols;  // [n2][w1]
        if (strides_far(shape, 0)) push_blocked(shape, 0, nullptr);
        else push_fft(shape, shape, {0}, false, false);
        // twiddles w^(j1 k2), the norm folded in
        Step tw = plain(Step::twiddle, shape, shape);
        make_twiddles(tw, n2, shape[1], split_start(n1, P, me), N);
        push(std::move(tw));
        // to rows of k2: [m2][n1]
        std::vector<int64_t> f2, n2s;
        for (int q = 0; q < P; ++q) {
            f2.push_back(split_start(n2, P, q) * n1);
            n2s.push_back(split_count(n2, P, q) * n1);
        }
        auto t2 = make_transpose(c, dtype_, Shape{n2, n1}, 1, f2, n2s, N);
        const Shape rows{split_count(n2, P, me), n1};
        Step s2 = plain(Step::transpose, shape, rows);
        s2.tr = t2;
        s2.to_cols = false;
        push(std::move(s2));
        // FFTs of length n1, the spectrum written transposed: [n1][m2], the columns of the
        // output viewed as C[k1][k2] (k = k1 n2 + k2)
        const Shape cols{n1, rows[0]};
        push_fft(rows, cols, {1}, false, true);
        std::vector<int64_t> f3, n3;
        for (int q = 0; q < P; ++q) {
            f3.push_back(split_start(L, P, q));
            n3.push_back(split_count(L, P, q));
        }
        auto t3 = make_transpose(c, dtype_, Shape{n1, n2}, 1, f3, n3, L);
        const Shape out{split_count(L, P, me)};
        Step s3 = plain(Step::transpose, cols, out);
        s3.tr = t3;
        s3.to_cols = false;
        push(std::move(s3));
        if (p_.real) {
            Step b = plain(Step::weights, out, out);
            set_bins(b.w, 0, split_start(L, P, me), N, true);
            push(std::move(b));
        }
        if (p_.ffs[0] && L > 1) push_droll(c, L, L / 2);
    }

    Step plain(Step::Kind k, const Shape &in, const Shape &out) const
    {
        Step s;
        s.kind = k;
        s.in = in;
        s.out = out;
        return s;
    }

    void push(Step s) { steps_.push_back(std::move(s)); }

    void push_roll(const Shape &shape, int axis, int64_t shift)
    {
        Step s = plain(Step::roll, shape, shape);
        s.axis = axis;
        s.shift = shift;
        push(std::move(s));
    }

    // A roll of the 1-D split array of n entries by shift (both directions planned).
    void push_droll(const comm::Communicator &c, int64_t n, int64_t shift)
    {
        const Shape shape{split_count(n, c.size(), c.rank())};
        Step s = plain(Step::droll, shape, shape);
        s.rx[0] = make_roll(c, dtype_, n, shift);
        s.rx[1] = make_roll(c, dtype_, n, -shift);
        push(std::move(s));
    }

    // FFTs over axes from a block of shape in to one of shape out (r2c: along the last of
    // axes, in the real side's shape; transposed: see FftOptions).
    void push_fft(const Shape &in, const Shape &out, const std::vector<int> &axes, bool r2c, bool transposed)
    {
        Step s = plain(Step::fft, in, out);
        s.axes = axes;
        s.r2c = r2c;
        s.transposed = transposed;
        s.plan_shape = in;
        s.sliced = r2c && in.size() >= 2 && std::find(axes.begin(), axes.end(), 0) == axes.end();
        push(std::move(s));
    }

    // Whether the FFT along axis a of a block of shape strides far enough that FFTW's strided
    // loop (every point of a transform a whole stride apart) loses to chunks gathered into a
    // cache-sized scratch: a stride of kFarStride elements or more.
    static bool strides_far(const Shape &shape, int a)
    {
        int64_t inner = 1;
        for (size_t k = static_cast<size_t>(a) + 1; k < shape.size(); ++k) inner *= shape[k];
        return inner >= kFarStride && shape.size() > static_cast<size_t>(a) + 1;
    }

    // A c2c FFT along axis a of a block of shape, run in chunks (Step::blocked): each chunk has
    // the axis' full length, one index along the axes between a and split, a run of split's
    // indices (a divisor of its length) and every index after split, about kChunk elements in
    // all; w (null: none) the weights applied on the gather.
    void push_blocked(const Shape &shape, int a, const BoxScale *w)
    {
        Step s = plain(Step::fft, shape, shape);
        s.axes = {a};
        s.blocked = true;
        const size_t nd = shape.size();
        const int64_t n = shape[static_cast<size_t>(a)];
        const int64_t want = std::max<int64_t>(1, kChunk / std::max<int64_t>(1, n));  // elements per point
        s.chunk.assign(nd, 1);
        s.chunk[static_cast<size_t>(a)] = n;
        int64_t inner = 1;
        size_t k = nd - 1;
        for (; k > static_cast<size_t>(a) + 1 && inner * shape[k] <= want; --k) {
            s.chunk[k] = shape[k];
            inner *= shape[k];
        }
        int64_t run = 1;  // the largest divisor of shape[k] within the wanted size
        for (int64_t d = 1; d <= shape[k]; ++d)
            if (shape[k] % d == 0 && inner * d <= want) run = d;
        s.chunk[k] = run;
        s.split = static_cast<int>(k);
        s.plan_shape = {n, plm::product(s.chunk) / std::max<int64_t>(1, n)};  // the scratch [n][C]
        if (w) {
            s.w[0] = w[0];
            s.w[1] = w[1];
        }
        push(std::move(s));
    }

    // The bins [1, 1 + (n - 1) / 2) of axis (n the real length), weighted sqrt(2) forward
    // (PyLops' real FFT); first: the global index of the block's first bin. Adjoint: 1 /
    // sqrt(2) before c2r (which counts those bins twice), sqrt(2) where the bins were cut from
    // a complex transform (truncated: the exact adjoint).
    static void set_bins(BoxScale *w, int axis, int64_t first, int64_t n, bool truncated)
    {
        for (int k = 0; k < 2; ++k) {
            w[k].axis = axis;
            w[k].first = first;
            w[k].b0 = 1;
            w[k].b1 = 1 + (n - 1) / 2;
            w[k].in *= k && !truncated ? 1 / std::sqrt(2.0) : std::sqrt(2.0);
        }
    }
    void set_norm(BoxScale *w) const
    {
        const double f = p_.norm();
        if (f == 1) return;
        for (int k = 0; k < 2; ++k) {
            if (w[k].axis < 0) w[k].axis = 0;
            w[k].in *= f;
            w[k].out *= f;
        }
    }
    static void set_weights(Transpose &t, const BoxScale *w)
    {
        t.w[0] = w[0];
        t.w[1] = w[1];
        t.weighted = !w[0].none() || !w[1].none();
    }

    // The 1-D FFT's twiddles on the [n2][w] block of columns [a, a + w): w^(j1 k2) forward,
    // conjugate adjoint, times the norm; w = exp(-2 pi i / N). The exponent j1 k2 < N is exact.
    void make_twiddles(Step &s, int64_t n2, int64_t w, int64_t a, int64_t N) const
    {
        const int64_t cnt = n2 * w;
        const double f = p_.norm();
        for (int k = 0; k < 2; ++k) {
            s.table[k] = Buffer::allocate(Space::host, checked_bytes(std::max<int64_t>(cnt, 1), dtype_, "FFT twiddles"));
            for (int64_t k2 = 0; k2 < n2; ++k2)
                for (int64_t j = 0; j < w; ++j) {
                    const int64_t e = (a + j) * k2;  // < n1 n2 = N: no overflow
                    const double ang = -2 * M_PI * static_cast<double>(e % N) / static_cast<double>(N);
                    const double re = f * std::cos(ang), im = (k ? -f : f) * std::sin(ang);
                    const int64_t i = k2 * w + j;
                    if (dtype_ == DType::c64) {
                        float *t = static_cast<float *>(s.table[k].data());
                        t[2 * i] = static_cast<float>(re);
                        t[2 * i + 1] = static_cast<float>(im);
                    } else {
                        double *t = static_cast<double *>(s.table[k].data());
                        t[2 * i] = re;
                        t[2 * i + 1] = im;
                    }
                }
        }
    }

    // ---- routes, buffers, plans ----

    // Which buffer every step reads and writes, in one direction: the last step that cannot
    // run in place writes the output and the steps after it run there in place; before it,
    // steps run in place where they can (never in the read-only input) and otherwise write
    // the work buffer their input is not in.
    Route make_route(bool adjoint) const
    {
        const size_t n = steps_.size();
        const auto step = [&](size_t k) -> const Step & { return steps_[adjoint ? n - 1 - k : k]; };
        size_t last = 0;
        for (size_t k = 0; k < n; ++k)
            if (!step(k).in_place_ok()) last = k;
        Route r;
        Loc cur = kIn;
        for (size_t k = 0; k < n; ++k) {
            Loc dst;
            if (k >= last) dst = kOut;
            else if (step(k).in_place_ok() && cur != kIn) dst = cur;
            else dst = cur == kB0 ? kB1 : kB0;
            r.src.push_back(cur);
            r.dst.push_back(dst);
            cur = dst;
        }
        return r;
    }

    // The work buffers' sizes (what any step reads or writes there) and the exchange buffers'.
    void size_buffers()
    {
        const int64_t es = static_cast<int64_t>(dtype_size(dtype_));
        const size_t n = steps_.size();
        for (int adj = 0; adj < 2; ++adj)
            for (size_t k = 0; k < n; ++k) {
                const Step &s = steps_[adj ? n - 1 - k : k];
                const int64_t from = plm::product(adj ? s.out : s.in), to = plm::product(adj ? s.in : s.out);
                for (const auto &[loc, cnt] : {std::pair{route_[adj].src[k], from}, std::pair{route_[adj].dst[k], to}})
                    if (loc == kB0 || loc == kB1) buf_bytes_[loc - kB0] = std::max(buf_bytes_[loc - kB0], cnt * es);
            }
        for (const Step &s : steps_) {
            if (s.blocked) scratch_bytes_ = std::max(scratch_bytes_, plm::product(s.chunk) * es);
            if (s.sliced)  // one slice's real side
                scratch_bytes_ = std::max(scratch_bytes_, plm::product(s.in) / std::max<int64_t>(1, s.in[0]) * es / 2);
            if (s.kind == Step::transpose) {
                xfer_bytes_ = std::max(xfer_bytes_, s.tr->xfer() * es);
                staged_elems_ = std::max(staged_elems_, s.tr->staged());
            } else if (s.kind == Step::droll) {
                for (const auto &x : s.rx) {
                    xfer_bytes_ = std::max(xfer_bytes_, x->bytes_s * es);
                    xfer2_bytes_ = std::max(xfer2_bytes_, x->bytes_r * es);
                    staged_elems_ = std::max(staged_elems_, x->bytes_s + x->bytes_r);
                }
            }
        }
    }

    // The host plans of the FFT steps, each direction in place exactly where its route is.
    void make_plans()
    {
        const size_t n = steps_.size();
        for (size_t i = 0; i < n; ++i) {
            Step &s = steps_[i];
            if (s.kind != Step::fft) continue;
            for (int adj = 0; adj < 2; ++adj) {
                s.plan[adj].reset();
                if (plm::product(s.plan_shape) == 0 || plm::product(s.in) == 0) continue;
                const size_t k = adj ? n - 1 - i : i;
                kernels::FftOptions o;
                o.effort = p_.effort;
                o.in_place = s.blocked || route_[adj].src[k] == route_[adj].dst[k];  // blocked: in the scratch
                o.interleaved_real = s.r2c;
                o.transposed = s.transposed;
                PLM_REQUIRE(!(s.r2c && adj && route_[adj].src[k] == kIn), PLM_ERR_INTERNAL,
                            "the FFT's c2r step would overwrite the apply's input");
                std::vector<int> axes = s.blocked ? std::vector<int>{0} : s.axes;
                Shape shape = s.plan_shape;
                if (s.sliced) {  // one slice along axis 0, its real side contiguous in the scratch
                    shape.erase(shape.begin());
                    for (int &a : axes) --a;
                    o.interleaved_real = false;
                }
                s.plan[adj] = std::make_shared<kernels::FftPlan>(Space::host, s.r2c ? real_of(dtype_) : dtype_,
                                                                 kind_of(s, adj), shape, axes, -1, o);
            }
        }
    }

    static FftKind kind_of(const Step &s, int adj)
    {
        if (s.r2c) return adj ? FftKind::c2r : FftKind::r2c;
        return adj ? FftKind::c2c_backward : FftKind::c2c_forward;
    }
    static DType real_of(DType dt) { return dt == DType::c64 ? DType::f32 : DType::f64; }

    // The device plans and twiddles of the FFT steps on one device, made on the first call
    // for it and kept.
    std::shared_ptr<const DevicePlans> device_plans(int device) const
    {
        std::lock_guard<std::mutex> g(dev_lock_);
        std::shared_ptr<const DevicePlans> &slot = dev_[device];
        if (slot) return slot;
        auto d = std::make_shared<DevicePlans>();
        d->plan.resize(steps_.size());
        d->table.resize(steps_.size());
        const Exec e{Space::device, device, {}};
        for (size_t i = 0; i < steps_.size(); ++i) {
            const Step &s = steps_[i];
            if (s.kind == Step::twiddle)
                for (int a = 0; a < 2; ++a) {
                    d->table[i][a] = Buffer::allocate(Space::device, s.table[a].bytes());
                    copy_bytes(Space::device, d->table[i][a].data(), Space::host, s.table[a].data(), s.table[a].bytes(),
                               e.stream);
                }
            if (s.kind != Step::fft || !s.plan[0]) continue;
            for (int a = 0; a < 2; ++a) {
                kernels::FftOptions o;
                o.interleaved_real = s.r2c;
                o.transposed = s.transposed;
                d->plan[i][a] = std::make_unique<kernels::FftPlan>(Space::device, s.r2c ? real_of(dtype_) : dtype_,
                                                                   kind_of(s, a), s.blocked ? s.in : s.plan_shape,
                                                                   s.axes, device, o);
                d->work = std::max(d->work, d->plan[i][a]->work_bytes());
            }
        }
        slot = std::move(d);
        return slot;
    }

    // ---- running the steps ----

    // One local step forward (in -> out) or adjoint (out-shaped src -> in-shaped dst); plan:
    // the FFT step's plan for this direction and space (null on an empty block); table: the
    // twiddles for this direction and space.
    void run(const Exec &e, const Step &s, bool adjoint, const void *src, void *dst, const kernels::FftPlan *plan,
             const void *table, FftWork &w) const
    {
        const Shape &from = adjoint ? s.out : s.in, &to = adjoint ? s.in : s.out;
        const int64_t n = plm::product(from);
        const unsigned char zero[16] = {};
        const int nd = static_cast<int>(from.size());
        switch (s.kind) {
        case Step::real_part:  // (re x, 0): the real part of complex data
            kernels::fill(e, dtype_, n, zero, dst);
            return kernels::copy_slab(e, real_of(dtype_), n, 1, src, 2, 0, dst, 2, 0, 1);
        case Step::roll:
            return kernels::roll(e, dtype_, nd, s.in.data(), s.axis, adjoint ? -s.shift : s.shift, src, dst);
        case Step::resize: {  // the common box, zeros elsewhere
            int64_t box[PLM_MAX_NDIM];
            bool whole = true;
            for (int k = 0; k < nd; ++k) {
                box[k] = std::min(from[static_cast<size_t>(k)], to[static_cast<size_t>(k)]);
                whole = whole && box[k] == to[static_cast<size_t>(k)];
            }
            if (!whole) kernels::fill(e, dtype_, plm::product(to), zero, dst);
            return kernels::copy_box(e, dtype_, nd, src, from.data(), kOrigin, dst, to.data(), kOrigin, box);
        }
        case Step::fft:
            if (!plan) return;
            if (s.blocked) return run_blocked(e, s, adjoint, src, dst, *plan, w);
            if (s.sliced && e.space == Space::host) return run_sliced(s, adjoint, src, dst, *plan, w);
            if (s.r2c && adjoint) kernels::fill(e, dtype_, plm::product(to), zero, dst);  // c2r writes real parts only
            return plan->execute(e, src, dst, w.fft_work.data());
        case Step::weights: {
            const BoxScale &bw = s.w[adjoint];
            if (src == dst) return kernels::scale_box(e, dtype_, nd, from.data(), bw, dst);
            return kernels::copy_box_scaled(e, dtype_, nd, src, from.data(), kOrigin, dst, from.data(), kOrigin,
                                            from.data(), bw);
        }
        case Step::twiddle: return kernels::binary(e, dtype_, kernels::Binary::mul, n, src, table, dst);
        case Step::transpose:
        case Step::droll: break;  // pipeline(): pack, exchange, unpack
        }
    }

    // A blocked FFT (push_blocked): host, chunk by chunk through the Work's scratch; device,
    // one plan over the block, then the weights in place.
    void run_blocked(const Exec &e, const Step &s, bool adjoint, const void *src, void *dst,
                     const kernels::FftPlan &plan, FftWork &w) const
    {
        const int nd = static_cast<int>(s.in.size());
        const BoxScale &bw = s.w[adjoint];
        if (e.space == Space::device) {
            plan.execute(e, src, dst, w.fft_work.data());
            return kernels::scale_box(e, dtype_, nd, s.in.data(), bw, dst);
        }
        int64_t at0[PLM_MAX_NDIM] = {};  // the chunk's start: odometer over the axes the chunks step along
        void *scratch = w.scratch.data();
        while (true) {
            BoxScale cw = bw;
            if (!cw.none()) cw.first = at0[cw.axis];
            kernels::copy_box_scaled(e, dtype_, nd, src, s.in.data(), at0, scratch, s.chunk.data(), kOrigin,
                                     s.chunk.data(), cw);
            plan.execute(e, scratch, scratch, nullptr);
            kernels::copy_box(e, dtype_, nd, scratch, s.chunk.data(), kOrigin, dst, s.in.data(), at0, s.chunk.data());
            int k = s.split;  // next chunk: the split axis, then the axes above it but a
            for (; k >= 0; --k) {
                if (k == s.axes[0]) continue;
                at0[k] += s.chunk[static_cast<size_t>(k)];
                if (at0[k] < s.in[static_cast<size_t>(k)]) break;
                at0[k] = 0;
            }
            if (k < 0) return;
        }
    }

    // A sliced r2c / c2r on host (Step::sliced): slice by slice along axis 0 through the
    // scratch. r2c: the slice's real parts into the scratch, transformed into the output; c2r:
    // the slice transformed into the scratch (overwriting its input, scratch of ours), written
    // out as (re, 0).
    void run_sliced(const Step &s, bool adjoint, const void *src, void *dst, const kernels::FftPlan &plan,
                    FftWork &w) const
    {
        const Exec e{};
        const int64_t m = s.in[0];
        const int64_t rn = plm::product(s.in) / std::max<int64_t>(1, m), cn = plm::product(s.out) / std::max<int64_t>(1, m);
        void *scratch = w.scratch.data();
        for (int64_t i = 0; i < m; ++i) {
            if (!adjoint) {
                kernels::real_parts(e, dtype_, rn, at(src, i * rn, dtype_), scratch);
                plan.execute(e, scratch, at(dst, i * cn, dtype_), nullptr);
            } else {
                plan.execute(e, at(src, i * cn, dtype_), scratch, nullptr);
                kernels::from_real(e, dtype_, rn, scratch, at(dst, i * rn, dtype_));
            }
        }
    }

    // One box copy between the rows side (rows) and a cols-side place (place), weighted on the
    // rows side's boxes. Device: the weights on the contiguous side (the cols side's box,
    // which is scratch when copying to rows).
    void copy_piece(const Exec &e, const Transpose &t, const Piece &pc, bool to_cols, const BoxScale &w,
                    const void *rows, void *rows_out, const void *place, void *place_out, bool device) const
    {
        const int nd = static_cast<int>(t.M.size());
        BoxScale bw = w;
        if (!bw.none()) bw.first = first_along(t.M, pc.first, bw.axis);
        if (to_cols)
            return kernels::copy_box_scaled(e, dtype_, nd, at(rows, pc.roff, dtype_), t.M.data(), kOrigin,
                                            at(place_out, pc.coff, dtype_), pc.cshape.data(), kOrigin,
                                            pc.box.data(), bw);
        if (device && !bw.none()) {
            kernels::scale_box(e, dtype_, nd, pc.box.data(), bw, at(place, pc.coff, dtype_));  // scratch
            bw = BoxScale{};
        }
        kernels::copy_box_scaled(e, dtype_, nd, at(place, pc.coff, dtype_), pc.cshape.data(), kOrigin,
                                 at(rows_out, pc.roff, dtype_), t.M.data(), kOrigin, pc.box.data(), bw);
    }

    // The index along axis of M's flat index f.
    static int64_t first_along(const Shape &M, int64_t f, int axis)
    {
        for (size_t k = M.size(); k-- > 0;) {
            if (static_cast<int>(k) == axis) return f % M[k];
            f /= M[k];
        }
        return 0;
    }

    // A transpose step: to cols, the rows-side boxes packed (own block straight to its place),
    // agreed, exchanged into place; to rows, agreed, exchanged out of place into the exchange
    // buffer, unpacked (own block straight from its place).
    void exchange(const Exec &e, const Transpose &t, bool to_cols, const BoxScale &w, const void *src, void *dst,
                  FftWork &fw, bool device, std::optional<Error> &err) const
    {
        const int me = comm().rank(), P = comm().size();
        const unsigned char zero[16] = {};
        const auto local = [&](auto &&f) {
            if (!err) err = comm::capture(f);
        };
        if (to_cols) {
            local([&] {
                if (t.fill_cols) kernels::fill(e, dtype_, plm::product(t.cols), zero, dst);
                for (int q = 0; q < P; ++q) {
                    if (q == me) continue;
                    for (const Piece &pc : t.pieces[static_cast<size_t>(q)])
                        copy_piece(e, t, pc, true, w, src, nullptr, nullptr, at(fw.xfer.data(), t.sd[static_cast<size_t>(q)], dtype_),
                                   device);
                }
            });
            agree_on(*this, comm(), err, device);
            err.reset();
            comm::Request req = t.plan[0]->start(e, fw.xfer.data(), dst);
            local([&] {
                for (const Piece &pc : t.pieces[static_cast<size_t>(me)]) copy_piece(e, t, pc, true, w, src, nullptr, nullptr, dst, device);
            });
            req.wait();
            return;
        }
        agree_on(*this, comm(), err, device);
        err.reset();
        comm::Request req = t.plan[1]->start(e, src, fw.xfer.data());
        local([&] {
            if (t.fill_rows) kernels::fill(e, dtype_, t.n, zero, dst);
            for (const Piece &pc : t.pieces[static_cast<size_t>(me)])
                copy_piece(e, t, pc, false, w, nullptr, dst, src, nullptr, device);
        });
        req.wait();
        local([&] {
            for (int q = 0; q < P; ++q) {
                if (q == me) continue;
                void *block = at(fw.xfer.data(), t.sd[static_cast<size_t>(q)], dtype_);
                for (const Piece &pc : t.pieces[static_cast<size_t>(q)])
                    copy_piece(e, t, pc, false, w, nullptr, dst, block, nullptr, device);
            }
        });
    }

    // A distributed roll: runs packed, agreed, exchanged, unpacked; own runs copied directly.
    void roll_exchange(const Exec &e, const RollX &x, const void *src, void *dst, FftWork &fw, bool device,
                       std::optional<Error> &err) const
    {
        const int me = comm().rank(), P = comm().size();
        const auto local = [&](auto &&f) {
            if (!err) err = comm::capture(f);
        };
        const auto copy = [&](const void *from, int64_t i, void *to, int64_t j, int64_t len) {
            kernels::copy(e, dtype_, len, at(from, i, dtype_), at(to, j, dtype_));
        };
        local([&] {
            for (int q = 0; q < P; ++q) {
                if (q == me) continue;
                int64_t off = x.sd[static_cast<size_t>(q)];
                for (const Run &r : x.send[static_cast<size_t>(q)]) {
                    copy(src, r.src - x.mine, fw.xfer.data(), off, r.len);
                    off += r.len;
                }
            }
        });
        agree_on(*this, comm(), err, device);
        err.reset();
        comm::Request req = x.plan->start(e, fw.xfer.data(), fw.xfer2.data());
        local([&] {
            for (const Run &r : x.recv[static_cast<size_t>(me)]) copy(src, r.src - x.mine, dst, r.dst - x.mine, r.len);
        });
        req.wait();
        local([&] {
            for (int q = 0; q < P; ++q) {
                if (q == me) continue;
                int64_t off = x.rd[static_cast<size_t>(q)];
                for (const Run &r : x.recv[static_cast<size_t>(q)]) {
                    copy(fw.xfer2.data(), off, dst, r.dst - x.mine, r.len);
                    off += r.len;
                }
            }
        });
    }

    Params p_;
    Shape dimsd_;
    int out_axis_ = 0;
    std::vector<Step> steps_;
    Route route_[2];
    int64_t buf_bytes_[2] = {0, 0}, xfer_bytes_ = 0, xfer2_bytes_ = 0, scratch_bytes_ = 0, staged_elems_ = 0;
    mutable std::mutex dev_lock_;
    mutable std::map<int, std::shared_ptr<const DevicePlans>> dev_;  // by device
};

Fft &fft_of(const Operator &op)
{
    const Fft *f = dynamic_cast<const Fft *>(&op);
    PLM_REQUIRE(f, PLM_ERR_INVALID_ARG, "not an FFT operator (made by plm_op_fftnd)");
    return const_cast<Fft &>(*f);
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
    PLM_REQUIRE(s.sampling.size() == p.axes.size() && s.ifftshift_before.size() == p.axes.size() &&
                    s.fftshift_after.size() == p.axes.size() && (s.nffts.empty() || s.nffts.size() == p.axes.size()),
                PLM_ERR_INVALID_ARG, "nffts, sampling and the shift flags take one value per axis");
    for (int64_t v : s.nffts)
        PLM_REQUIRE(v >= 1, PLM_ERR_INVALID_ARG, "nffts must be >= 1 (got %lld)", static_cast<long long>(v));
    p.nffts = s.nffts;
    if (p.nffts.empty())  // each axis' length
        for (int a : p.axes) p.nffts.push_back(p.dims[static_cast<size_t>(a)]);
    checked_bytes(checked_product(p.full(), "the FFT's padded element count"), p.dt, "the FFT's padded model in bytes");
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
    PLM_REQUIRE(s.planning >= kPlanningDefault && s.planning <= kPlanningExhaustive,
                PLM_ERR_INVALID_ARG, "planning must be a PLM_FFT_PLANNING_ value (got %d)", s.planning);
    p.effort = effort_of(s.planning);
    p.rows = s.output == PLM_FFT_OUTPUT_AXIS0;
    p.ifs.assign(s.ifftshift_before.begin(), s.ifftshift_before.end());
    p.ffs.assign(s.fftshift_after.begin(), s.fftshift_after.end());
    PLM_REQUIRE(kernels::fft_available(), PLM_ERR_NOT_SUPPORTED,
                "this build has no FFTW: the FFT operator is not available");
    return p;
}

// The plan problems whose wisdom this process has had from rank 0 already (plan_keys()),
// per communicator size: an operator of those problems plans alike on every rank without
// another exchange of wisdom (repeated constructions of one operator cost nothing more).
std::mutex g_shared_lock;
std::set<std::string> g_shared;

// Rank 0's wisdom to every rank, which plans op again from it (collective on c; measuring
// planners only), unless every rank has had it for these problems.
void share_wisdom(const CommPtr &c, Fft &op)
{
    std::string mine, key;
    std::vector<char> text;
    comm::Agreement a(*c, "op_fftnd wisdom");
    bool known = false;
    a.check([&] {
        key = std::to_string(c->size()) + '#' + op.plan_keys();
        std::lock_guard<std::mutex> g(g_shared_lock);
        known = g_shared.count(key) > 0;
    });
    const size_t fresh = a.add_lanes(1, comm::LaneOp::max);
    a.set(fresh, known ? 0 : 1);
    a.run();
    if (a.get(fresh) == 0) return;  // every rank planned these problems from rank 0's wisdom before
    comm::Agreement w(*c, "op_fftnd wisdom");
    w.check([&] {
        if (c->rank() == 0) mine = kernels::fft_wisdom_export();
    });
    const size_t lane = w.add_lanes(1, comm::LaneOp::max);
    w.set(lane, static_cast<double>(mine.size()));
    w.run();
    const size_t len = static_cast<size_t>(w.get(lane));
    comm::Agreement b(*c, "op_fftnd wisdom");
    b.check([&] {
        text.assign(len + 1, '\0');
        std::copy(mine.begin(), mine.end(), text.begin());
    });
    b.run();
    comm::bcast(*c, c->exec(Space::host), text.data(), static_cast<int64_t>(len), DType::u8, 0);
    comm::Agreement f(*c, "op_fftnd wisdom");
    f.check([&] {
        if (c->rank() != 0) kernels::fft_wisdom_import(std::string(text.data(), len));
        op.replan();
        std::lock_guard<std::mutex> g(g_shared_lock);
        g_shared.insert(key);
    });
    f.run();
}

}  // namespace

Operator::Ptr fftnd(comm::Agreement &ag, const CommPtr &c, const FftSpec &s)
{
    Params p;
    ag.check([&] { p = check(s); });
    ag.fold(s.dtype);
    ag.fold_all(s.dims);
    ag.fold_all(s.axes);
    ag.fold_all(p.nffts);  // as checked (empty: the axes' lengths); the check runs on every rank
    ag.fold(static_cast<int64_t>(s.sampling.size()));
    for (double v : s.sampling) ag.fold_double(v);
    ag.fold(s.norm);
    ag.fold(s.real);
    ag.fold_all(s.ifftshift_before);
    ag.fold_all(s.fftshift_after);
    ag.fold(s.output);
    ag.fold(s.planning);
    ag.run();
    auto op = comm::finish_collective(*c, "op_fftnd", {}, [&]() -> std::shared_ptr<Fft> {
        return std::make_shared<Fft>(c, p, geometry(c, p));
    });
    if (c->size() > 1 && p.effort != FftEffort::estimate) share_wisdom(c, *op);
    return op;
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
    const int64_t n = p.nffts[k];
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

void fft_wisdom_export(comm::Agreement &ag, const CommPtr &c, std::string *out)
{
    // every rank's wisdom, merged on every rank (each imports the others'), then exported
    std::string mine;
    std::vector<int64_t> lens;
    ag.check([&] { mine = kernels::fft_wisdom_export(); });
    const size_t first = ag.add_gather(static_cast<int64_t>(mine.size()));
    ag.run();
    const int P = c->size();
    std::vector<char> all;
    std::vector<int64_t> counts, displs;
    comm::Agreement b(*c, "fft_wisdom_export");
    b.check([&] {
        int64_t total = 0;
        for (int q = 0; q < P; ++q) {
            counts.push_back(ag.gathered(first, q));
            displs.push_back(total);
            total += counts.back();
        }
        all.assign(static_cast<size_t>(total) + 1, '\0');
        std::copy(mine.begin(), mine.end(), all.begin() + displs[static_cast<size_t>(c->rank())]);
    });
    b.run();
    comm::allgatherv(*c, c->exec(Space::host), all.data() + displs[static_cast<size_t>(c->rank())], all.data(), counts,
                     DType::u8, displs);
    // every rank merges the others' wisdom; rank 0's text (the order FFTW prints its entries
    // in may differ between ranks) is what every rank returns
    std::string merged;
    comm::Agreement f(*c, "fft_wisdom_export");
    f.check([&] {
        for (int q = 0; q < P; ++q)
            if (q != c->rank())
                kernels::fft_wisdom_import(std::string(all.data() + displs[static_cast<size_t>(q)],
                                                       static_cast<size_t>(counts[static_cast<size_t>(q)])));
        if (c->rank() == 0) merged = kernels::fft_wisdom_export();
    });
    const size_t lane = f.add_lanes(1, comm::LaneOp::max);
    f.set(lane, static_cast<double>(merged.size()));
    f.run();
    const size_t len = static_cast<size_t>(f.get(lane));
    std::vector<char> text;
    comm::Agreement g(*c, "fft_wisdom_export");
    g.check([&] {
        text.assign(len + 1, '\0');
        std::copy(merged.begin(), merged.end(), text.begin());
        out->reserve(len);
    });
    g.run();
    comm::bcast(*c, c->exec(Space::host), text.data(), static_cast<int64_t>(len), DType::u8, 0);
    out->assign(text.data(), len);  // fits the reserve
}

void fft_wisdom_import(comm::Agreement &ag, const CommPtr &c, const char *wisdom)
{
    // rank 0's string, broadcast; a text given elsewhere must be rank 0's (52 bits of its
    // FNV-1a hash, the smallest and largest over the ranks that gave one)
    std::string mine;
    double hash = 0;
    ag.check([&] {
        PLM_REQUIRE(wisdom || c->rank() != 0, PLM_ERR_INVALID_ARG, "the wisdom to import is NULL on rank 0");
        if (!wisdom) return;
        uint64_t h = 1469598103934665603ull;
        for (const char *q = wisdom; *q; ++q) h = (h ^ static_cast<unsigned char>(*q)) * 1099511628211ull;
        hash = static_cast<double>(h >> 12);
        if (c->rank() == 0) mine = wisdom;
    });
    const size_t lane = ag.add_lanes(1, comm::LaneOp::max);
    const size_t hi = ag.add_lanes(1, comm::LaneOp::max), lo = ag.add_lanes(1, comm::LaneOp::min);
    ag.set(lane, static_cast<double>(mine.size()));
    if (wisdom) {
        ag.set(hi, hash);
        ag.set(lo, hash);
    }
    ag.run();
    PLM_REQUIRE(!(ag.get(hi) > ag.get(lo)), PLM_ERR_INVALID_ARG,
                "the wisdom to import differs between the ranks that give one (rank 0's is imported)");
    const size_t len = static_cast<size_t>(ag.get(lane));
    std::vector<char> text;
    comm::Agreement b(*c, "fft_wisdom_import");
    b.check([&] {
        text.assign(len + 1, '\0');
        std::copy(mine.begin(), mine.end(), text.begin());
    });
    b.run();
    comm::bcast(*c, c->exec(Space::host), text.data(), static_cast<int64_t>(len), DType::u8, 0);
    comm::Agreement f(*c, "fft_wisdom_import");
    f.check([&] { kernels::fft_wisdom_import(std::string(text.data(), len)); });
    f.run();
}

}  // namespace plm::ops
