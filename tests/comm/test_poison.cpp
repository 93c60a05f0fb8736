// White-box: failures the ranks cannot agree on poison the communicator, and device state is
// prepared and torn down in step on every rank. No GPU: device faults are injected into the
// host-staged backend in host emulation (memory/space.hpp's copy fault hook), and a fake
// device backend stands for NCCL's state (it records what is prepared and closed, and how).
//
// - A device copy failing after an agreement on one rank (staging out, in a pipelined chunk,
//   copying back): the MPI part still runs, so the other ranks complete; that rank fails with
//   PLM_ERR_CUDA and the communicator, its splits and mask groups are poisoned there; the next
//   agreement fails on every rank (no hang), and splits whose group holds that rank too.
// - Through the C API: plm_comm_get_async_error reports the status and message (truncated to
//   the buffer), later collective calls (array creation, split) fail on every rank at once,
//   plm_comm_destroy works.
// - Teardown of device state: every rank closes its mask groups' state in mask order, then the
//   communicator's, finalising ("orderly") when every rank is healthy and present; aborting
//   on every rank when one rank is poisoned, and when a rank does not arrive within
//   PYLOPS_MPI_NCCL_TIMEOUT (then the late rank aborts too).
// - prepare_mask_group makes the device state of a group before the agreement; a failure on
//   one rank is agreed, a retry works, an agreed ready group needs nothing more.
#include <cstring>

#include "comm/comm_test_util.hpp"

#include "c_api/guard.hpp"
#include "comm/backend.hpp"

