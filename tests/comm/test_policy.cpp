// White-box tests of the backend selection policy (src/comm/select.hpp): pure functions,
// checked for every input combination against the rules of DESIGN.md, written out here
// independently of the implementation. Also read_config() validation, the NCCL timeout's
// environment variable and the polling helper NCCL waits and teardown use.
//
// Rules (DESIGN.md, "Backend selection"):
//   1. host (and pinned host) memory -> mpi_host, whatever the rest says;
//   2. device memory: a forced backend (config.backend != AUTO) applies as is;
//   3. device, NCCL attached and not disabled by the environment -> nccl;
//   4. device, MPI CUDA-aware -> mpi_cuda_aware;
//   5. otherwise -> mpi_staged.
//   CUDA-aware: config field (0/1), then PYLOPS_MPI_CUDA_AWARE "0"/"1", then vendor 0/1, else no.
#include <cstdio>
#include <cstring>
#include <string>

// cmocka 1.1 has no extern "C" guards of its own: include it (and what it needs) as C first.
#include <mpi.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
#include "plm_test_mpi.h"
// cmocka defines a fail() macro, which would rewrite plm::fail in PLM_FAIL; we never use it.
#undef fail

#include "comm/communicator.hpp"
#include "comm/select.hpp"

using namespace plm;
using namespace plm::comm;

