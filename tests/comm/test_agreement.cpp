// White-box tests of comm::Agreement, the one collective-call discipline: error agreement
// (lowest failing rank's message), fingerprints, payload lanes (sum, NaN-propagating max and
// min, enough lanes that MPI may split the vector, lane counts that differ between ranks) and
// same_ranks().
#include <cmath>
#include <cstring>
#include <string>

#include "comm/agreement.hpp"  // before cmocka, whose fail() macro would clash with plm::fail

// cmocka 1.1 has no extern "C" guards of its own: include it (and what it needs) as C.
#include <mpi.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
#include "plm_test_mpi.h"

using namespace plm;
using namespace plm::comm;

namespace {

std::shared_ptr<Communicator> world() { return Communicator::create(MPI_COMM_WORLD, nullptr); }

// The status ag.run() ends with on this rank.
plm_status_t run_status(Agreement &ag)
{
    try {
        ag.run();
    } catch (const Error &e) {
        return e.status();
    }
    return PLM_SUCCESS;
}

void test_success_and_lanes(void **)
{
    auto c = world();
    const int P = c->size(), r = c->rank();
    Agreement ag(*c, "lanes");
    ag.fold(42);
    const size_t s = ag.add_lanes(2, LaneOp::sum), mx = ag.add_lanes(1, LaneOp::max), mn = ag.add_lanes(1, LaneOp::min);
    ag.set(s, r + 1.0);
    ag.set(s + 1, -0.0);  // untouched lanes stay -0.0: the sum of -0.0s is -0.0
    ag.set(mx, r);
    ag.set(mn, r + 10.0);
    ag.run();
    assert_all_ranks_true(ag.get(s) == P * (P + 1) / 2.0);
    assert_all_ranks_true(ag.get(s + 1) == 0.0 && std::signbit(ag.get(s + 1)));
    assert_all_ranks_true(ag.get(mx) == P - 1.0 && ag.get(mn) == 10.0);
}

void test_nan_propagates(void **)
{
    auto c = world();
    for (int bad = 0; bad < c->size(); ++bad) {
        Agreement ag(*c, "nan");
        const size_t mx = ag.add_lanes(1, LaneOp::max), mn = ag.add_lanes(1, LaneOp::min),
                     s = ag.add_lanes(1, LaneOp::sum);
        const double v = c->rank() == bad ? NAN : 1.0;
        ag.set(mx, v);
        ag.set(mn, v);
        ag.set(s, v);
        ag.run();
        assert_all_ranks_true(std::isnan(ag.get(mx)) && std::isnan(ag.get(mn)) && std::isnan(ag.get(s)));
    }
}

void test_many_lanes(void **)
{
    auto c = world();
    const size_t n = 200000;  // 3.2 MB: MPI may reduce it in segments
    Agreement ag(*c, "many");
    const size_t s = ag.add_lanes(n, LaneOp::sum), m = ag.add_lanes(n, LaneOp::max);
    for (size_t i = 0; i < n; ++i) {
        ag.set(s + i, static_cast<double>(i % 7));
        ag.set(m + i, c->rank() == static_cast<int>(i % c->size()) ? static_cast<double>(i) : -1.0);
    }
    ag.run();
    bool ok = true;
    for (size_t i = 0; i < n && ok; ++i)
        ok = ag.get(s + i) == static_cast<double>(i % 7) * c->size() && ag.get(m + i) == static_cast<double>(i);
    assert_all_ranks_true(ok);
}

void test_lowest_failing_rank_wins(void **)
{
    auto c = world();
    const int P = c->size();
    for (int first = 0; first < P; ++first) {
        Agreement ag(*c, "errors");
        if (c->rank() >= first)  // ranks first..P-1 fail, each with its own message
            ag.check([&] {
                throw Error(c->rank() == first ? PLM_ERR_SIZE_MISMATCH : PLM_ERR_INTERNAL,
                            "boom " + std::to_string(c->rank()));
            });
        plm_status_t st = PLM_SUCCESS;
        std::string msg;
        try {
            ag.run();
        } catch (const Error &e) {
            st = e.status();
            msg = e.what();
        }
        const bool mine = c->rank() >= first;
        const std::string want = "boom " + std::to_string(mine ? c->rank() : first);
        const bool named = mine || msg.find("on rank " + std::to_string(first) + ":") != std::string::npos;
        assert_all_ranks_true(msg.find(want) != std::string::npos && named);
        // every rank returns the root cause's status, the lowest failing rank's (docs/api.md)
        assert_all_ranks_true(st == PLM_ERR_SIZE_MISMATCH);
    }
}

void test_fingerprint_mismatch(void **)
{
    auto c = world();
    for (int bad = 0; bad < c->size(); ++bad) {
        Agreement ag(*c, "fp");
        ag.fold_double(c->rank() == bad ? 1.0 : 2.0);
        const size_t s = ag.add_lanes(1, LaneOp::sum);
        ag.set(s, 1.0);
        assert_all_ranks_true(run_status(ag) == (c->size() > 1 ? PLM_ERR_INVALID_ARG : PLM_SUCCESS));
    }
}

void test_lane_count_differs(void **)
{
    // One rank adds more lanes (another mask's groups, another kind of operand): every rank
    // fails on the fingerprint, none reduces a vector of another length. Counts on both sides
    // of the first reduction's length and of the inline words.
    auto c = world();
    const size_t counts[] = {0, 1, 12, 13, 14, 40};
    for (size_t mine : counts)
        for (size_t other : counts) {
            if (mine == other) continue;
            Agreement ag(*c, "lanes differ");
            const size_t n = c->rank() == c->size() - 1 ? other : mine;
            const size_t s = ag.add_lanes(n, LaneOp::sum);
            for (size_t i = 0; i < n; ++i) ag.set(s + i, 1.0);
            assert_all_ranks_true(run_status(ag) == (c->size() > 1 ? PLM_ERR_INVALID_ARG : PLM_SUCCESS));
        }
}

void test_same_ranks(void **)
{
    auto a = world(), b = world();
    assert_all_ranks_true(same_ranks(*a, *a) && same_ranks(*a, *b));
    auto rev = a->split(0, a->size() - a->rank());  // same ranks, reversed order
    assert_all_ranks_true(same_ranks(*a, *rev) == (a->size() == 1));
}

}  // namespace

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_success_and_lanes),      cmocka_unit_test(test_nan_propagates),
        cmocka_unit_test(test_many_lanes),             cmocka_unit_test(test_lowest_failing_rank_wins),
        cmocka_unit_test(test_fingerprint_mismatch),   cmocka_unit_test(test_same_ranks),
        cmocka_unit_test(test_lane_count_differs),
    };
    return plm_run_group_tests_mpi(tests);
}
