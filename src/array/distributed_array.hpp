// DistributedArray: a shared layout object (communicator, shapes, mask), a dtype and a
// memory buffer (owned or wrapped). All communication goes through the communication layer (comm/distributed.hpp).
#pragma once

#include <memory>
#include <optional>

#include "array/array_layout.hpp"
#include "kernels/kernels.hpp"

namespace plm {

struct ArraySpec {
    LayoutSpec layout;
    // Raw enum values from the caller, validated in create().
    int dtype = PLM_FLOAT64;
    int memory = PLM_MEMORY_HOST;
    void *user_data = nullptr;
    int64_t user_bytes = 0;  // the size of user_data in bytes (0 with NULL: allocate)
};

// One element of a dtype built from the (re, im) pair the C API passes (16 bytes: enough
// for any dtype). A real dtype refuses a non-zero imaginary part.
struct Scalar {
    alignas(16) unsigned char bytes[16] = {};
    const void *data() const { return bytes; }
};
Scalar make_scalar(DType dt, double re, double im, const char *what);

// Collective methods take the comm::Agreement the caller built on base() (holding the
// caller's own argument checks) and run it exactly once, before any other communication.
class DistributedArray {
public:
    using Ptr = std::shared_ptr<DistributedArray>;

    // Collective on spec.layout.comm (ag is built on it): checks, allocates, then agrees.
    static Ptr create(comm::Agreement &ag, const ArraySpec &spec);
    // Not collective: the layout was agreed when it was made.
    static Ptr create_from_layout(ArrayLayout::Ptr l, int dtype, int memory, void *user_data, int64_t user_bytes);

    Ptr empty_like() const;  // not collective: shares comm and mask group
    Ptr empty_in(Space s) const;  // empty_like, with the data in space s
    Ptr empty_like_as(DType dt) const;  // empty_like, of dtype dt
    Ptr zeros_like() const;
    Ptr duplicate() const;

    const Layout &layout() const { return lay_->layout(); }
    const ArrayLayout::Ptr &layout_object() const { return lay_; }
    DType dtype() const { return dtype_; }
    Space space() const { return space_; }
    // The execution context of work on this array: its space, device and stream.
    Exec exec() const { return lay_->comm().exec(space_); }
    const comm::Communicator &base() const { return lay_->comm(); }
    const comm::Communicator &group() const { return lay_->group(); }
    const CommPtr &base_ptr() const { return lay_->comm_ptr(); }
    const std::vector<int> &mask() const { return lay_->mask(); }
    bool has_mask() const { return !lay_->mask().empty(); }
    int rank() const { return lay_->rank(); }
    const Shape &local_shape() const { return lay_->local_shape(); }
    int64_t local_size() const { return lay_->local_size(); }
    void *data() const { return buffer_.data(); }
    // Waits until device work queued on the array's stream is done (the caller is about to
    // touch the data outside that stream). Host arrays: nothing.
    void finish_device_work() const;

    // Throws DTYPE_MISMATCH / SIZE_MISMATCH / INVALID_ARG unless o has this array's dtype,
    // space, layout and ranks. O(1) in the rank count.
    void require_compatible(const DistributedArray &o, const char *what) const;
    // The same without the dtype: o's space, layout and ranks.
    void require_same_place(const DistributedArray &o, const char *what) const;
    // This array's local data as dtype dt, which it must widen into (widens(dtype(), dt)):
    // data() itself, or a converted copy in `scratch` (allocated here). Not collective.
    const void *data_as(DType dt, Buffer &scratch) const;
    // Folds what every rank must agree on about this array: dtype, space and layout.
    void fold_layout(comm::Agreement &ag) const;
    // Sizes the communicator's staging memory for elems elements of this array's dtype
    // staged at once (host-staged device communication); in an agreement's check.
    void reserve_staging(int64_t elems) const;

    // BROADCAST: make every rank hold rank 0's data (collective); other partitions: no-op.
    void sync_broadcast();

    // The elements of this rank's local data that count in reductions (dot, norms): all of
    // them for SCATTER, this rank's contiguous share of the replicated data for the BROADCAST
    // kinds (its slab along axis 0 in the default split over the whole communicator), so
    // unmasked replicated data count once and a mask group reduces its ranks' slabs.
    void reduce_share(int64_t *begin, int64_t *count) const;

