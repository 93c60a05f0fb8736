/* A program outside the project, built against an INSTALLED pylopsmpi (scripts/install-test):
 * it creates a communicator on MPI_COMM_WORLD and a distributed vector x with x_i = i + 1, and
 * checks dot(x, x) = n(n+1)(2n+1)/6 and ||x||_2 on every rank; then it solves a damped
 * least-squares problem with CGLS (cgls_check below) and compares the result with a serial
 * float64 reference. Rank 0 prints one line starting with "pylopsmpi consumer OK" and the
 * compiled-in backends, then "VERIFIED ..." if the solve matched. Exit status 0 only if every
 * check passed on every rank. Valid C99 and C++ (consumer_cxx.cpp includes this file). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pylopsmpi.h>

#define CHECK(call)                                                                          \
    do {                                                                                     \
        plm_status_t st_ = (call);                                                           \
        if (st_ != PLM_SUCCESS) {                                                            \
            fprintf(stderr, "consumer: %s failed: %s (%s)\n", #call, plm_status_string(st_), \
                    plm_last_error());                                                       \
            ok = 0;                                                                          \
            goto done;                                                                       \
        }                                                                                    \
    } while (0)

/* The problem the install consumers share (tests/install/consumer_f.f90, consumer_py.py):
 * A = blockdiag over the ranks of diagonal blocks, d_i = 1 + 0.5 (i mod 7) for global index i
 * (n = 1000 split as plm_array_create does), y_i = 1 + 0.25 (i mod 11), damp = 0.5. CGLS from
 * x = 0 minimises ||y - A x||^2 + damp^2 ||x||^2, whose solution is x_i = d_i y_i / (d_i^2 + damp^2);
 * the serial reference is that formula over the whole vector on every rank. Returns the largest
 * relative error over all ranks in *err (collective), or a failed status. */
