/* Error checking and data shared by the C benches. Header-only: each bench stays one file. */
#ifndef PLM_BENCH_UTIL_H
#define PLM_BENCH_UTIL_H

#include <math.h>
#include <stdio.h>

#include <mpi.h>

#include "pylopsmpi.h"

/* A failed call ends the whole run: a bench has nothing to recover. */
#define CHECK(call)                                                                                  \
    do {                                                                                             \
        plm_status_t st_ = (call);                                                                   \
        if (st_ != PLM_SUCCESS) {                                                                    \
            int r_ = 0;                                                                              \
            MPI_Comm_rank(MPI_COMM_WORLD, &r_);                                                      \
            fprintf(stderr, "[rank %d] %s: %s\n  %s\n", r_, #call, plm_status_string(st_), plm_last_error()); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
        }                                                                                            \
    } while (0)

/* A float64 array's local block set to sin(s + 0.001 i): smooth, non-zero data. */
static inline void bench_fill(plm_array_t x, double s)
{
    int64_t n = 0;
    double *d = NULL;
    CHECK(plm_array_local_size(x, &n));
    CHECK(plm_array_get_local_write(x, (void **)&d));
    for (int64_t i = 0; i < n; ++i) d[i] = sin(s + 0.001 * (double)i);
    CHECK(plm_array_restore_local_write(x, (void **)&d));
}

#endif
