/* A program outside the project, built against an INSTALLED pylopsmpi (scripts/install-test):
 * it creates a communicator on MPI_COMM_WORLD and a distributed vector x with x_i = i + 1, and
 * checks dot(x, x) = n(n+1)(2n+1)/6 and ||x||_2 on every rank. Rank 0 prints one line starting
 * with "pylopsmpi consumer OK" and the compiled-in backends. Exit status 0 only if every check
 * passed on every rank. Valid C99 and C++ (consumer_cxx.cpp includes this file). */
#include <math.h>
#include <stdio.h>
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

int main(int argc, char **argv)
{
    const int64_t n = 1000;
    plm_comm_t comm = PLM_NULL_HANDLE;
    plm_array_t x = PLM_NULL_HANDLE;
    double *data = NULL;
    int64_t nlocal = 0, offset = 0, i;
    double dot = 0.0, norm = 0.0;
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
    }
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