namespace {

constexpr DType F64 = DType::f64;
const Exec kDevice{Space::device, -1, {}};

// A communicator of its own whose device backend is the staged backend on host memory.
std::shared_ptr<Communicator> staged_comm()
{
    auto c = Communicator::create(MPI_COMM_WORLD, nullptr);
    c->replace_device_backend(make_mpi_staged(c->view(), Space::host, Space::host, 1 << 20, 64));
    return c;
}

struct Outcome {
    plm_status_t status = PLM_SUCCESS;
    std::string message;
};

template <typename F> Outcome outcome(F &&f)
{
    Outcome o;
    try {
        f();
    } catch (const Error &e) {
        o.status = e.status();
        o.message = e.what();
    }
    alloc::set_after_agreement(false);
    return o;
}

// ---------------------------------------------------------------------------------------
// Device copy faults after an agreement poison
// ---------------------------------------------------------------------------------------

// The operation under test, after an agreement, on c's staged device backend.
enum class Op { allreduce_out, pipelined_second_copy, recv_copy_back, allgatherv_copy_back };

const char *op_name(Op op)
{
    switch (op) {
    case Op::allreduce_out: return "iallreduce (staging out)";
    case Op::pipelined_second_copy: return "pipelined allreduce (second chunk)";
    case Op::recv_copy_back: return "ring receive (copying back)";
    case Op::allgatherv_copy_back: return "allgatherv (copying back)";
    }
    return "?";
}

// Runs op with a device copy failing on rank culprit (the copy-th copy of the operation).
void run_with_fault(const Communicator &c, Op op, int culprit, Outcome &mine, std::vector<double> &x,
                    std::vector<double> &y)
{
    const int r = c.rank(), p = c.size();
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<int64_t> counts(static_cast<size_t>(p), 2);
    mine = outcome([&] {
        Agreement ag(c, "fault");
        ag.check([&] { c.reserve(Space::device, 1 << 16); });
        ag.run();
        switch (op) {
        case Op::allreduce_out:
            if (r == culprit) fault::fail_copy_nth(1);
            iallreduce(c, kDevice, x.data(), y.data(), n, F64, ReduceOp::sum).wait();
            break;
        case Op::pipelined_second_copy:  // 64-byte chunks: 8 doubles each
            if (r == culprit) fault::fail_copy_nth(2);
            allreduce(c, kDevice, x.data(), y.data(), n, F64, ReduceOp::sum);
            break;
        case Op::recv_copy_back: {
            if (r == culprit) fault::fail_copy_nth(2);  // the send's copy out, then the receive's back
            sendrecv(c, kDevice, x.data(), n, (r + 1) % p, 5, y.data(), n, (r + p - 1) % p, 5, F64);
            break;
        }
        case Op::allgatherv_copy_back:
            if (r == culprit) fault::fail_copy_nth(2);
            allgatherv(c, kDevice, x.data(), y.data(), counts, F64);
            break;
        }
    });
    fault::fail_copy_nth(0);
}

void test_device_copy_fault_poisons(void **)
{
    Checker ck;
    const int r = R(), p = P();
    for (Op op : {Op::allreduce_out, Op::pipelined_second_copy, Op::recv_copy_back, Op::allgatherv_copy_back}) {
        for (int culprit = 0; culprit < p; ++culprit) {
            const std::string what = std::string(op_name(op)) + ", fault on rank " + std::to_string(culprit);
            watchdog_case(what);
            std::shared_ptr<Communicator> c = staged_comm();
            std::shared_ptr<Communicator> sub = c->split(r % 2, r);
            std::vector<int> mask(static_cast<size_t>(p));
            for (int q = 0; q < p; ++q) mask[static_cast<size_t>(q)] = q % 2;
            {
                Agreement ag(*c, "mask group");
                c->prepare_mask_group(ag, mask, Space::host, true);
                ag.run();
            }
            const Communicator &grp = c->mask_group(mask);
            std::vector<double> x(40, r + 1.0), y(std::max<size_t>(40, 2 * static_cast<size_t>(p)), 0.0);
            Outcome mine;
            run_with_fault(*c, op, culprit, mine, x, y);
            const bool me = r == culprit;
            ck.expect(me ? mine.status == PLM_ERR_CUDA : mine.status == PLM_SUCCESS, "%s: %s (%s)", what.c_str(),
                      plm_status_string(mine.status), mine.message.c_str());
            ck.expect(!me || (mine.message.find("injected") != std::string::npos &&
                              mine.message.find("unusable") != std::string::npos),
                      "%s: message '%s' names neither the cause nor the poisoning", what.c_str(), mine.message.c_str());
            ck.expect(c->poisoned() == me && sub->poisoned() == me && grp.poisoned() == me,
                      "%s: poisoned %d, split %d, mask group %d", what.c_str(), c->poisoned(), sub->poisoned(),
                      grp.poisoned());
            ck.expect(c->async_error() == (me ? PLM_ERR_CUDA : PLM_SUCCESS), "%s: async_error %s", what.c_str(),
                      plm_status_string(c->async_error()));
            // Every later call fails on every rank at its agreement.
            watchdog_case(what + " (the call after)");
            const Outcome next = outcome([&] {
                Agreement ag(*c, "after the fault");
                ag.run();
            });
            ck.expect(next.status == PLM_ERR_CUDA, "%s: the next agreement gave %s", what.c_str(),
                      plm_status_string(next.status));
            ck.expect(me || next.message.find("on rank " + std::to_string(culprit)) != std::string::npos,
                      "%s: the next agreement's message '%s' does not name rank %d", what.c_str(),
                      next.message.c_str(), culprit);
            const Outcome on_sub = outcome([&] {
                Agreement ag(*sub, "split after the fault");
                ag.run();
            });
            const bool with_culprit = culprit % 2 == r % 2;
            ck.expect(on_sub.status == (with_culprit ? PLM_ERR_CUDA : PLM_SUCCESS), "%s: the split's agreement gave %s",
                      what.c_str(), plm_status_string(on_sub.status));
        }
    }
    alarm(0);
    assert_all_ranks_true(ck.ok);
}

// ---------------------------------------------------------------------------------------
// Through the C API
// ---------------------------------------------------------------------------------------

void test_c_api_after_poisoning(void **)
{
    Checker ck;
    const int r = R(), p = P();
    for (int culprit = 0; culprit < p; ++culprit) {
        watchdog_case("C API, poisoned on rank " + std::to_string(culprit));
        plm_comm_t h = nullptr;
        ck.expect(plm_comm_create(MPI_COMM_WORLD, nullptr, &h) == PLM_SUCCESS, "plm_comm_create");
        plm_status_t err = PLM_ERR_INTERNAL;
        char msg[256] = "x";
        ck.expect(plm_comm_get_async_error(h, &err, msg, sizeof msg) == PLM_SUCCESS && err == PLM_SUCCESS &&
                      msg[0] == '\0',
                  "healthy: %s '%s'", plm_status_string(err), msg);
        // Code after an agreement reports what it cannot agree through the communicator.
        const Communicator &c = detail::comm_of(h);
        if (r == culprit) {
            const Outcome o = outcome([&] { c.unagreed([] { PLM_FAIL(PLM_ERR_NCCL, "a device fault (test)"); }); });
            ck.expect(o.status == PLM_ERR_NCCL && o.message.find("unusable") != std::string::npos,
                      "fail_unagreed threw %s '%s'", plm_status_string(o.status), o.message.c_str());
        }
        const bool me = r == culprit;
        ck.expect(plm_comm_get_async_error(h, &err, msg, sizeof msg) == PLM_SUCCESS &&
                      err == (me ? PLM_ERR_NCCL : PLM_SUCCESS) &&
                      (me ? std::strstr(msg, "a device fault (test)") != nullptr : msg[0] == '\0'),
                  "after: %s '%s'", plm_status_string(err), msg);
        char small[8];
        ck.expect(plm_comm_get_async_error(h, &err, small, sizeof small) == PLM_SUCCESS &&
                      std::strlen(small) == (me ? 7u : 0u),
                  "a message in 8 bytes: '%s'", small);
        ck.expect(plm_comm_get_async_error(h, &err, nullptr, 0) == PLM_SUCCESS, "no message buffer");
        ck.expect(plm_comm_get_async_error(h, nullptr, msg, sizeof msg) == PLM_ERR_INVALID_ARG, "NULL error");
        ck.expect(plm_comm_get_async_error(nullptr, &err, msg, sizeof msg) == PLM_ERR_INVALID_ARG, "NULL comm");
        // Later collective calls fail at once on every rank.
        const int64_t g = 10;
        plm_array_t x = nullptr;
        const plm_status_t st =
            plm_array_create(h, 1, &g, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &x);
        ck.expect(st == PLM_ERR_NCCL && x == nullptr, "plm_array_create on a poisoned comm: %s",
                  plm_status_string(st));
        plm_comm_t sub = nullptr;
        const plm_status_t st2 = plm_comm_split(h, r % 2, r, &sub);
        ck.expect(st2 == PLM_ERR_NCCL && sub == nullptr, "plm_comm_split on a poisoned comm: %s",
                  plm_status_string(st2));
        ck.expect(plm_comm_destroy(&h) == PLM_SUCCESS && h == nullptr, "plm_comm_destroy on a poisoned comm");
    }
    alarm(0);
    assert_all_ranks_true(ck.ok);
}

// ---------------------------------------------------------------------------------------
// Preparation and teardown of device state, with a fake device backend
// ---------------------------------------------------------------------------------------

// What the fake backends of this rank did, in order.
std::vector<std::string> &events()
{
    static std::vector<std::string> e;
    return e;
}
int g_fail_prepare = 0;  // > 0: the next prepare() on this rank throws (counting down)

// Stands for NCCL: state made by prepare() (collective in a real backend), an ordered close.
// Its splits are named g0, g1, ... in the order they are made (the same on every rank).
class FakeDevice final : public Backend {
public:
    FakeDevice(const CommView &v, std::string name) : Backend(v), name_(std::move(name)) {}
    plm_backend_t kind() const override { return PLM_BACKEND_NCCL; }
    std::unique_ptr<Backend> split(const CommView &sub) const override
    {
        return std::make_unique<FakeDevice>(sub, "g" + std::to_string(splits_++));
    }
    void prepare() override
    {
        if (g_fail_prepare > 0 && --g_fail_prepare == 0) PLM_FAIL(PLM_ERR_NCCL, "fake NCCL initialisation failure");
        events().push_back("prepare " + name_);
    }
    bool needs_ordered_close() const override { return !closed_; }
    void close(bool orderly) noexcept override
    {
        closed_ = true;
        events().push_back("close " + name_ + (orderly ? " finalize" : " abort"));
    }

private:
    std::string name_;
    mutable int splits_ = 0;
    bool closed_ = false;
};

std::shared_ptr<Communicator> fake_comm()
{
    auto c = Communicator::create(MPI_COMM_WORLD, nullptr);
    c->replace_device_backend(std::make_unique<FakeDevice>(c->view(), "root"));
    return c;
}

void prepare(const Communicator &c, const std::vector<int> &mask, bool agreed = false)
{
    Agreement ag(c, "prepare");
    c.prepare_mask_group(ag, mask, Space::device, agreed);
    ag.run();
    alloc::set_after_agreement(false);
}

std::string joined(const std::vector<std::string> &v)
{
    std::string s;
    for (const std::string &e : v) s += e + "; ";
    return s;
}

// Masks made in the order A (g0) then B (g1), B before A in the cache's (mask) order.
struct Masks {
    std::vector<int> a, b;
    Masks(int p) : a(static_cast<size_t>(p)), b(static_cast<size_t>(p))
    {
        for (int q = 0; q < p; ++q) {
            a[static_cast<size_t>(q)] = 5 + q % 2;
            b[static_cast<size_t>(q)] = q % 3;
        }
    }
};

void test_prepare_and_ordered_teardown(void **)
{
    Checker ck;
    const int r = R(), p = P();
    const Masks m(p);
    guarded(ck, "healthy teardown", [&] {
        events().clear();
        auto c = fake_comm();
        prepare(*c, m.a);
        prepare(*c, m.b);
        prepare(*c, m.a, true);  // agreed and ready: nothing made again
        prepare(*c, m.b);
        c.reset();
        const std::string got = joined(events());
        const std::string want = "prepare g0; prepare g1; close g1 finalize; close g0 finalize; close root finalize; ";
        ck.expect(got == want, "healthy: %s, expected %s", got.c_str(), want.c_str());
    });
    for (int culprit = 0; culprit < p; ++culprit) {
        guarded(ck, "poisoned teardown", [&] {
            events().clear();
            auto c = fake_comm();
            prepare(*c, m.a);
            if (r == culprit) c->poison().mark(PLM_ERR_CUDA, "a device fault (test)");
            c.reset();
            const std::string got = joined(events());
            const std::string want = "prepare g0; close g0 abort; close root abort; ";
            ck.expect(got == want, "poisoned on rank %d: %s, expected %s", culprit, got.c_str(), want.c_str());
        });
    }
    assert_all_ranks_true(ck.ok);
}

void test_teardown_timeout(void **)
{
    Checker ck;
    const int r = R(), p = P();
    if (p == 1) return;  // nobody to wait for
    const Masks m(p);
    setenv("PYLOPS_MPI_NCCL_TIMEOUT", "0.3", 1);
    guarded(ck, "late rank", [&] {
        events().clear();
        auto c = fake_comm();
        prepare(*c, m.a);
        auto late = r == 0 ? c : nullptr;  // rank 0 keeps it past the others' teardown
        c.reset();
        MPI_Barrier(MPI_COMM_WORLD);
        late.reset();
        const std::string got = joined(events());
        const std::string want = "prepare g0; close g0 abort; close root abort; ";
        ck.expect(got == want, "a rank arriving late: %s, expected %s", got.c_str(), want.c_str());
    });
    unsetenv("PYLOPS_MPI_NCCL_TIMEOUT");
    assert_all_ranks_true(ck.ok);
}

void test_prepare_failure_agreed(void **)
{
    Checker ck;
    const int r = R(), p = P();
    const Masks m(p);
    for (int culprit = 0; culprit < p; ++culprit) {
        guarded(ck, "prepare fails on one rank", [&] {
            events().clear();
            auto c = fake_comm();
            g_fail_prepare = r == culprit ? 1 : 0;
            const Outcome o = outcome([&] { prepare(*c, m.a); });
            g_fail_prepare = 0;
            ck.expect(o.status == PLM_ERR_NCCL, "a failed preparation on rank %d gave %s", culprit,
                      plm_status_string(o.status));
            // The group made in the failed call is dropped on every rank, its state aborted; a
            // retry makes it again everywhere, then it is ready.
            prepare(*c, m.a, true);
            prepare(*c, m.a, true);
            c.reset();
            const std::string got = joined(events());
            const std::string tail = "close g0 abort; prepare g1; close g1 finalize; close root finalize; ";
            const std::string want = r == culprit ? tail : "prepare g0; " + tail;
            ck.expect(got == want, "failed preparation on rank %d: %s, expected %s", culprit, got.c_str(),
                      want.c_str());
        });
    }
    assert_all_ranks_true(ck.ok);
}

}  // namespace

int main(int argc, char **argv)
{
    watchdog_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_copy_fault_poisons),
        cmocka_unit_test(test_c_api_after_poisoning),
        cmocka_unit_test(test_prepare_and_ordered_teardown),
        cmocka_unit_test(test_teardown_timeout),
        cmocka_unit_test(test_prepare_failure_agreed),
    };
    const int rc = plm_run_group_tests_mpi(tests);
    alarm(0);
    return rc;
}
