// MatrixMult entry points (pylopsmpi/matmul.h): handle checks and conversions only; the work is
// in src/ops/basic/matmul.cpp.
#include <memory>

#include "c_api/op_api.hpp"

using namespace plm;
using namespace plm::detail;

extern "C" {

PLM_API plm_status_t plm_matmul_blocks(plm_matmul_kind_t kind, int nranks, int rank, int grid_rows, int64_t n,
                                       int64_t k, int64_t m, int grid[4], int64_t a[4], int64_t x[4], int64_t y[4])
{
    return guard([&] {
        const ops::MatmulBlocks b = ops::matmul_blocks(enum_value(kind), nranks, rank, grid_rows, n, k, m);
        const int g[4] = {b.grid_rows, b.grid_cols, b.row, b.col};
        if (grid) std::copy(g, g + 4, grid);
        if (a) std::copy(b.a, b.a + 4, a);
        if (x) std::copy(b.x, b.x + 4, x);
        if (y) std::copy(b.y, b.y + 4, y);
    });
}

PLM_API plm_status_t plm_op_matrix_mult(plm_comm_t comm, plm_matmul_kind_t kind, int grid_rows, plm_dtype_t dtype,
                                        int64_t n, int64_t k, int64_t m, const void *a, int64_t a_bytes,
                                        plm_op_t *out)
{
    return make_on(comm, "op_matrix_mult", out, [&](comm::Agreement &ag, const CommPtr &c) {
        return ops::matrix_mult(ag, c, enum_value(kind), grid_rows, enum_value(dtype), n, k, m, a, a_bytes);
    });
}

}  // extern "C"
