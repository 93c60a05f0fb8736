// MatrixMult (PyLops-MPI's MPIMatrixMult): Y = A X on a grid_rows x grid_cols process grid.
// - block: grid column c holds A's row block c (all k columns); grid row r holds X's and Y's
//   column block r, replicated along the row. Forward: a local gemm, then an allgatherv of
//   the row blocks along the grid row; adjoint: a local gemm, then an allreduce along it.
// - SUMMA: 2-D blocks of A, X and Y. The k dimension is cut where A's column blocks or X's
//   row blocks end; each segment's A panel is broadcast along grid rows and its X panel along
//   grid columns (forward), or its A^H Y partials are reduced along grid columns to the X
//   owner (adjoint). Two buffer sets let segment s+1's communication run during s's gemm.
//   A panel a rank owns on a one-column grid is read in place (no copy, no broadcast); there
//   the forward gathers X's column block whole (one allgatherv) for one gemm instead of one
//   accumulating gemm per segment.
// - grid_rows 0 chooses the grid for the shape (choose_rows: the fewest elements held plus
//   received per apply).
#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <mutex>

#include "ops/host_blas.hpp"
#include "ops/operator.hpp"
#ifdef PLM_HAVE_CUDA
#include "ops/device_blas.hpp"
#endif

namespace plm::ops {

namespace {

void set_span(int64_t *v, int64_t d, int q, int i)
{
    v[0] = ceil_split_start(d, q, i);
    v[1] = ceil_split_start(d, q, i + 1);
}

int64_t rows_of(const int64_t *b) { return b[1] - b[0]; }
int64_t cols_of(const int64_t *b) { return b[3] - b[2]; }

char *at(const void *p, int64_t elems, DType dt)
{
    return static_cast<char *>(const_cast<void *>(p)) + elems * static_cast<int64_t>(dtype_size(dt));
}

// What both kinds keep: the blocks, this rank's A block and the grid's row and column
// communicators (ranks of a grid row ordered by column, of a grid column by row).
struct Parts {
    DType dt = DType::f64;
    MatmulBlocks b;
    Buffer a;
    const comm::Communicator *row = nullptr, *col = nullptr;
};

// The Work of an apply: SUMMA's two panel buffer sets in the data's space; on device, this
// rank's A block there and the cuBLAS handle of the apply.
struct MatmulWork : Work {
    Buffer panels;
    Buffer xfull;  // SUMMA on one grid column: X's column block, whole
    std::shared_ptr<const Buffer> a;  // the A block in the data's space (host: none)
#ifdef PLM_HAVE_CUDA
    std::unique_ptr<BlasHandle> blas;
#endif
};

MatmulWork &mw(Work *w) { return *static_cast<MatmulWork *>(w); }

// gemm on host or device data (see host_gemm).
void gemm(const Exec &e, Work *w, DType dt, bool adjoint, int64_t rows, int64_t cols, int64_t inner, const void *a,
          int64_t lda, const void *b, bool accumulate, void *c)
{
#ifdef PLM_HAVE_CUDA
    if (e.space == Space::device) return device_gemm(*mw(w).blas, e, dt, adjoint, rows, cols, inner, a, lda, b, accumulate, c);
#endif
    (void)e;
    (void)w;
    host_gemm(dt, adjoint, rows, cols, inner, a, lda, b, accumulate, c);
}

// The parts of a matmul Work both kinds share: A on the device (uploaded once per device, kept
// by the operator) and the handle.
class MatmulBase : public Operator {
protected:
    MatmulBase(ArrayLayout::Ptr domain, ArrayLayout::Ptr range, Parts p)
        : Operator(p.dt, std::move(domain), std::move(range)), p_(std::move(p))
    {
    }
    std::unique_ptr<MatmulWork> base_work(const Exec &e) const
    {
        auto w = std::make_unique<MatmulWork>();
        if (e.space != Space::device) return w;
#ifdef PLM_HAVE_CUDA
        {
            std::lock_guard<std::mutex> g(lock_);
            std::shared_ptr<const Buffer> &slot = dev_[e.device];
            if (!slot) {
                use_device(e.device);
                auto b = std::make_shared<Buffer>(Buffer::allocate(Space::device, p_.a.bytes()));
                if (p_.a.bytes()) copy_bytes(Space::device, b->data(), Space::host, p_.a.data(), p_.a.bytes(), e.stream);
                slot = std::move(b);
            }
            w->a = slot;
        }
        w->blas = std::make_unique<BlasHandle>(e.device);
#endif
        return w;
    }
    // This rank's A block in the space of e.
    const void *a_block(const Exec &e, Work *w) const { return e.space == Space::device ? mw(w).a->data() : p_.a.data(); }