namespace {

const Space kSpaces[] = {Space::host, Space::device, Space::pinned};
const plm_backend_t kForced[] = {PLM_BACKEND_AUTO, PLM_BACKEND_MPI_CUDA_AWARE, PLM_BACKEND_MPI_STAGED,
                                 PLM_BACKEND_NCCL};
const bool kBools[] = {false, true};

// The rules above, as a decision table.
plm_backend_t expected_backend(Space s, plm_backend_t forced, bool attached, bool enabled, bool aware)
{
    if (s == Space::host || s == Space::pinned) return PLM_BACKEND_MPI_HOST;
    if (forced != PLM_BACKEND_AUTO) return forced;
    if (attached && enabled) return PLM_BACKEND_NCCL;
    return aware ? PLM_BACKEND_MPI_CUDA_AWARE : PLM_BACKEND_MPI_STAGED;
}

void test_select_every_combination(void **)
{
    int n = 0, bad = 0;
    for (Space s : kSpaces)
        for (plm_backend_t f : kForced)
            for (bool attached : kBools)
                for (bool enabled : kBools)
                    for (bool aware : kBools) {
                        PolicyState st;
                        st.forced = f;
                        st.nccl_attached = attached;
                        st.nccl_enabled = enabled;
                        st.cuda_aware = aware;
                        const plm_backend_t got = select_backend(s, st);
                        const plm_backend_t want = expected_backend(s, f, attached, enabled, aware);
                        ++n;
                        if (got != want) {
                            ++bad;
                            std::fprintf(stderr,
                                         "select_backend(%s, forced=%s attached=%d enabled=%d aware=%d) = %s, "
                                         "expected %s\n",
                                         space_name(s), plm_backend_name(f), attached, enabled, aware,
                                         plm_backend_name(got), plm_backend_name(want));
                        }
                    }
    assert_int_equal(n, 3 * 4 * 2 * 2 * 2);
    assert_int_equal(bad, 0);
}

// A few rows of the table spelled out literally, so the table above cannot drift silently.
void test_select_literal_rows(void **)
{
    PolicyState st;  // defaults: AUTO, no NCCL, NCCL enabled, not CUDA-aware
    assert_int_equal(st.forced, PLM_BACKEND_AUTO);
    assert_false(st.nccl_attached);
    assert_true(st.nccl_enabled);
    assert_false(st.cuda_aware);
    assert_int_equal(select_backend(Space::host, st), PLM_BACKEND_MPI_HOST);
    assert_int_equal(select_backend(Space::pinned, st), PLM_BACKEND_MPI_HOST);
    assert_int_equal(select_backend(Space::device, st), PLM_BACKEND_MPI_STAGED);

    st.cuda_aware = true;
    assert_int_equal(select_backend(Space::device, st), PLM_BACKEND_MPI_CUDA_AWARE);
    st.nccl_attached = true;
    assert_int_equal(select_backend(Space::device, st), PLM_BACKEND_NCCL);  // NCCL beats CUDA-aware
    st.nccl_enabled = false;
    assert_int_equal(select_backend(Space::device, st), PLM_BACKEND_MPI_CUDA_AWARE);  // env disables NCCL
    st.cuda_aware = false;
    assert_int_equal(select_backend(Space::device, st), PLM_BACKEND_MPI_STAGED);
    st.forced = PLM_BACKEND_MPI_CUDA_AWARE;
    assert_int_equal(select_backend(Space::device, st), PLM_BACKEND_MPI_CUDA_AWARE);  // forced wins
    assert_int_equal(select_backend(Space::host, st), PLM_BACKEND_MPI_HOST);          // never for host
    st.forced = PLM_BACKEND_MPI_STAGED;
    st.nccl_enabled = true;
    st.cuda_aware = true;
    assert_int_equal(select_backend(Space::device, st), PLM_BACKEND_MPI_STAGED);
    st.forced = PLM_BACKEND_NCCL;
    assert_int_equal(select_backend(Space::pinned, st), PLM_BACKEND_MPI_HOST);
    assert_int_equal(select_backend(Space::device, st), PLM_BACKEND_NCCL);
}

const char *kEnvValues[] = {nullptr, "0", "1", "garbage", "", "yes", "true", " 1", "10", "01"};

CudaAwareDecision expected_aware(int config, const char *env, int vendor)
{
    if (config == 0 || config == 1) return {config == 1, PLM_CUDA_AWARE_FROM_CONFIG};
    if (env && std::strcmp(env, "0") == 0) return {false, PLM_CUDA_AWARE_FROM_ENV};
    if (env && std::strcmp(env, "1") == 0) return {true, PLM_CUDA_AWARE_FROM_ENV};
    if (vendor == 0 || vendor == 1) return {vendor == 1, PLM_CUDA_AWARE_FROM_VENDOR};
    return {false, PLM_CUDA_AWARE_FROM_DEFAULT};
}

const char *source_name(plm_cuda_aware_source_t s)
{
    switch (s) {
    case PLM_CUDA_AWARE_FROM_CONFIG: return "config";
    case PLM_CUDA_AWARE_FROM_ENV: return "env";
    case PLM_CUDA_AWARE_FROM_VENDOR: return "vendor";
    case PLM_CUDA_AWARE_FROM_DEFAULT: return "default";
    }
    return "invalid";
}

void test_decide_cuda_aware_every_combination(void **)
{
    int n = 0, bad = 0;
    for (int config = -1; config <= 1; ++config)
        for (const char *env : kEnvValues)
            for (int vendor = -1; vendor <= 1; ++vendor) {
                const CudaAwareDecision got = decide_cuda_aware(config, env, vendor);
                const CudaAwareDecision want = expected_aware(config, env, vendor);
                ++n;
                if (got.yes != want.yes || got.source != want.source) {
                    ++bad;
                    std::fprintf(stderr,
                                 "decide_cuda_aware(config=%d, env=%s%s%s, vendor=%d) = {%d, %s}, expected {%d, %s}\n",
                                 config, env ? "\"" : "", env ? env : "NULL", env ? "\"" : "", vendor, got.yes,
                                 source_name(got.source), want.yes, source_name(want.source));
                }
            }
    assert_int_equal(n, 3 * 10 * 3);
    assert_int_equal(bad, 0);
}

void test_decide_cuda_aware_literal_rows(void **)
{
    // The 36 combinations of the brief, literally: (config, env, vendor) -> (yes, source).
    struct Row {
        int config;
        const char *env;
        int vendor;
        bool yes;
        plm_cuda_aware_source_t source;
    };
    const auto C = PLM_CUDA_AWARE_FROM_CONFIG, E = PLM_CUDA_AWARE_FROM_ENV, V = PLM_CUDA_AWARE_FROM_VENDOR,
               D = PLM_CUDA_AWARE_FROM_DEFAULT;
    const Row rows[] = {
        {-1, nullptr, -1, false, D}, {-1, nullptr, 0, false, V}, {-1, nullptr, 1, true, V},
        {-1, "0", -1, false, E},     {-1, "0", 0, false, E},     {-1, "0", 1, false, E},
        {-1, "1", -1, true, E},      {-1, "1", 0, true, E},      {-1, "1", 1, true, E},
        {-1, "garbage", -1, false, D}, {-1, "garbage", 0, false, V}, {-1, "garbage", 1, true, V},
        {0, nullptr, -1, false, C},  {0, nullptr, 0, false, C},  {0, nullptr, 1, false, C},
        {0, "0", -1, false, C},      {0, "0", 0, false, C},      {0, "0", 1, false, C},
        {0, "1", -1, false, C},      {0, "1", 0, false, C},      {0, "1", 1, false, C},
        {0, "garbage", -1, false, C}, {0, "garbage", 0, false, C}, {0, "garbage", 1, false, C},
        {1, nullptr, -1, true, C},   {1, nullptr, 0, true, C},   {1, nullptr, 1, true, C},
        {1, "0", -1, true, C},       {1, "0", 0, true, C},       {1, "0", 1, true, C},
        {1, "1", -1, true, C},       {1, "1", 0, true, C},       {1, "1", 1, true, C},
        {1, "garbage", -1, true, C}, {1, "garbage", 0, true, C}, {1, "garbage", 1, true, C},
    };
    static_assert(sizeof rows / sizeof rows[0] == 36, "3 x 4 x 3 rows");
    int bad = 0;
    for (const Row &r : rows) {
        const CudaAwareDecision d = decide_cuda_aware(r.config, r.env, r.vendor);
        if (d.yes != r.yes || d.source != r.source) {
            ++bad;
            std::fprintf(stderr, "decide_cuda_aware(%d, %s, %d) = {%d, %s}, expected {%d, %s}\n", r.config,
                         r.env ? r.env : "NULL", r.vendor, d.yes, source_name(d.source), r.yes,
                         source_name(r.source));
        }
    }
    assert_int_equal(bad, 0);
}

void test_nccl_enabled_from_env(void **)
{
    const char *vals[] = {nullptr, "0", "1", "garbage", ""};
    int bad = 0;
    for (const char *a : vals)
        for (const char *b : vals) {
            const bool want = !(a && std::strcmp(a, "0") == 0) && !(b && std::strcmp(b, "0") == 0);
            if (nccl_enabled_from_env(a, b) != want) {
                ++bad;
                std::fprintf(stderr, "nccl_enabled_from_env(%s, %s) != %d\n", a ? a : "NULL", b ? b : "NULL", want);
            }
        }
    assert_int_equal(bad, 0);
    assert_true(nccl_enabled_from_env(nullptr, nullptr));
    assert_false(nccl_enabled_from_env("0", nullptr));
    assert_false(nccl_enabled_from_env(nullptr, "0"));
    assert_false(nccl_enabled_from_env("1", "0"));
    assert_true(nccl_enabled_from_env("1", "1"));
}

// The config field checks: a value out of range -> INVALID_ARG.
template <typename F> plm_status_t check_status(F &&f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.status();
    }
    return PLM_SUCCESS;
}

