// MatrixMult entry points: argument and handle checks only; the work is in src/ops/matmul.cpp.
#include <algorithm>
#include <memory>

#include "c_api/guard.hpp"

using namespace plm;

extern "C" {

PLM_API plm_status_t plm_matmul_blocks(plm_matmul_kind_t kind, int nranks, int rank, int grid_rows, int64_t n,
                                       int64_t k, int64_t m, int grid[4], int64_t a[4], int64_t x[4], int64_t y[4])
{
    return detail::guard([&] {
        const ops::MatmulBlocks b = ops::matmul_blocks(enum_value(kind), nranks, rank, grid_rows, n, k, m);
        const int g[4] = {b.grid_rows, b.grid_cols, b.row, b.col};
        if (grid) std::copy(g, g + 4, grid);
        if (a) std::copy(b.a, b.a + 4, a);
        if (x) std::copy(b.x, b.x + 4, x);
        if (y) std::copy(b.y, b.y + 4, y);
    });
}

PLM_API plm_status_t plm_op_matrix_mult(plm_comm_t comm, plm_matmul_kind_t kind, int grid_rows, plm_dtype_t dtype,
                                        int64_t n, int64_t k, int64_t m, const void *a, plm_op_t *out)
{
    return detail::guard([&] {
        if (out) *out = nullptr;
        comm::Communicator &c = detail::comm_of(comm);
        comm::Agreement ag(c, "op_matrix_mult");
        std::unique_ptr<plm_op_s> h;
        ag.check([&] {
            detail::clear_out(out, "out");
            h.reset(new plm_op_s());
        });
        h->op = ops::matrix_mult(ag, comm->comm, enum_value(kind), grid_rows, enum_value(dtype), n, k, m, a);
        h->magic = detail::kOpMagic;
        *out = h.release();
    });
}

}  // extern "C"