    Parts p_;

private:
    mutable std::mutex lock_;
    mutable std::map<int, std::shared_ptr<const Buffer>> dev_;  // A by device
};

class BlockMatmul final : public MatmulBase {
public:
    BlockMatmul(ArrayLayout::Ptr domain, ArrayLayout::Ptr range, Parts p, std::vector<int64_t> counts)
        : MatmulBase(std::move(domain), std::move(range), std::move(p)), counts_(std::move(counts))
    {
    }
    WorkPtr make_work(const Exec &e) const override
    {
        // The forward allgatherv (my rows, then all of Y) or the adjoint allreduce (X, out and back).
        int64_t y = 0;
        for (int64_t c : counts_) y += c;
        reserve_staging(e, std::max(rows_of(p_.b.a) * cols_of(p_.b.x) + y, 2 * cols_of(p_.b.a) * cols_of(p_.b.x)));
        return base_work(e);
    }

    void apply(const DistributedArray &in, DistributedArray &out, bool adjoint, Work *w) const override
    {
        const int64_t nr = rows_of(p_.b.a), k = cols_of(p_.b.a), nc = cols_of(p_.b.x), r0 = p_.b.a[0];
        const Exec e = out.exec();
        const void *a = a_block(e, w);
        if (!adjoint) {
            // My rows of Y in place, then every column's rows: Y (n x nc) in row-major order.
            void *mine = at(out.data(), r0 * nc, dtype_);
            gemm(e, w, dtype_, false, nr, nc, k, a, k, in.data(), false, mine);
            if (nc) comm::allgatherv(*p_.row, e, mine, out.data(), counts_, dtype_);
            return;
        }
        // X (k x nc) = sum over the grid row of A_rows^H Y_rows.
        gemm(e, w, dtype_, true, k, nc, nr, a, k, at(in.data(), r0 * nc, dtype_), false, out.data());
        if (nc && k) comm::allreduce(*p_.row, e, out.data(), out.data(), k * nc, dtype_, comm::ReduceOp::sum);
    }

private:
    std::vector<int64_t> counts_;  // Y elements of each rank of the grid row
};

// [k0, k1) of the k dimension inside one A column block and one X row block.
struct Segment {
    int64_t k0, k1;
    int a_col, x_row;  // the owners: A's grid column, X's grid row
};

std::vector<Segment> segments(int64_t k, int R, int Q)
{
    std::vector<int64_t> cuts;
    for (int j = 0; j <= Q; ++j) cuts.push_back(ceil_split_start(k, Q, j));
    for (int i = 0; i <= R; ++i) cuts.push_back(ceil_split_start(k, R, i));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    const int64_t bq = k / Q + (k % Q != 0), br = k / R + (k % R != 0);
    std::vector<Segment> s;
    for (size_t i = 0; i + 1 < cuts.size(); ++i)
        s.push_back({cuts[i], cuts[i + 1], static_cast<int>(cuts[i] / bq), static_cast<int>(cuts[i] / br)});
    return s;
}

int64_t widest(const std::vector<Segment> &segs)
{
    int64_t w = 0;
    for (const Segment &g : segs) w = std::max(w, g.k1 - g.k0);
    return w;
}

class Summa final : public MatmulBase {
public:
    Summa(ArrayLayout::Ptr domain, ArrayLayout::Ptr range, Parts p, int64_t k, std::vector<int64_t> x_counts)
        : MatmulBase(std::move(domain), std::move(range), std::move(p)),
          segs_(segments(k, p_.b.grid_rows, p_.b.grid_cols)), width_(widest(segs_)), k_(k),
          x_counts_(std::move(x_counts))
    {
    }

