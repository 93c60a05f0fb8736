/* Threads sharing local operators (MPI_THREAD_MULTIPLE). Several threads, each with its own
 * communicator, build block-diagonals whose blocks include the same local composites (a
 * product and a sum, which need scratch) and apply them many times at once, forward and
 * adjoint; every result must equal the serial one computed in the thread. v0.2 kept composite
 * scratch in the operator, so two threads applying it at once got mixed results. Exits 77
 * (skipped) when MPI does not provide MPI_THREAD_MULTIPLE. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>
#include <pylopsmpi.h>

enum { NTHREADS = 4, APPLIES = 200, N = 30000 };

static plm_op_t g_shared[2];       /* the product P = D1 D2 and the sum S = D1 + D2, N x N */
static double g_d1[N], g_d2[N];    /* their diagonals */
static plm_comm_t g_comm[NTHREADS];

typedef struct {
    int id;
    long bad;   /* wrong elements */
    int status; /* first failure */
    char why[256];
} job_t;

static void *work(void *arg)
{
    job_t *j = arg;
    static _Thread_local double own_d[N];
    for (int i = 0; i < N; i++) own_d[i] = 1.0 + 0.1 * j->id + 1e-5 * i;
    plm_op_t own = NULL, parts[3], op = NULL;
    if ((j->status = plm_op_diagonal(PLM_FLOAT64, N, own_d, sizeof own_d, &own)) != PLM_SUCCESS) return NULL;
    parts[0] = g_shared[0];
    parts[1] = own;
    parts[2] = g_shared[1];
    j->status = plm_op_blockdiag(g_comm[j->id], 3, (const plm_const_op_t *)parts, 0, NULL, &op);
    plm_op_destroy(&own);
    if (j->status != PLM_SUCCESS) return NULL;
    plm_array_t x = NULL, y = NULL;
    plm_op_new_domain_array(op, PLM_MEMORY_HOST, &x);
    plm_op_new_range_array(op, PLM_MEMORY_HOST, &y);
    for (int k = 0; k < APPLIES && j->status == PLM_SUCCESS; k++) {
        const int adjoint = k % 2;
        double *d = NULL;
        plm_array_get_local_write(adjoint ? y : x, (void **)&d);
        for (int i = 0; i < 3 * N; i++) d[i] = sin(0.1 * i + k + 10 * j->id);
        plm_array_restore_local_write(adjoint ? y : x, (void **)&d);
        j->status = adjoint ? plm_op_apply_adjoint(op, y, x) : plm_op_apply(op, x, y);
        const double *in = NULL, *out = NULL;
        plm_array_get_local_read(adjoint ? y : x, (const void **)&in);
        plm_array_get_local_read(adjoint ? x : y, (const void **)&out);
        for (int i = 0; i < N; i++) { /* real diagonals: the adjoint is the same map */
            const double p = g_d1[i] * g_d2[i] * in[i], o = own_d[i] * in[N + i], s = (g_d1[i] + g_d2[i]) * in[2 * N + i];
            j->bad += fabs(out[i] - p) > 1e-12 * fabs(p) + 1e-300;
            j->bad += fabs(out[N + i] - o) > 1e-12 * fabs(o) + 1e-300;
            j->bad += fabs(out[2 * N + i] - s) > 1e-12 * fabs(s) + 1e-300;
        }
        plm_array_restore_local_read(adjoint ? y : x, (const void **)&in);
        plm_array_restore_local_read(adjoint ? x : y, (const void **)&out);
    }
    if (j->status != PLM_SUCCESS) snprintf(j->why, sizeof j->why, "%s", plm_last_error());  /* thread-local */
    plm_array_destroy(&x);
    plm_array_destroy(&y);
    plm_op_destroy(&op);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0, rank = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("test_threads: skipped (MPI_THREAD_MULTIPLE not provided)\n");
        MPI_Finalize();
        return 77;
    }
    for (int i = 0; i < N; i++) {
        g_d1[i] = 0.5 + 2e-5 * i;
        g_d2[i] = 2.0 - 3e-5 * i;
    }
    plm_op_t d1 = NULL, d2 = NULL;
    int ok = plm_op_diagonal(PLM_FLOAT64, N, g_d1, sizeof g_d1, &d1) == PLM_SUCCESS &&
             plm_op_diagonal(PLM_FLOAT64, N, g_d2, sizeof g_d2, &d2) == PLM_SUCCESS &&
             plm_op_product(d1, d2, &g_shared[0]) == PLM_SUCCESS && plm_op_sum(d1, d2, &g_shared[1]) == PLM_SUCCESS;
    plm_op_destroy(&d1);
    plm_op_destroy(&d2);
    for (int t = 0; t < NTHREADS && ok; t++) ok = plm_comm_create(MPI_COMM_WORLD, NULL, &g_comm[t]) == PLM_SUCCESS;
    job_t jobs[NTHREADS];
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS && ok; t++) {
        jobs[t] = (job_t){t, 0, PLM_SUCCESS, ""};
        pthread_create(&th[t], NULL, work, &jobs[t]);
    }
    long bad = 0;
    int failed = !ok;
    for (int t = 0; t < NTHREADS && ok; t++) {
        pthread_join(th[t], NULL);
        bad += jobs[t].bad;
        if (jobs[t].status != PLM_SUCCESS) {
            fprintf(stderr, "[rank %d] thread %d: status %d: %s\n", rank, t, jobs[t].status, jobs[t].why);
            failed = 1;
        }
    }
    if (bad) fprintf(stderr, "[rank %d] %ld wrong elements over %d threads x %d applies\n", rank, bad, NTHREADS, APPLIES);
    for (int t = 0; t < NTHREADS; t++) plm_comm_destroy(&g_comm[t]);
    plm_op_destroy(&g_shared[0]);
    plm_op_destroy(&g_shared[1]);
    int mine = failed || bad, any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) printf("test_threads: %s (%d threads x %d applies, forward and adjoint)\n", any ? "FAILED" : "passed",
                          NTHREADS, APPLIES);
    MPI_Finalize();
    return any;
}