// PYLOPS_MPI_NCCL_TIMEOUT: a finite number of seconds > 0, else the default.
void test_nccl_timeout_from_env(void **)
{
    const double d = kNcclTimeoutDefault;
    const struct {
        const char *value;
        double want;
    } rows[] = {{nullptr, d}, {"", d},       {"30", 30},  {" 2.5 ", 2.5}, {"1e-3", 0.001}, {"0", d},
                {"-5", d},    {"abc", d},    {"10s", d},  {"inf", d},     {"nan", d},      {"5 5", d}};
    bool ok = d == 600;
    for (const auto &row : rows)
        if (nccl_timeout_from_env(row.value) != row.want) {
            ok = false;
            std::fprintf(stderr, "nccl_timeout_from_env(%s) = %g, expected %g\n", row.value ? row.value : "NULL",
                         nccl_timeout_from_env(row.value), row.want);
        }
    assert_true(ok);
}

// poll_for: true as soon as done() is, false once the time is up (with done() never true),
// and done()'s exception passes through.
void test_poll_for(void **)
{
    int calls = 0;
    assert_true(poll_for([&] { return ++calls == 3; }, 60.0));
    assert_int_equal(calls, 3);
    calls = 0;
    assert_false(poll_for([&] { return ++calls < 0; }, 0.01));
    assert_true(calls >= 1);
    bool threw = false;
    try {
        poll_for([]() -> bool { PLM_FAIL(PLM_ERR_NCCL, "from done()"); }, 60.0);
    } catch (const Error &e) {
        threw = e.status() == PLM_ERR_NCCL;
    }
    assert_true(threw);
}

