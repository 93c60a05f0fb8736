/**
 * @file pylopsmpi/matmul.h
 * @brief MatrixMult, block and SUMMA kinds, on a process grid of any rank count.
 *
 * Part of the C API: include pylopsmpi.h, whose conventions hold here.
 */
#ifndef PYLOPSMPI_MATMUL_H
#define PYLOPSMPI_MATMUL_H

#include "op.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup plm_matmul Distributed matrix multiplication
 *  @brief MatrixMult, block and SUMMA kinds, on a process grid of any rank count.
 *  @{ */

/* ------------------------------------------------------------------------------------------ */
/* Distributed matrix multiplication                                                          */
/* ------------------------------------------------------------------------------------------ */

/** MatrixMult kinds: PyLops-MPI's kind="block" and kind="summa". */
typedef enum plm_matmul_kind {
    PLM_MATMUL_BLOCK = 0, /**< kind="block": A split by rows, X and Y by columns */
    PLM_MATMUL_SUMMA = 1, /**< kind="summa": A, X and Y split in 2-D blocks (SUMMA) */
    PLM_MATMUL_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_matmul_kind_t;

/**
 * Y = A X with A (n x k), X (k x m), Y (n x m), on a grid_rows x grid_cols process grid
 * (rank = row * grid_cols + col). Any rank count works: grid_rows must divide it, or be 0 to
 * choose the grid for the shape and kind. The choice (R rows, Q = nranks / R columns) is the
 * divisor with the smallest cost in elements per rank, ties going first to the largest divisor
 * not above the square root of nranks, then to the fewest rows:
 * - SUMMA, what a rank receives per apply (A panels along its grid row, X panels along its
 *   grid column): n k (Q - 1) / (R Q) + k m (R - 1) / (R Q);
 * - block, what a rank holds plus what it receives (the mean of forward and adjoint):
 *   n k / Q + (k + n) m / R + (Q - 1) / Q * m / R * (n + 2 k) / 2.
 * Square products keep the squarest grid with rows <= columns (SUMMA on 6 ranks: 2 x 3; a
 * prime: 1 x P); thin ones get one grid column or one grid row (SUMMA 4096 x 256 x 64 on 2
 * ranks: 2 x 1, where A never moves). Pass grid_rows to override. A dimension of d points
 * split in q blocks gives block
 * i the range [min(d, i b), min(d, (i+1) b)) with b = ceil(d / q) (trailing blocks may be
 * empty). For rank `rank`, writes (each may be NULL):
 * - grid: {grid_rows, grid_cols, row, col};
 * - a, x, y: {row_begin, row_end, col_begin, col_end} of this rank's block of A, X and Y.
 * SUMMA: A block (row, col) of n split in grid_rows and k in grid_cols; X block (row, col)
 * of k split in grid_rows and m in grid_cols; Y block (row, col) of n in grid_rows and m in
 * grid_cols. Block: A rows block col of n split in grid_cols, all k columns; X and Y all
 * rows and column block row of m split in grid_rows (X is held by the grid_cols ranks of a
 * grid row alike). PLM_ERR_INVALID_ARG for an unknown kind, nranks < 1, a rank outside
 * 0..nranks-1, a grid_rows neither 0 nor a divisor of nranks, or a negative size.
 * @param[in]  kind      block or SUMMA
 * @param[in]  nranks    number of ranks
 * @param[in]  rank      the rank asked about, 0..nranks-1
 * @param[in]  grid_rows rows of the process grid, or 0 to choose for the shape and kind
 * @param[in]  n         rows of A and Y
 * @param[in]  k         columns of A, rows of X
 * @param[in]  m         columns of X and Y
 * @param[out] grid      {grid_rows, grid_cols, row, col}; may be NULL
 * @param[out] a         {row_begin, row_end, col_begin, col_end} of the block of A; may be NULL
 * @param[out] x         {row_begin, row_end, col_begin, col_end} of the block of X; may be NULL
 * @param[out] y         {row_begin, row_end, col_begin, col_end} of the block of Y; may be NULL
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_matmul_blocks(plm_matmul_kind_t kind, int nranks, int rank, int grid_rows, int64_t n,
                                       int64_t k, int64_t m, int grid[4], int64_t a[4], int64_t x[4], int64_t y[4]);
/**
 * Distributed matrix multiplication (MPIMatrixMult), dtype any of the four. a: this rank's
 * block of A (see plm_matmul_blocks), row-major, host memory, copied; may be NULL where that
 * block is empty. kind, grid_rows, dtype, n, k and m must be equal on every rank. Domain and
 * range are 1-D SCATTER of this rank's X and Y blocks, row-major (the global vector is the
 * blocks in rank order, not the row-major matrix); host memory.
 * - SUMMA: the forward broadcasts panels of A along grid rows and of X along grid columns
 *   and accumulates their products; the adjoint broadcasts A panels along rows and reduces
 *   the products along columns. The next panel's communication overlaps this panel's gemm.
 *   On one grid column A's panels are read in place and the forward gathers X's column block
 *   whole (one allgatherv, k x m elements of scratch) for a single gemm.
 * - block: y block = all of A times the X block: a local gemm, then an allgatherv along the
 *   grid row; the adjoint reduces along it. X and Y are replicated across a grid row, so
 *   domain and range carry the mask {col of each rank}: reductions (dot, norms, solvers)
 *   count one copy. Inputs must hold equal copies (the results do).
 * @param[in]  comm      communicator
 * @param[in]  kind      block or SUMMA
 * @param[in]  grid_rows rows of the process grid, or 0 to choose for the shape (plm_matmul_blocks())
 * @param[in]  dtype     element type
 * @param[in]  n         rows of A and Y
 * @param[in]  k         columns of A, rows of X
 * @param[in]  m         columns of X and Y
 * @param[in]  a         this rank's block of A, host memory (NULL with a_bytes 0 where it is
 *                       empty) \mem{host}
 * @param[in]  a_bytes   must equal the block's element count * plm_dtype_size(dtype)
 *                       (PLM_ERR_INVALID_ARG on every rank otherwise)
 * @param[out] out       new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_matrix_mult(plm_comm_t comm, plm_matmul_kind_t kind, int grid_rows, plm_dtype_t dtype,
                                        int64_t n, int64_t k, int64_t m, const void *a, int64_t a_bytes,
                                        plm_op_t *out);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PYLOPSMPI_MATMUL_H */
