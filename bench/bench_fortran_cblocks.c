/* C half of bench_fortran: the same tridiagonal block as bench_fortran.f90's Fortran callback
 * (diag on the diagonal, -1 beside it; symmetric, so one function is matvec and rmatvec),
 * written as a C callback operator. Called from Fortran through bind(C). */
#include <stdint.h>
#include <stdlib.h>
#include <pylopsmpi.h>

static int tridiag_apply(void *ctx, const void *in, int64_t n_in, void *out, int64_t n_out, plm_dtype_t dtype,
                         plm_memory_t memory)
{
    (void)n_out, (void)dtype, (void)memory;
    const double diag = *(const double *)ctx, *x = in;
    double *y = out;
    const int64_t n = n_in;
    for (int64_t i = 0; i < n; i++) y[i] = diag * x[i];
    for (int64_t i = 1; i < n; i++) y[i] -= x[i - 1];
    for (int64_t i = 0; i + 1 < n; i++) y[i] -= x[i + 1];
    return 0;
}

/* An n x n C callback block; 0 or a status. */
int bench_c_tridiagonal(int64_t n, double diag, plm_op_t *out)
{
    double *ctx = malloc(sizeof *ctx);
    if (!ctx) return PLM_ERR_OUT_OF_MEMORY;
    *ctx = diag;
    plm_status_t st = plm_op_callback(PLM_FLOAT64, n, n, tridiag_apply, tridiag_apply, ctx, free, out);
    if (st != PLM_SUCCESS) free(ctx);
    return st;
}
