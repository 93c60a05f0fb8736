// bench_comm: the cost of the backend seam. Blocking and non-blocking allreduce and halo
// exchange through the communication layer (comm/distributed.hpp, a backend object and its
// requests) next to the raw MPI calls they make, measured in the same run on the same
// duplicated communicator, on float64 host buffers. Prints a markdown table on rank 0.
//
//   mpiexec -n 2 build/bench/bench_comm [-r REPS] [-b BATCH] [-n N]...
//
// Each repetition times BATCH back-to-back calls after an MPI_Barrier; its time is the
// maximum over the ranks divided by BATCH; the table shows the median over repetitions.
// White-box (links the internal archive). A benchmark, not a test: it asserts no timing.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <mpi.h>

#include "comm/agreement.hpp"
#include "comm/distributed.hpp"

using namespace plm;
using namespace plm::comm;

namespace {

int g_reps = 31, g_batch = 50;

double time_batch(const std::function<void()> &f, MPI_Comm comm)
{
    for (int k = 0; k < 5; ++k) f();  // warm-up
    std::vector<double> t(static_cast<size_t>(g_reps));
    for (double &tk : t) {
        MPI_Barrier(comm);
        const double t0 = MPI_Wtime();
        for (int k = 0; k < g_batch; ++k) f();
        const double mine = (MPI_Wtime() - t0) / g_batch;
        MPI_Allreduce(&mine, &tk, 1, MPI_DOUBLE, MPI_MAX, comm);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

struct Row {
    std::string what;
    int64_t n;
    double seam, raw;
};

// The raw halo exchange the seam performs: receives from both neighbours, then sends.
void raw_halo(MPI_Comm c, int r, int p, double *to_prev, double *to_next, double *from_prev, double *from_next, int n)
{
    MPI_Request q[4];
    int k = 0;
    if (r > 0) MPI_Irecv(from_prev, n, MPI_DOUBLE, r - 1, 11, c, &q[k++]);
    if (r + 1 < p) MPI_Irecv(from_next, n, MPI_DOUBLE, r + 1, 12, c, &q[k++]);
    if (r + 1 < p) MPI_Isend(to_next, n, MPI_DOUBLE, r + 1, 11, c, &q[k++]);
    if (r > 0) MPI_Isend(to_prev, n, MPI_DOUBLE, r - 1, 12, c, &q[k++]);
    MPI_Waitall(k, q, MPI_STATUSES_IGNORE);
}

std::vector<Row> run(const Communicator &c, int64_t n)
{
    const MPI_Comm m = c.mpi();
    const int r = c.rank(), p = c.size();
    const int ni = static_cast<int>(n);
    const Exec e{};
    std::vector<double> x(static_cast<size_t>(n), 1.0 + r), y(static_cast<size_t>(n));
    std::vector<Row> rows;

    const double raw_ar = time_batch([&] { MPI_Allreduce(x.data(), y.data(), ni, MPI_DOUBLE, MPI_SUM, m); }, m);
    const double raw_iar = time_batch(
        [&] {
            MPI_Request q;
            MPI_Iallreduce(x.data(), y.data(), ni, MPI_DOUBLE, MPI_SUM, m, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        },
        m);
    rows.push_back({"allreduce (blocking) vs MPI_Allreduce", n,
                    time_batch([&] { allreduce(c, e, x.data(), y.data(), n, DType::f64, ReduceOp::sum); }, m), raw_ar});
    rows.push_back({"iallreduce + wait vs MPI_Iallreduce + MPI_Wait", n,
                    time_batch([&] { iallreduce(c, e, x.data(), y.data(), n, DType::f64, ReduceOp::sum).wait(); }, m),
                    raw_iar});

    std::vector<double> tp(x), tn(x), fp(static_cast<size_t>(n)), fn(static_cast<size_t>(n));
    Halo h;
    h.to_prev = tp.data();
    h.n_to_prev = r > 0 ? n : 0;
    h.from_prev = fp.data();
    h.n_from_prev = r > 0 ? n : 0;
    h.to_next = tn.data();
    h.n_to_next = r + 1 < p ? n : 0;
    h.from_next = fn.data();
    h.n_from_next = r + 1 < p ? n : 0;
    const HaloPlan plan(c, DType::f64, h.n_to_prev, h.n_from_prev, h.n_to_next, h.n_from_next);
    const double raw_h =
        time_batch([&] { raw_halo(m, r, p, tp.data(), tn.data(), fp.data(), fn.data(), ni); }, m);
    rows.push_back({"neighbour_exchange (blocking) vs Irecv/Isend/Waitall", n,
                    time_batch([&] { neighbour_exchange(c, e, DType::f64, h); }, m), raw_h});
    rows.push_back({"HaloPlan start + wait vs Irecv/Isend/Waitall", n,
                    time_batch([&] { plan.start(e, h).wait(); }, m), raw_h});

    // The staging path on host memory: two extra copies around the same MPI call.
    std::unique_ptr<Backend> staged = make_mpi_staged(c.view(), Space::host, Space::host);
    rows.push_back({"staged (host-emulated) allreduce vs MPI_Iallreduce + MPI_Wait", n,
                    time_batch([&] { staged->iallreduce(e, x.data(), y.data(), n, DType::f64, ReduceOp::sum).wait(); },
                               m),
                    raw_iar});
    return rows;
}

// A solver's reduction point: one agreement re-run (rearm, two sum lanes set, run) next to the
// MPI_Allreduce of the same two doubles a hand-written solver makes.
Row agreement_row(const Communicator &c)
{
    const MPI_Comm m = c.mpi();
    double in[2] = {1.0 + c.rank(), 2.0}, out[2];
    const double raw = time_batch([&] { MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_SUM, m); }, m);
    Agreement ag(c, "bench");
    const size_t lane = ag.add_lanes(2, LaneOp::sum);
    ag.run();
    const double seam = time_batch(
        [&] {
            ag.rearm();
            ag.set(lane, in[0]);
            ag.set(lane + 1, in[1]);
            ag.run();
            out[0] = ag.get(lane);
        },
        m);
    return {"agreement (rearmed, 2 sum lanes) vs MPI_Allreduce of 2 doubles", 2, seam, raw};
}

}  // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    std::vector<int64_t> sizes;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-r" && i + 1 < argc) g_reps = std::max(1, std::atoi(argv[++i]));
        else if (a == "-b" && i + 1 < argc) g_batch = std::max(1, std::atoi(argv[++i]));
        else if (a == "-n" && i + 1 < argc) sizes.push_back(std::atoll(argv[++i]));
        else {
            std::fprintf(stderr, "usage: bench_comm [-r REPS] [-b BATCH] [-n N]...\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (sizes.empty()) sizes = {1000, 100000, 1000000};
    int rc = 0;
    try {
        std::shared_ptr<Communicator> c = Communicator::create(MPI_COMM_WORLD, nullptr);
        if (c->rank() == 0) {
            std::printf("bench_comm: %d ranks, float64 host buffers, median of %d reps x %d calls\n\n", c->size(),
                        g_reps, g_batch);
            std::printf("| operation | N | seam (us) | raw MPI (us) | seam / raw |\n|---|---:|---:|---:|---:|\n");
        }
        std::vector<Row> rows = {agreement_row(*c)};
        for (int64_t n : sizes)
            for (const Row &row : run(*c, n)) rows.push_back(row);
        for (const Row &row : rows)
            if (c->rank() == 0)
                std::printf("| %s | %lld | %.2f | %.2f | %.2f |\n", row.what.c_str(), static_cast<long long>(row.n),
                            row.seam * 1e6, row.raw * 1e6, row.seam / row.raw);
    } catch (const Error &err) {
        std::fprintf(stderr, "bench_comm: %s\n", err.what());
        rc = 1;
    }
    MPI_Finalize();
    return rc;
}