    WorkPtr make_work(const Exec &e) const override
    {
        std::unique_ptr<MatmulWork> w = base_work(e);
        if (e.space == Space::device) use_device(e.device);
        w->panels = Buffer::allocate(e.space, static_cast<size_t>(2 * (nr() + mc()) * width_) * dtype_size(dtype_));
        int64_t staged = 4 * (nr() + mc()) * width_;  // both panel sets in flight, out and back
        if (gather_x()) {
            w->xfull = Buffer::allocate(e.space, static_cast<size_t>(k_ * mc()) * dtype_size(dtype_));
            staged = std::max(staged, k_ * mc() + rows_of(p_.b.x) * mc());  // the allgatherv, both sides
        }
        reserve_staging(e, staged);
        return w;
    }

    void apply(const DistributedArray &in, DistributedArray &out, bool adjoint, Work *w) const override
    {
        if (adjoint)
            backward(in, out, w);
        else if (gather_x())
            forward_gathered(in, out, w);
        else
            forward(in, out, w);
    }

private:
    int64_t nr() const { return rows_of(p_.b.y); }
    int64_t mc() const { return cols_of(p_.b.y); }
    // One grid column: A's blocks hold all k columns, so no A panel moves; X's column block,
    // split in row blocks over the grid column, is gathered whole for one gemm.
    bool gather_x() const { return p_.b.grid_cols == 1 && p_.b.grid_rows > 1; }

    // Buffer set i: the A panel (nr x width) then the X panel or partial (width x mc).
    char *a_buf(Work *w, size_t i) const
    {
        return at(mw(w).panels.data(), static_cast<int64_t>(i) * (nr() + mc()) * width_, dtype_);
    }
    char *x_buf(Work *w, size_t i) const { return at(a_buf(w, i), nr() * width_, dtype_); }

    // Starts segment g's A panel broadcast along the grid row into set i; returns the panel
    // (nr x w) and its row stride in *lda: the A block itself when the panel is all of it, or,
    // on one grid column (nobody to send to), its columns [k0, k1) in place (stride: the
    // block's columns).
    const void *post_a(const Segment &g, size_t i, comm::Request &r, const Exec &e, Work *work, int64_t *lda) const
    {
        const int64_t w = g.k1 - g.k0, ka = cols_of(p_.b.a), nr = this->nr();
        const void *panel = a_buf(work, i);
        *lda = w;
        if (g.a_col == p_.b.col) {
            const void *a = a_block(e, work);
            if (p_.b.grid_cols == 1) {  // nobody to send it to: columns [k0, k1) in place
                *lda = ka;
                return at(a, g.k0 - p_.b.a[2], dtype_);
            }
            if (w == ka) {
                panel = a;
            } else {  // columns [k0, k1) of the A block
                const int64_t src_shape[2] = {nr, ka}, src_start[2] = {0, g.k0 - p_.b.a[2]}, box[2] = {nr, w},
                              zero[2] = {0, 0};
                kernels::copy_box(e, dtype_, 2, a, src_shape, src_start, a_buf(work, i), box, zero, box);
            }
        }
        if (nr) r = comm::ibcast(*p_.row, e, const_cast<void *>(panel), nr * w, dtype_, g.a_col);
        return panel;
    }

    void zero_y(const Exec &e, DistributedArray &y) const
    {
        const unsigned char zero[16] = {};
        kernels::fill(e, dtype_, nr() * mc(), zero, y.data());
    }