void test_config_checks(void **)
{
    const Config d;
    assert_int_equal(d.backend, PLM_BACKEND_AUTO);
    assert_int_equal(d.cuda_aware, -1);
    assert_int_equal(d.device, -1);
    assert_null(d.stream);
    assert_null(d.nccl_comm);
    for (int v : {-1, 0, 1}) assert_int_equal(check_status([&] { check_config_cuda_aware(v); }), PLM_SUCCESS);
    for (int v : {-2, 2}) assert_int_equal(check_status([&] { check_config_cuda_aware(v); }), PLM_ERR_INVALID_ARG);
    for (int v : {-1, 0, 3}) assert_int_equal(check_status([&] { check_config_device(v); }), PLM_SUCCESS);
    assert_int_equal(check_status([] { check_config_device(-2); }), PLM_ERR_INVALID_ARG);
    for (int v : {PLM_BACKEND_AUTO, PLM_BACKEND_MPI_CUDA_AWARE, PLM_BACKEND_MPI_STAGED, PLM_BACKEND_NCCL})
        assert_int_equal(check_status([&] { check_config_backend(v); }), PLM_SUCCESS);
    // unknown values, and mpi_host (it cannot be forced for device memory)
    for (int v : {99, -1, static_cast<int>(PLM_BACKEND_MPI_HOST)})
        assert_int_equal(check_status([&] { check_config_backend(v); }), PLM_ERR_INVALID_ARG);
}

