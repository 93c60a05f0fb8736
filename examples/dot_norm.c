/* Main example: a 2-D field split over the ranks along its second axis (uneven on most rank
 * counts). Computes a dot product, norms and a gather with pylopsmpi, then checks each
 * against the closed form / a serial computation on every rank and prints the verdict.
 *
 *   mpiexec -n 4 build/examples/dot_norm
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <pylopsmpi.h>

#define CHECK(call)                                                                                   \
    do {                                                                                              \
        plm_status_t st_ = (call);                                                                    \
        if (st_ != PLM_SUCCESS) {                                                                     \
            fprintf(stderr, "%s failed: %s\n  %s\n", #call, plm_status_string(st_), plm_last_error()); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                             \
        }                                                                                             \
    } while (0)

enum { NY = 61, NX = 1003 };

static double fx(int64_t i, int64_t j) { return sin(0.01 * (double)(i * NX + j)); }
static double fy(int64_t i, int64_t j) { return cos(0.02 * (double)i) + 1e-3 * (double)j; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    CHECK(plm_check_header_version());
    plm_comm_t comm = NULL;
    CHECK(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));
    int rank = 0, size = 1;
    CHECK(plm_comm_rank(comm, &rank));
    CHECK(plm_comm_size(comm, &size));

    const int64_t shape[2] = {NY, NX};
    plm_array_t x = NULL, y = NULL;
    CHECK(plm_array_create(comm, 2, shape, 1, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &x));
    CHECK(plm_array_empty_like(x, &y));

    /* Fill the local blocks from the global formula. */
    int64_t local[2], off = 0;
    CHECK(plm_array_local_shape(x, local));
    CHECK(plm_array_local_offset(x, &off));
    double *px = NULL, *py = NULL;
    CHECK(plm_array_get_local_write(x, (void **)&px));
    CHECK(plm_array_get_local_write(y, (void **)&py));
    for (int64_t i = 0; i < local[0]; ++i)
        for (int64_t j = 0; j < local[1]; ++j) {
            px[i * local[1] + j] = fx(i, off + j);
            py[i * local[1] + j] = fy(i, off + j);
        }
    CHECK(plm_array_restore_local_write(x, (void **)&px));
    CHECK(plm_array_restore_local_write(y, (void **)&py));

    double dot = 0, n2 = 0, ninf = 0;
    CHECK(plm_array_dot(x, y, 0, &dot, NULL));
    CHECK(plm_array_norm(x, 2.0, &n2));
    CHECK(plm_array_norm(x, INFINITY, &ninf));
    double *g = malloc(sizeof(double) * NY * NX);
    CHECK(plm_array_asarray(x, 0, g, (int64_t)sizeof(double) * NY * NX));

    /* Serial reference, in float64, on every rank. */
    double rdot = 0, rn2 = 0, rinf = 0, gerr = 0;
    for (int64_t i = 0; i < NY; ++i)
        for (int64_t j = 0; j < NX; ++j) {
            rdot += fx(i, j) * fy(i, j);
            rn2 += fx(i, j) * fx(i, j);
            rinf = fmax(rinf, fabs(fx(i, j)));
            gerr = fmax(gerr, fabs(g[i * NX + j] - fx(i, j)));
        }
    rn2 = sqrt(rn2);
    const int ok = fabs(dot - rdot) <= 1e-10 * fabs(rdot) && fabs(n2 - rn2) <= 1e-12 * rn2 && ninf == rinf &&
                   gerr == 0.0;
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("pylopsmpi %s on %d ranks: %lld x %lld float64 array split along axis 1\n", PLM_VERSION_STRING, size,
               (long long)NY, (long long)NX);
        printf("  dot(x, y)  = %.15g (serial %.15g)\n", dot, rdot);
        printf("  ||x||_2    = %.15g (serial %.15g)\n", n2, rn2);
        printf("  ||x||_inf  = %.15g (serial %.15g)\n", ninf, rinf);
        printf("  asarray    max error %.3g\n", gerr);
        printf("%s\n", all_ok ? "VERIFIED: distributed results match the serial reference"
                              : "FAILED: distributed results differ from the serial reference");
    }
    free(g);
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
