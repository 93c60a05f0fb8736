/* Post-stack inversion, in the pattern of PyLops-MPI's post-stack tutorial:
 *
 *     min ||d - G m||^2 + eps^2 ||L m||^2 + damp^2 ||m||^2,    G = 1/2 W D_t
 *
 * m is a 2-D section of log acoustic impedance contrasts, NX traces of NT samples, split along x
 * (whole traces) over the ranks. D_t is the distributed first derivative along t (a reflectivity
 * from the log impedance) and W the convolution of every trace with a Ricker wavelet, a
 * block-diagonal operator with one dense block per trace. L is the 2-D Laplacian over (x, t),
 * whose x part needs the neighbouring ranks' traces. The stacked operator [G; eps L] maps m to
 * [d; 0] and CGLS solves it from data d = G m_true, printing its progress table.
 *
 * Check: rank 0 solves the same normal equations (G^T G + eps^2 L^T L + damp^2 I) m = G^T d
 * serially in float64 (Cholesky) and the program prints VERIFIED and exits 0 only if the two
 * agree to REL_TOL (see below), at any rank count.
 *
 *   mpiexec -n 4 build/examples/poststack_inversion */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <pylopsmpi.h>

#define TRY(call)                                                                                     \
    do {                                                                                              \
        plm_status_t st_ = (call);                                                                    \
        if (st_ != PLM_SUCCESS) {                                                                     \
            fprintf(stderr, "%s failed: %s\n  %s\n", #call, plm_status_string(st_), plm_last_error()); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                             \
        }                                                                                             \
    } while (0)

enum { NX = 24, NT = 64, NM = NX * NT, NW = 21 };
static const double EPS = 0.2, DAMP = 0.05, TOL = 1e-24;
/* Tolerance: CGLS stops when the normal-equations residual s = G~^T (y - G~ m) - damp^2 m has
 * ||s||^2 < TOL; as the normal matrix is >= damp^2 I, the error to the exact solution is then at
 * most sqrt(TOL) / damp^2 = 4e-10, about 1e-10 relative (||m|| = 3.7). Rounding (the summation
 * order changes with the rank count; the serial Cholesky) adds ~1e-13. A wrong operator or a bad
 * halo exchange gives errors of order 1e-2 to 1. */
static const double REL_TOL = 1e-9;

/* Ricker wavelet of peak frequency 20 Hz at 4 ms sampling, NW samples centred on index NW / 2. */
static double ricker(int k)
{
    const double pi = 3.14159265358979323846, a = pi * 20.0 * 0.004 * (k - NW / 2);
    return (1 - 2 * a * a) * exp(-a * a);
}

/* W on one trace: the convolution with the wavelet, truncated at the trace ends. */
static void wavelet_matrix(double w[NT][NT])
{
    for (int i = 0; i < NT; i++)
        for (int j = 0; j < NT; j++) w[i][j] = abs(i - j) <= NW / 2 ? ricker(i - j + NW / 2) : 0.0;
}

/* For the serial reference, one trace's block of G = 1/2 W D_t, with D_t the centered first
 * derivative with one-sided ends (plm_op_first_derivative's centered, order 3, edge 1). */
static void trace_block(double g[NT][NT])
{
    double w[NT][NT], d[NT][NT] = {{0}};
    wavelet_matrix(w);
    for (int i = 1; i < NT - 1; i++) d[i][i - 1] = -0.5, d[i][i + 1] = 0.5;
    d[0][0] = -1, d[0][1] = 1, d[NT - 1][NT - 2] = -1, d[NT - 1][NT - 1] = 1;
    for (int i = 0; i < NT; i++)
        for (int j = 0; j < NT; j++) {
            double s = 0;
            for (int k = 0; k < NT; k++) s += w[i][k] * d[k][j];
            g[i][j] = 0.5 * s;
        }
}

/* The true model: a background with a dipping layer, a lens and a step at depth. */
static double m_true(int x, int t)
{
    double v = t > 48 ? 0.3 : 0.0;
    if (t > 14 + x / 2 && t <= 24 + x / 2) v += 0.2;
    if ((x - 12) * (x - 12) + 4 * (t - 38) * (t - 38) < 40) v -= 0.25;
    return v;
}

/* Serial operators on full sections (in: NM values): out = G in (adj 0) or G^T in (adj 1),
 * and out = L in or L^T in with L the centered second differences along x and t (no edge). */
static void g_serial(double g[NT][NT], const double *in, double *out, int adj)
{
    for (int x = 0; x < NX; x++)
        for (int i = 0; i < NT; i++) {
            double s = 0;
            for (int j = 0; j < NT; j++) s += (adj ? g[j][i] : g[i][j]) * in[x * NT + j];
            out[x * NT + i] = s;
        }
}
static void l_serial(const double *in, double *out, int adj)
{
    for (int c = 0; c < NM; c++) out[c] = 0;
    for (int x = 0; x < NX; x++)
        for (int t = 0; t < NT; t++) {
            const int c = x * NT + t, step[2] = {NT, 1}, inner[2] = {x > 0 && x < NX - 1, t > 0 && t < NT - 1};
            for (int a = 0; a < 2; a++) {
                if (!inner[a]) continue;
                const int tap[3] = {c - step[a], c, c + step[a]};
                const double wt[3] = {1, -2, 1};
                for (int k = 0; k < 3; k++) {
                    if (adj) out[tap[k]] += wt[k] * in[c];
                    else out[c] += wt[k] * in[tap[k]];
                }
            }
        }
}

/* m = (G^T G + eps^2 L^T L + damp^2 I)^{-1} G^T d, by Cholesky, column by column of the matrix. */
static void serial_solution(double g[NT][NT], const double *d, double *m)
{
    double *a = calloc((size_t)NM * NM, sizeof *a), *e = calloc(NM, sizeof *e);
    double *u = malloc(NM * sizeof *u), *v = malloc(NM * sizeof *v), *b = malloc(NM * sizeof *b);
    for (int j = 0; j < NM; j++) {
        e[j] = 1;
        g_serial(g, e, u, 0), g_serial(g, u, v, 1);
        for (int i = 0; i < NM; i++) a[(size_t)i * NM + j] = v[i] + (i == j ? DAMP * DAMP : 0);
        l_serial(e, u, 0), l_serial(u, v, 1);
        for (int i = 0; i < NM; i++) a[(size_t)i * NM + j] += EPS * EPS * v[i];
        e[j] = 0;
    }
    g_serial(g, d, b, 1);
    for (int j = 0; j < NM; j++) { /* a = R^T R, R upper triangular, in a's upper triangle */
        for (int k = 0; k < j; k++)
            for (int i = j; i < NM; i++) a[(size_t)j * NM + i] -= a[(size_t)k * NM + j] * a[(size_t)k * NM + i];
        const double r = sqrt(a[(size_t)j * NM + j]);
        for (int i = j; i < NM; i++) a[(size_t)j * NM + i] /= r;
    }
    for (int i = 0; i < NM; i++) { /* R^T u = b, then R m = u */
        double s = b[i];
        for (int k = 0; k < i; k++) s -= a[(size_t)k * NM + i] * u[k];
        u[i] = s / a[(size_t)i * NM + i];
    }
    for (int i = NM - 1; i >= 0; i--) {
        double s = u[i];
        for (int k = i + 1; k < NM; k++) s -= a[(size_t)i * NM + k] * m[k];
        m[i] = s / a[(size_t)i * NM + i];
    }
    free(a), free(e), free(u), free(v), free(b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    plm_comm_t comm = NULL;
    TRY(plm_comm_create(MPI_COMM_WORLD, NULL, &comm));

    /* G = 1/2 W D_t: D_t on the 2-D section split along x by the default split (local_rows -1),
     * W as this rank's traces (the same default split: NX / size, one more on the first ranks) */
    static double w[NT][NT];
    wavelet_matrix(w);
    const int nx_local = NX / size + (rank < NX % size);
    const int64_t dims[2] = {NX, NT};
    const int axes[2] = {0, 1};
    plm_op_t wop = NULL, W = NULL, Dt = NULL, WD = NULL, G = NULL, L = NULL, epsL = NULL, op = NULL;
    TRY(plm_op_dense(PLM_FLOAT64, NT, NT, w, sizeof w, 0, 0, &wop));
    plm_const_op_t *traces = malloc(sizeof *traces * (size_t)(nx_local + 1));
    for (int i = 0; i < nx_local; i++) traces[i] = wop;
    TRY(plm_op_blockdiag(comm, nx_local, traces, 0, NULL, &W));
    free(traces);
    TRY(plm_op_first_derivative(comm, PLM_FLOAT64, 2, dims, -1, 1, 1.0, PLM_DERIV_CENTERED, 3, 1, &Dt));
    TRY(plm_op_product(W, Dt, &WD));
    TRY(plm_op_scale(WD, 0.5, 0, &G));
    /* eps L, and the stack [G; eps L] */
    TRY(plm_op_laplacian(comm, PLM_FLOAT64, 2, dims, -1, 2, axes, NULL, NULL, PLM_DERIV_CENTERED, 0, &L));
    TRY(plm_op_scale(L, EPS, 0, &epsL));
    const plm_const_op_t parts[2] = {G, epsL};
    TRY(plm_op_stacked_vstack(2, parts, &op));

    /* the true model on this rank's traces, the data d = G m_true, and the stack [d; 0] */
    plm_array_t m = NULL, mt = NULL, d = NULL, zero = NULL;
    TRY(plm_op_new_domain_array(G, PLM_MEMORY_HOST, &mt));
    TRY(plm_op_new_domain_array(G, PLM_MEMORY_HOST, &m));
    TRY(plm_op_new_range_array(G, PLM_MEMORY_HOST, &d));
    TRY(plm_op_new_range_array(epsL, PLM_MEMORY_HOST, &zero));
    int64_t off = 0, n = 0;
    double *v = NULL;
    TRY(plm_array_local_offset(mt, &off));
    TRY(plm_array_local_size(mt, &n));
    TRY(plm_array_get_local_write(mt, (void **)&v));
    for (int64_t i = 0; i < n; i++) v[i] = m_true((int)((off + i) / NT), (int)((off + i) % NT));
    TRY(plm_array_restore_local_write(mt, (void **)&v));
    TRY(plm_op_apply(G, mt, d));
    TRY(plm_array_fill(zero, 0, 0));
    TRY(plm_array_fill(m, 0, 0));
    plm_array_t ys[2] = {d, zero}, xs[1] = {m};
    plm_stacked_t ystack = NULL, xstack = NULL;
    TRY(plm_stacked_create(2, ys, &ystack));
    TRY(plm_stacked_create(1, xs, &xstack));
    if (rank == 0)
        printf("post-stack inversion: %d x %d model on %d rank(s), %d to %d traces each\n", NX, NT, size,
               NX / size, NX / size + (NX % size != 0));

    /* CGLS with the progress table (printed by rank 0) */
    plm_solver_info_t info = NULL;
    TRY(plm_solver_info_create(&info));
    TRY(plm_solver_info_set_show(info, 1));
    TRY(plm_solve_cgls_stacked(op, ystack, xstack, 2 * NM, DAMP, TOL, info));
    int64_t iters = 0;
    plm_stop_reason_t reason = PLM_STOP_NONE;
    TRY(plm_solver_info_iterations(info, &iters));
    TRY(plm_solver_info_reason(info, &reason));

    /* gather the solution and the data on every rank; rank 0 checks */
    double *mg = malloc(NM * sizeof *mg), *dg = malloc(NM * sizeof *dg), *ref = malloc(NM * sizeof *ref);
    double *gm = malloc(NM * sizeof *gm);
    TRY(plm_array_asarray(m, 0, mg, NM * (int64_t)sizeof *mg));
    TRY(plm_array_asarray(d, 0, dg, NM * (int64_t)sizeof *dg));
    int ok = 1;
    if (rank == 0) {
        static double g[NT][NT];
        trace_block(g);
        serial_solution(g, dg, ref);
        g_serial(g, mg, gm, 0); /* G m, for the data misfit */
        double err = 0, nrm = 0, res = 0, dnrm = 0;
        for (int i = 0; i < NM; i++) {
            err += (mg[i] - ref[i]) * (mg[i] - ref[i]), nrm += ref[i] * ref[i];
            res += (dg[i] - gm[i]) * (dg[i] - gm[i]), dnrm += dg[i] * dg[i];
        }
        const double rel = sqrt(err / nrm);
        ok = reason == PLM_STOP_TOLERANCE && rel < REL_TOL;
        printf("CGLS: %lld iterations, stopped on %s\n", (long long)iters,
               reason == PLM_STOP_TOLERANCE ? "tolerance" : "another reason (not the tolerance)");
        printf("data misfit ||d - G m|| / ||d||: %.3f\n", sqrt(res / dnrm));
        printf("relative error to the serial float64 solution: %.3e (tolerance %.0e)\n", rel, REL_TOL);
        printf("%s\n", ok ? "VERIFIED" : "FAILED");
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);

    free(mg), free(dg), free(ref), free(gm);
    plm_solver_info_destroy(&info);
    plm_stacked_destroy(&ystack);
    plm_stacked_destroy(&xstack);
    plm_array_t arrays[4] = {m, mt, d, zero};
    for (int i = 0; i < 4; i++) plm_array_destroy(&arrays[i]);
    plm_op_t ops[8] = {wop, W, Dt, WD, G, L, epsL, op};
    for (int i = 0; i < 8; i++) plm_op_destroy(&ops[i]); /* composites keep their parts alive */
    plm_comm_destroy(&comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