    void fill(const Scalar &value);  // local
    // this = x op y. NumPy's promotion (core/dtype.hpp): x and y of any dtypes, this one of
    // promote(x, y) (DTYPE_MISMATCH otherwise); the narrower operand is widened first. Local.
    void binary(kernels::Binary op, const DistributedArray &x, const DistributedArray &y);
    // this = x (x widened into this dtype: widens(x, this), else DTYPE_MISMATCH). Local.
    void copy_from(const DistributedArray &x);
    // this = alpha x + beta this, x widened into this dtype likewise; scalars of this dtype.
    void axpby(const Scalar &alpha, const DistributedArray &x, const Scalar &beta);

    // Reductions over the caller's mask group, carried in one agreement over base(): each
    // rank adds into its group's lanes. add_* check and compute; read_* after ag.run().
    // set_* compute the partial again into lanes added before (a loop re-running one
    // agreement after rearm(): the operands were checked when the lanes were added).
    size_t add_dot(comm::Agreement &ag, const DistributedArray *y, bool conjugate) const;
    void set_dot(comm::Agreement &ag, size_t lane, const DistributedArray &y, bool conjugate) const;
    void read_dot(const comm::Agreement &ag, size_t lane, double *re, double *im) const;
    struct NormLanes {
        int kind;
        double p;
        size_t lane;
    };
    NormLanes add_norm(comm::Agreement &ag, double ord) const;
    void set_norm(comm::Agreement &ag, const NormLanes &n) const;
    double read_norm(const comm::Agreement &ag, const NormLanes &n) const;

    void dot(comm::Agreement &ag, const DistributedArray *y, bool conjugate, double *re, double *im) const;
    double norm(comm::Agreement &ag, double ord) const;
    void norm_axis(comm::Agreement &ag, double ord, int axis, double *out, int64_t n_out) const;
    void asarray(comm::Agreement &ag, bool masked, void *out, int64_t out_bytes) const;
    // A gather with its scratch allocated up front (before the agreement).
    struct Gather {
        const comm::Communicator *c;
        std::vector<Shape> shapes;  // one per rank of c
        int axis;
        Buffer scratch;                 // empty when blocks land contiguously
        std::vector<int64_t> counts, displs;  // elements of each rank's block, and where they land
    };
    Gather plan_asarray(bool masked) const;
    void gather_into(Gather &g, void *out) const;  // after the agreement
    int64_t gathered_size(bool masked) const;
    void set_global(comm::Agreement &ag, const void *global, int64_t global_bytes);
    // Root-based: the global array (host memory, C order) only on root.
    void gather_to(comm::Agreement &ag, int root, void *out, int64_t out_bytes) const;
    void scatter_from(comm::Agreement &ag, int root, const void *global, int64_t global_bytes);
    Shape ghost_shape(int64_t before, int64_t after) const;
    void add_ghost_cells(comm::Agreement &ag, int64_t before, int64_t after, void *out, int64_t out_bytes) const;
    Ptr redistribute(comm::Agreement &ag, int axis) const;

    // A redistributed array's deleter gives its data buffer back to the plan that made it
    // (array/redistribute.cpp). Not collective; allocates nothing.
    static void give_buffer(DistributedArray &a, ArrayLayout::Redistribution &p) noexcept;

private:
    DistributedArray() = default;
    // Work space in s, on the communicator's device for device memory.
    Buffer scratch(Space s, size_t bytes) const;
    // New array with this array's dtype on layout l, data in space s (not collective).
    Ptr with_layout(ArrayLayout::Ptr l, Space s) const;
    void set_data(const comm::Communicator &c, const Shape &mine, int dtype, int memory, void *user_data,
                  int64_t user_bytes);
    // Rank r's block inside the global array: counts and offsets in rank order, for root.
    struct Blocks {
        std::vector<int64_t> count, displ;
        int64_t total = 0;
    };
    Blocks blocks() const;
    // The root's messages of a gather (receives) or scatter (sends) into packed, by block.
    std::vector<comm::Backend::Message> block_messages(const Blocks &b, int root, bool send, void *packed) const;
    // Copies between the packed rank-order blocks (host) and the global C-order array, in
    // the direction to_global says (the source is only read).
    void copy_blocks(const Blocks &b, void *packed, void *global, bool to_global) const;
    // Gather blocks of g.shapes (one per rank of g.c, in rank order) along g.axis into out.
    Gather plan_gather(const comm::Communicator &c, Space sp, DType dt, std::vector<Shape> shapes, int axis) const;
    void gather_blocks(Gather &g, Space sp, DType dt, const void *mine, void *out) const;

    ArrayLayout::Ptr lay_;  // shared with every array and plm_layout_t made from it
    DType dtype_ = DType::f64;
    Space space_ = Space::host;
    Buffer buffer_;
};


}  // namespace plm
