// DistributedArray::redistribute: the same data split along another axis, one all-to-all.
//
// Each call runs a plan made once per (source layout, axis, dtype, memory space) and kept by
// the source layout (ArrayLayout::take_redistribution): the counts, the blocks, the one scratch
// buffer the exchange needs, and the data buffer of the last array it returned once that array
// is destroyed (its deleter gives the buffer back to the plan), so a warm call - the last result
// destroyed, as the Python package does after copying it - allocates no buffer. Per call the
// data cross memory once where they can: this rank's own block is copied straight from x to y;
// blocks that are contiguous in x are sent from x, and blocks contiguous in y are received into
// y (from axis 0, every received block is; to axis 0, every sent one), so only the other side
// goes through the scratch buffer (one pack or one unpack pass).
#include <algorithm>
#include <mutex>

#include "array/distributed_array.hpp"

namespace plm {

namespace {

char *at(const void *p, int64_t elems, DType dt)
{
    return static_cast<char *>(const_cast<void *>(p)) + elems * static_cast<int64_t>(dtype_size(dt));
}

// Whether the box at start inside an array of shape S is one contiguous run (row-major): past
// its first dimension of extent > 1, every dimension is whole. Empty boxes are.
bool contiguous(const Shape &S, const Shape &box)
{
    for (int64_t e : box)
        if (e == 0) return true;
    size_t d = 0;
    while (d < box.size() && box[d] == 1) ++d;
    for (size_t i = d + 1; i < box.size(); ++i)
        if (box[i] != S[i]) return false;
    return true;
}

// Row-major linear offset of start inside an array of shape S.
int64_t linear(const Shape &S, const int64_t *start)
{
    int64_t off = 0;
    for (size_t d = 0; d < S.size(); ++d) off = off * S[d] + start[d];
    return off;
}

}  // namespace

struct ArrayLayout::Redistribution {
    int axis = 0;  // the new distributed axis
    DType dt = DType::f64;
    Space space = Space::host;
    Layout target;
    // Per rank: the box sent to it (in x) and received from it (in y), where they start, and
    // the exchange's counts and displacements (elements; own block excluded: it is copied).
    std::vector<Shape> sbox, rbox;
    std::vector<int64_t> sstart, rstart;  // P x ndim
    std::vector<int64_t> sc, sd, rc, rd;
    bool send_direct = false, recv_direct = false;  // displacements into x / y, not the scratch
    Buffer scratch;                                 // packed sends or unpacked receives (or both)
    int64_t scratch_recv = 0;                       // where the receive part starts in it
    // The data of the last array returned, once destroyed: the next result's data. The lock:
    // arrays are destroyed on any thread, while another call may hold the plan.
    std::mutex spare_lock;
    Buffer spare;
};

namespace {

// The deleter of a redistributed array: its data buffer back to its plan (when the plan is
// still kept and has none), then the array.
struct GiveBack {
    std::weak_ptr<ArrayLayout::Redistribution> plan;
    void operator()(DistributedArray *a) const noexcept
    {
        if (std::shared_ptr<ArrayLayout::Redistribution> p = plan.lock()) DistributedArray::give_buffer(*a, *p);
        delete a;
    }
};

}  // namespace

void DistributedArray::give_buffer(DistributedArray &a, ArrayLayout::Redistribution &p) noexcept
{
    std::lock_guard<std::mutex> g(p.spare_lock);
    if (!p.spare.data()) p.spare = std::move(a.buffer_);
}

std::shared_ptr<ArrayLayout::Redistribution> ArrayLayout::take_redistribution(int axis, DType dt, Space s) const
{
    std::lock_guard<std::mutex> g(plans_.lock);
    for (std::shared_ptr<Redistribution> &p : plans_.slots)
        if (p && p->axis == axis && p->dt == dt && p->space == s) return std::move(p);
    return nullptr;
}

void ArrayLayout::give_redistribution(std::shared_ptr<Redistribution> p) const
{
    std::lock_guard<std::mutex> g(plans_.lock);
    auto &v = plans_.slots;
    // Most recent first: the first empty slot, or the oldest (last) one, makes room.
    auto free = std::find(v.begin(), v.end(), nullptr);
    if (free == v.end()) free = v.end() - 1;
    std::move_backward(v.begin(), free, free + 1);
    v.front() = std::move(p);
}

DistributedArray::Ptr DistributedArray::redistribute(comm::Agreement &ag, int axis) const
{
    using Plan = ArrayLayout::Redistribution;
    const Layout &from = lay_->layout();
    const int a = from.axis, P = lay_->comm().size(), me = rank(), nd = from.ndim();
    int b = a;
    Ptr y;
    std::shared_ptr<Plan> plan;
    ag.check([&] {
        b = normalize_axis(axis, nd);
        if (!from.scattered() || b == a) {
            y = duplicate();
            return;
        }
        plan = lay_->take_redistribution(b, dtype_, space_);
        if (!plan) {
            plan = std::make_shared<Plan>();
            Plan &p = *plan;
            p.axis = b;
            p.dt = dtype_;
            p.space = space_;
            p.target = from;
            p.target.axis = b;
            p.target.local = default_local_shapes(from.global, b, from.partition, P);
            // Send to r: my block restricted to r's new range along b. Receive from r: r's old
            // range along a, my new range along b, placed at r's old offset along a.
            const Shape &L = local_shape();
            const Shape &N = p.target.local[static_cast<size_t>(me)];
            for (auto *v : {&p.sc, &p.sd, &p.rc, &p.rd}) v->assign(static_cast<size_t>(P), 0);
            p.sbox.resize(static_cast<size_t>(P));
            p.rbox.resize(static_cast<size_t>(P));
            p.sstart.assign(static_cast<size_t>(P * nd), 0);
            p.rstart.assign(static_cast<size_t>(P * nd), 0);
            p.send_direct = p.recv_direct = true;
            for (int r = 0; r < P; ++r) {
                const size_t i = static_cast<size_t>(r);
                p.sbox[i] = L;
                p.sbox[i][b] = p.target.local[i][b];
                p.rbox[i] = N;
                p.rbox[i][a] = from.local[i][a];
                p.sstart[i * nd + b] = p.target.offset(r);
                p.rstart[i * nd + a] = from.offset(r);
                if (r == me) continue;
                p.send_direct = p.send_direct && contiguous(L, p.sbox[i]);
                p.recv_direct = p.recv_direct && contiguous(N, p.rbox[i]);
            }
            int64_t soff = 0, roff = 0;
            for (int r = 0; r < P; ++r) {
                const size_t i = static_cast<size_t>(r);
                if (r == me) continue;
                p.sc[i] = product(p.sbox[i]);
                p.rc[i] = product(p.rbox[i]);
                p.sd[i] = p.send_direct ? linear(L, &p.sstart[i * nd]) : soff;
                p.rd[i] = p.recv_direct ? linear(N, &p.rstart[i * nd]) : roff;
                soff = checked_add(soff, p.sc[i], "the redistribution send count");
                roff = checked_add(roff, p.rc[i], "the redistribution receive count");
            }
            const int64_t packed = p.send_direct ? 0 : soff, unpacked = p.recv_direct ? 0 : roff;
            p.scratch = scratch(space_, checked_bytes(checked_add(packed, unpacked, "the redistribution scratch"),
                                                      dtype_, "the redistribution scratch in bytes"));
            p.scratch_recv = packed;
        }
        // The result, on the plan's spare buffer when the last one was given back.
        ArrayLayout::Ptr target = lay_->with(plan->target);
        const size_t bytes = checked_bytes(target->local_size(), dtype_, "the local block in bytes");
        Buffer data;
        {
            std::lock_guard<std::mutex> g(plan->spare_lock);
            if (plan->spare.data() && plan->spare.bytes() == bytes) data = std::move(plan->spare);
        }
        if (!data.data()) data = scratch(space_, bytes);
        y = Ptr(new DistributedArray(), GiveBack{plan});
        y->dtype_ = dtype_;
        y->space_ = space_;
        y->buffer_ = std::move(data);
        y->lay_ = std::move(target);
        reserve_staging(local_size() + y->local_size());
    });
    fold_layout(ag);
    ag.fold(b);
    ag.run();
    if (!plan) return y;

    const Plan &p = *plan;
    const Shape &L = local_shape();
    const Shape &N = p.target.local[static_cast<size_t>(me)];
    const int64_t zero[PLM_MAX_NDIM] = {};
    void *sbuf = p.send_direct ? data() : p.scratch.data();
    void *rbuf = p.recv_direct ? y->data() : at(p.scratch.data(), p.scratch_recv, dtype_);
    if (!p.send_direct)
        for (int r = 0; r < P; ++r) {
            const size_t i = static_cast<size_t>(r);
            if (r != me)
                kernels::copy_box(exec(), dtype_, nd, data(), L.data(), &p.sstart[i * nd], at(sbuf, p.sd[i], dtype_),
                                  p.sbox[i].data(), zero, p.sbox[i].data());
        }
    comm::alltoallv(lay_->comm(), exec(), sbuf, p.sc, p.sd, rbuf, p.rc, p.rd, dtype_);
    const size_t mi = static_cast<size_t>(me);  // my own block: x to y directly
    kernels::copy_box(exec(), dtype_, nd, data(), L.data(), &p.sstart[mi * nd], y->data(), N.data(),
                      &p.rstart[mi * nd], p.sbox[mi].data());
    if (!p.recv_direct)
        for (int r = 0; r < P; ++r) {
            const size_t i = static_cast<size_t>(r);
            if (r != me)
                kernels::copy_box(exec(), dtype_, nd, at(rbuf, p.rd[i], dtype_), p.rbox[i].data(), zero, y->data(),
                                  N.data(), &p.rstart[i * nd], p.rbox[i].data());
        }
    lay_->give_redistribution(std::move(plan));
    return y;
}

}  // namespace plm