    void forward(const DistributedArray &x, DistributedArray &y, Work *work) const
    {
        const Exec e = x.exec();
        const int64_t nr = this->nr(), mc = this->mc();
        if (segs_.empty()) return zero_y(e, y);  // k = 0: Y = 0
        comm::Request ra[2], rx[2];
        const void *pa[2] = {}, *px[2] = {};
        int64_t lda[2] = {};
        auto post = [&](size_t s) {
            const Segment &g = segs_[s];
            const size_t i = s % 2;
            pa[i] = post_a(g, i, ra[i], e, work, &lda[i]);
            const bool owner = g.x_row == p_.b.row;
            px[i] = owner ? at(x.data(), (g.k0 - p_.b.x[0]) * mc, dtype_) : x_buf(work, i);
            if (mc) rx[i] = comm::ibcast(*p_.col, e, const_cast<void *>(px[i]), (g.k1 - g.k0) * mc, dtype_, g.x_row);
        };
        post(0);
        for (size_t s = 0; s < segs_.size(); ++s) {
            if (s + 1 < segs_.size()) post(s + 1);
            const size_t i = s % 2;
            ra[i].wait();
            rx[i].wait();
            const int64_t w = segs_[s].k1 - segs_[s].k0;
            gemm(e, work, dtype_, false, nr, mc, w, pa[i], lda[i], px[i], s > 0, y.data());
        }
    }

    // One grid column: Y block = A block (all k columns, in place) times X's whole column
    // block, gathered by one allgatherv along the grid column.
    void forward_gathered(const DistributedArray &x, DistributedArray &y, Work *work) const
    {
        const Exec e = x.exec();
        if (k_ == 0) return zero_y(e, y);
        void *xf = mw(work).xfull.data();
        if (mc()) comm::allgatherv(*p_.col, e, x.data(), xf, x_counts_, dtype_);
        gemm(e, work, dtype_, false, nr(), mc(), k_, a_block(e, work), k_, xf, false, y.data());
    }

    // x (X block) = A^H y: per segment, the partial A_panel^H Y_block summed along the grid
    // column onto the X owner, in place in its rows of x.
    void backward(const DistributedArray &y, DistributedArray &x, Work *work) const
    {
        const Exec e = y.exec();
        const int64_t nr = this->nr(), mc = this->mc();
        comm::Request ra[2], rr[2];
        const void *pa[2] = {};
        int64_t lda[2] = {};
        if (!segs_.empty()) pa[0] = post_a(segs_[0], 0, ra[0], e, work, &lda[0]);
        for (size_t s = 0; s < segs_.size(); ++s) {
            const Segment &g = segs_[s];
            const size_t i = s % 2;
            const int64_t w = g.k1 - g.k0;
            if (s + 1 < segs_.size()) pa[1 - i] = post_a(segs_[s + 1], 1 - i, ra[1 - i], e, work, &lda[1 - i]);
            ra[i].wait();
            rr[i].wait();  // segment s - 2's partial has left set i
            void *part = g.x_row == p_.b.row ? at(x.data(), (g.k0 - p_.b.x[0]) * mc, dtype_) : x_buf(work, i);
            gemm(e, work, dtype_, true, w, mc, nr, pa[i], lda[i], y.data(), false, part);
            if (mc) rr[i] = comm::ireduce(*p_.col, e, part, part, w * mc, dtype_, comm::ReduceOp::sum, g.x_row);
        }
        rr[0].wait();
        rr[1].wait();
    }