// Communicator::create reads the environment; its policy must match decide_cuda_aware.
void test_communicator_policy_state(void **)
{
    Config cfg;
    cfg.cuda_aware = 1;
    auto c = Communicator::create(MPI_COMM_WORLD, &cfg);
    assert_true(c->policy().cuda_aware);
    assert_int_equal(c->cuda_aware_source(), PLM_CUDA_AWARE_FROM_CONFIG);
    assert_false(c->policy().nccl_attached);
    assert_int_equal(c->backend_for(Space::host), PLM_BACKEND_MPI_HOST);
    assert_int_equal(c->backend_for(Space::pinned), PLM_BACKEND_MPI_HOST);
    assert_int_equal(c->backend_for(Space::device), PLM_BACKEND_MPI_CUDA_AWARE);

    auto sub = c->split(0, 0);
    assert_true(sub->policy().cuda_aware);
    assert_int_equal(sub->cuda_aware_source(), PLM_CUDA_AWARE_FROM_CONFIG);
    assert_int_equal(sub->backend_for(Space::device), PLM_BACKEND_MPI_CUDA_AWARE);

    // Environment: PYLOPS_MPI_CUDA_AWARE read at creation; PYLOPS_MPI_NCCL=0 disables NCCL.
    setenv("PYLOPS_MPI_CUDA_AWARE", "0", 1);
    setenv("PYLOPS_MPI_NCCL", "0", 1);
    auto e = Communicator::create(MPI_COMM_WORLD, nullptr);
    unsetenv("PYLOPS_MPI_CUDA_AWARE");
    unsetenv("PYLOPS_MPI_NCCL");
    assert_false(e->policy().cuda_aware);
    assert_int_equal(e->cuda_aware_source(), PLM_CUDA_AWARE_FROM_ENV);
    assert_false(e->policy().nccl_enabled);
    assert_int_equal(e->backend_for(Space::device), PLM_BACKEND_MPI_STAGED);

    // Nothing said: the vendor query decides when it answers.
    auto v = Communicator::create(MPI_COMM_WORLD, nullptr);
    const int vendor = vendor_cuda_aware_query();
    const CudaAwareDecision want = decide_cuda_aware(-1, nullptr, vendor);
    assert_int_equal(v->cuda_aware_source(), want.source);
    assert_int_equal(v->policy().cuda_aware, want.yes);
    assert_true(v->policy().nccl_enabled);

    // NCCL forced with no communicator of the user's: the library is asked to make one, so
    // the policy counts NCCL as attached. (Where NCCL is usable, creation builds it: that
    // path needs one GPU per rank and is exercised by tests/gpu.)
    if (!backend_built(PLM_BACKEND_NCCL)) {
        Config n;
        n.backend = PLM_BACKEND_NCCL;
        auto f = Communicator::create(MPI_COMM_WORLD, &n);
        assert_true(f->policy().nccl_attached);
        assert_int_equal(f->backend_for(Space::device), PLM_BACKEND_NCCL);
        assert_int_equal(f->backend_for(Space::host), PLM_BACKEND_MPI_HOST);
    }

    // The device: -1 without one (host-only build or no GPU), else node-local rank modulo
    // the device count, the same for splits.
    const int ndev = device_count();
    if (ndev == 0) {
        assert_int_equal(c->device(), -1);
    } else {
        MPI_Comm node;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        int local = 0;
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
        assert_int_equal(c->device(), local % ndev);
    }
    assert_int_equal(sub->device(), c->device());
}

// An error found before the call on one rank only (a bad config handle in the C layer):
// Communicator::create agrees, so every rank throws INVALID_ARG (the lowest failing rank's
// message), and nobody hangs in MPI_Comm_dup users.
void test_communicator_bad_config_one_rank(void **)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::optional<Error> prior;
    if (rank == size - 1) prior.emplace(PLM_ERR_INVALID_ARG, "bad magic");
    plm_status_t st = PLM_SUCCESS;
    std::string what;
    try {
        (void)Communicator::create(MPI_COMM_WORLD, nullptr, prior);
    } catch (const Error &e) {
        st = e.status();
        what = e.what();
    }
    const bool ok = st == PLM_ERR_INVALID_ARG && what.find("magic") != std::string::npos;
    if (!ok) std::fprintf(stderr, "[rank %d] create with bad magic on the last rank: %s '%s'\n", rank,
                          plm_status_string(st), what.c_str());
    assert_all_ranks_true(ok);
}

}  // namespace

int main(int argc, char **argv)
{
    unsetenv("PYLOPS_MPI_CUDA_AWARE");
    unsetenv("PYLOPS_MPI_NCCL");
    unsetenv("NCCL_PYLOPS_MPI");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select_every_combination),
        cmocka_unit_test(test_select_literal_rows),
        cmocka_unit_test(test_decide_cuda_aware_every_combination),
        cmocka_unit_test(test_decide_cuda_aware_literal_rows),
        cmocka_unit_test(test_nccl_enabled_from_env),
        cmocka_unit_test(test_nccl_timeout_from_env),
        cmocka_unit_test(test_poll_for),
        cmocka_unit_test(test_config_checks),
        cmocka_unit_test(test_communicator_policy_state),
        cmocka_unit_test(test_communicator_bad_config_one_rank),
    };
    return plm_run_group_tests_mpi(tests);
}