static plm_status_t cgls_check(plm_comm_t comm, int rank, int size, double *err, int64_t *iters)
{
    const int64_t n = 1000;
    const double damp = 0.5;
    const int64_t nloc = n / size + (rank < n % size ? 1 : 0);
    const int64_t off = rank * (n / size) + (rank < n % size ? rank : n % size);
    double *d = (double *)malloc(sizeof(double) * (size_t)(nloc + 1));
    double *ref = (double *)malloc(sizeof(double) * (size_t)n);
    plm_op_t diag = PLM_NULL_HANDLE, A = PLM_NULL_HANDLE;
    plm_layout_t dom = PLM_NULL_HANDLE, ran = PLM_NULL_HANDLE;
    plm_array_t x = PLM_NULL_HANDLE, y = PLM_NULL_HANDLE;
    plm_solver_info_t info = PLM_NULL_HANDLE;
    double *v = NULL, local_err = 0.0;
    int64_t i, xoff = 0, xn = 0;
    plm_status_t st;

    for (i = 0; i < n; ++i) {
        const double di = 1.0 + 0.5 * (double)(i % 7), yi = 1.0 + 0.25 * (double)(i % 11);
        ref[i] = di * yi / (di * di + damp * damp);
    }
    for (i = 0; i < nloc; ++i) d[i] = 1.0 + 0.5 * (double)((off + i) % 7);
#define STEP(call) do { st = (call); if (st != PLM_SUCCESS) goto out; } while (0)
    STEP(plm_op_diagonal(PLM_FLOAT64, nloc, d, nloc * (int64_t)sizeof *d, &diag));
    STEP(plm_op_blockdiag(comm, 1, (const plm_const_op_t *)&diag, 0, NULL, &A));
    STEP(plm_op_domain(A, &dom));
    STEP(plm_op_range(A, &ran));
    STEP(plm_array_create_from_layout(dom, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &x));
    STEP(plm_array_create_from_layout(ran, PLM_FLOAT64, PLM_MEMORY_HOST, NULL, 0, &y));
    STEP(plm_array_local_offset(y, &xoff));
    STEP(plm_array_local_size(y, &xn));
    STEP(plm_array_get_local_write(y, (void **)&v));
    for (i = 0; i < xn; ++i) v[i] = 1.0 + 0.25 * (double)((xoff + i) % 11);
    STEP(plm_array_restore_local_write(y, (void **)&v));
    STEP(plm_array_fill(x, 0.0, 0.0));
    STEP(plm_solver_info_create(&info));
    STEP(plm_solve_cgls(A, y, x, 100, damp, 1e-24, info));
    STEP(plm_solver_info_iterations(info, iters));
    STEP(plm_array_local_offset(x, &xoff));
    STEP(plm_array_local_size(x, &xn));
    if (xoff != off || xn != nloc) local_err = HUGE_VAL; /* not the split assumed above */
    STEP(plm_array_get_local_write(x, (void **)&v));
    for (i = 0; i < xn && local_err != HUGE_VAL; ++i) {
        const double e = fabs(v[i] - ref[xoff + i]) / fabs(ref[xoff + i]);
        if (!(e <= local_err)) local_err = e > local_err ? e : HUGE_VAL; /* NaN counts as failure */
    }
    STEP(plm_array_restore_local_write(x, (void **)&v));
#undef STEP
out:
    plm_solver_info_destroy(&info);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_layout_destroy(&dom);
    plm_layout_destroy(&ran);
    plm_op_destroy(&A);
    plm_op_destroy(&diag);
    free(d);
    free(ref);
    if (st == PLM_SUCCESS) MPI_Allreduce(&local_err, err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return st;
}

int main(int argc, char **argv)
{
    const int64_t n = 1000;
    plm_comm_t comm = PLM_NULL_HANDLE;
    plm_array_t x = PLM_NULL_HANDLE;
    double *data = NULL;
    int64_t nlocal = 0, offset = 0, i;
    double dot = 0.0, norm = 0.0, cgls_err = HUGE_VAL;
    int64_t cgls_iters = 0;
    const double expect = (double)n * (double)(n + 1) * (double)(2 * n + 1) / 6.0;
    int rank = 0, size = 1, ok = 1, all_ok = 0, b;
    char backends[128] = "";

    MPI_Init(&argc, &argv);

    CHECK(plm_check_header_version());
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    CHECK(plm_comm_rank(comm, &rank));
    CHECK(plm_comm_size(comm, &size));
    CHECK(plm_array_create(comm, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &x));
    CHECK(plm_array_local_size(x, &nlocal));
    CHECK(plm_array_local_offset(x, &offset));
    CHECK(plm_array_get_local_write(x, (void **)&data));
    for (i = 0; i < nlocal; ++i) data[i] = (double)(offset + i + 1);
    CHECK(plm_array_restore_local_write(x, (void **)&data));

    CHECK(plm_array_dot(x, x, 0, &dot, NULL));
    CHECK(plm_array_norm(x, 2.0, &norm));
    if (dot != expect) {
        fprintf(stderr, "consumer: rank %d: dot = %.17g, expected %.17g\n", rank, dot, expect);
        ok = 0;
    }
    if (fabs(norm - sqrt(expect)) > 1e-12 * sqrt(expect)) {
        fprintf(stderr, "consumer: rank %d: norm = %.17g, expected %.17g\n", rank, norm, sqrt(expect));
        ok = 0;
    }
    CHECK(cgls_check(comm, rank, size, &cgls_err, &cgls_iters));
    if (!(cgls_err < 1e-10)) {
        fprintf(stderr, "consumer: rank %d: CGLS relative error %.3g\n", rank, cgls_err);
        ok = 0;
    }

done:
    plm_array_destroy(&x);
    plm_comm_destroy(&comm);
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);

    for (b = PLM_BACKEND_MPI_HOST; b <= PLM_BACKEND_NCCL; ++b) {
        int built = 0;
        plm_backend_compiled((plm_backend_t)b, &built);
        if (built) {
            if (backends[0]) strcat(backends, ",");
            strcat(backends, plm_backend_name((plm_backend_t)b));
        }
    }
    if (rank == 0) {
        printf("pylopsmpi consumer %s: header %s, library %s (%s), ranks=%d dot=%.1f backends=%s\n",
               all_ok ? "OK" : "FAILED", PLM_VERSION_STRING, plm_version_string(), plm_git_hash(),
               size, dot, backends);
        if (all_ok)
            printf("VERIFIED: CGLS on blockdiag(diagonal) n=1000, %lld iterations, max rel error %.2e vs serial float64\n",
                   (long long)cgls_iters, cgls_err);
    }
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