    std::vector<Segment> segs_;
    int64_t width_;  // the widest segment
    int64_t k_;
    std::vector<int64_t> x_counts_;  // X elements of each rank of my grid column, in row order
};

// The cost model of a grid of R rows (of P ranks) for an n x k x m product, in elements per
// rank: what a rank receives per apply (the mean of forward and adjoint) plus, for the block
// kind, what it holds (A is replicated over the grid rows, X and Y over the grid columns; a
// SUMMA rank holds a 1 / P share of each whatever the grid).
double grid_cost(int kind, int P, int R, int64_t n, int64_t k, int64_t m)
{
    const double Q = static_cast<double>(P / R), r = static_cast<double>(R), dn = static_cast<double>(n),
                 dk = static_cast<double>(k), dm = static_cast<double>(m);
    if (kind == PLM_MATMUL_SUMMA)  // A panels along the grid row, X panels (partials) along the column
        return dn / r * dk * (Q - 1) / Q + dk * dm / Q * (r - 1) / r;
    // block: Y gathered along the grid row (forward), X's k x m / R summed over it (adjoint)
    const double moved = (Q - 1) / Q * dm / r * (dn + 2 * dk) / 2;
    return moved + dn * dk / Q + (dk + dn) * dm / r;
}

// The grid rows grid_rows 0 picks: the cheapest grid by grid_cost; ties go to the squarest with
// rows <= columns (the largest divisor of P not above its square root: square products keep
// that grid).
int choose_rows(int kind, int P, int64_t n, int64_t k, int64_t m)
{
    int best = 1;
    for (int r = 1; static_cast<int64_t>(r) * r <= P; ++r)
        if (P % r == 0) best = r;
    double cost = grid_cost(kind, P, best, n, k, m);
    for (int r = 1; r <= P; ++r) {
        if (P % r || r == best) continue;
        const double c = grid_cost(kind, P, r, n, k, m);
        if (c < cost * (1 - 1e-12)) {
            cost = c;
            best = r;
        }
    }
    return best;
}

}  // namespace

MatmulBlocks matmul_blocks(int kind, int nranks, int rank, int grid_rows, int64_t n, int64_t k, int64_t m)
{
    PLM_REQUIRE(kind == PLM_MATMUL_BLOCK || kind == PLM_MATMUL_SUMMA, PLM_ERR_INVALID_ARG,
                "unknown matrix-mult kind %d", kind);
    PLM_REQUIRE(nranks >= 1, PLM_ERR_INVALID_ARG, "nranks %d must be >= 1", nranks);
    PLM_REQUIRE(rank >= 0 && rank < nranks, PLM_ERR_INVALID_ARG, "rank %d outside 0..%d", rank, nranks - 1);
    PLM_REQUIRE(n >= 0 && k >= 0 && m >= 0, PLM_ERR_INVALID_ARG, "matrix sizes n %lld, k %lld, m %lld are negative",
                static_cast<long long>(n), static_cast<long long>(k), static_cast<long long>(m));
    if (grid_rows == 0) grid_rows = choose_rows(kind, nranks, n, k, m);
    PLM_REQUIRE(grid_rows >= 1 && nranks % grid_rows == 0, PLM_ERR_INVALID_ARG,
                "grid_rows %d does not divide the %d ranks (0 picks a grid)", grid_rows, nranks);
    MatmulBlocks b;
    b.grid_rows = grid_rows;
    b.grid_cols = nranks / grid_rows;
    b.row = rank / b.grid_cols;
    b.col = rank % b.grid_cols;
    const int R = b.grid_rows, Q = b.grid_cols;
    if (kind == PLM_MATMUL_SUMMA) {
        set_span(b.a, n, R, b.row);
        set_span(b.a + 2, k, Q, b.col);
        set_span(b.x, k, R, b.row);
        set_span(b.x + 2, m, Q, b.col);
        set_span(b.y, n, R, b.row);
        set_span(b.y + 2, m, Q, b.col);
    } else {
        set_span(b.a, n, Q, b.col);
        b.a[2] = 0;
        b.a[3] = k;
        b.x[0] = 0;
        b.x[1] = k;
        set_span(b.x + 2, m, R, b.row);
        b.y[0] = 0;
        b.y[1] = n;
        set_span(b.y + 2, m, R, b.row);
    }
    return b;
}

namespace {

int64_t block_size(const int64_t *b) { return checked_mul(rows_of(b), cols_of(b), "a matrix-mult block"); }

// 1-D SCATTER layout of each rank's X (domain) or Y (range) block.
ArrayLayout::Ptr blocks_layout(const CommPtr &c, const std::vector<MatmulBlocks> &all, bool range,
                               std::vector<int> mask)
{
    std::vector<int64_t> sizes;
    for (const MatmulBlocks &b : all) sizes.push_back(block_size(range ? b.y : b.x));
    return vector_layout(c, sizes, PLM_PARTITION_SCATTER, std::move(mask));
}

void require_blas_sizes(const MatmulBlocks &b)
{
    for (const int64_t *v : {b.a, b.x, b.y})
        PLM_REQUIRE(rows_of(v) <= INT_MAX && cols_of(v) <= INT_MAX, PLM_ERR_NOT_SUPPORTED,
                    "matrix-mult blocks are limited to INT_MAX rows and columns (CBLAS int sizes)");
}

}  // namespace

Operator::Ptr matrix_mult(comm::Agreement &ag, const CommPtr &c, int kind, int grid_rows, int dtype, int64_t n,
                          int64_t k, int64_t m, const void *a, int64_t a_bytes)
{
    Parts p;
    std::vector<MatmulBlocks> all;  // every rank's blocks: they follow from the arguments alone
    std::vector<int> rows, cols;
    ag.check([&] {
        p.dt = from_public(dtype);
        PLM_REQUIRE(p.dt == DType::f32 || p.dt == DType::f64 || is_complex(p.dt), PLM_ERR_INVALID_ARG,
                    "matrix mult takes float32, float64, complex64 or complex128, not %s", dtype_name(p.dt));
        p.b = matmul_blocks(kind, c->size(), c->rank(), grid_rows, n, k, m);
        require_blas_sizes(p.b);
        // The global vectors: X and Y once (SUMMA) or once per grid column (block).
        const int64_t copies = kind == PLM_MATMUL_SUMMA ? 1 : p.b.grid_cols;
        checked_product({copies, k, m}, "the matrix-mult domain (X once per grid column)");
        checked_product({copies, n, m}, "the matrix-mult range (Y once per grid column)");
        const int64_t na = block_size(p.b.a);
        PLM_REQUIRE(a || na == 0, PLM_ERR_INVALID_ARG, "a is NULL but this rank's block of A has %lld elements",
                    static_cast<long long>(na));
        p.a = Buffer::allocate(Space::host, require_buffer_bytes("matrix_mult: a", a_bytes, na, p.dt));
        if (na) std::memcpy(p.a.data(), a, p.a.bytes());
        if (kind == PLM_MATMUL_SUMMA) {  // the panels an apply will need must fit
            const int64_t w = widest(segments(k, p.b.grid_rows, p.b.grid_cols));
            checked_bytes(checked_mul(2,
                                      checked_product({checked_add(rows_of(p.b.y), cols_of(p.b.y), "a SUMMA panel"), w},
                                                      "a SUMMA panel set"),
                                      "two SUMMA panel sets"),
                          p.dt, "two SUMMA panel sets in bytes");
            checked_bytes(checked_mul(k, cols_of(p.b.y), "X's column block"), p.dt, "X's column block in bytes");
        }
        for (int r = 0; r < c->size(); ++r) {
            all.push_back(matmul_blocks(kind, c->size(), r, p.b.grid_rows, n, k, m));
            rows.push_back(all.back().row);
            cols.push_back(all.back().col);
        }
    });
    for (int64_t v : {int64_t{kind}, int64_t{grid_rows}, int64_t{dtype}, n, k, m}) ag.fold(v);
    ag.run();
    return comm::finish_collective(*c, "op_matrix_mult", {&rows, &cols}, [&]() -> Operator::Ptr {
        p.row = &c->mask_group(rows);
        p.col = &c->mask_group(cols);
        if (kind == PLM_MATMUL_SUMMA) {
            // X elements of each rank of my grid column, in row order (the gathered forward).
            std::vector<int64_t> x_counts;
            for (int r = 0; r < p.b.grid_rows; ++r)
                x_counts.push_back(block_size(all[static_cast<size_t>(r * p.b.grid_cols + p.b.col)].x));
            return std::make_shared<Summa>(blocks_layout(c, all, false, {}), blocks_layout(c, all, true, {}),
                                           std::move(p), k, std::move(x_counts));
        }
        // Y elements of each rank of my grid row, in column order.
        std::vector<int64_t> counts;
        for (int q = 0; q < p.b.grid_cols; ++q)
            counts.push_back(rows_of(all[static_cast<size_t>(p.b.row * p.b.grid_cols + q)].a) * cols_of(p.b.y));
        return std::make_shared<BlockMatmul>(blocks_layout(c, all, false, cols), blocks_layout(c, all, true, cols),
                                             std::move(p), std::move(counts));
    });
}

}  // namespace plm::ops
