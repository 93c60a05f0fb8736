// Where a thread stands in a collective call, for the rule "nothing fails after the
// agreement": allocations are allowed before a call's agreement runs and inside
// Agreement::check() (whose failures the agreement carries); after an agreement has run,
// the call only communicates and computes. Every allocation the library makes reports here
// (Buffer::allocate, device scratch; test programs also route operator new here), which
// gives the tests two hooks: fail the n-th allocation on one rank, and count allocations
// made after an agreement (violations of the rule).
#pragma once

#include <cstdint>

namespace plm::alloc {

// Called by every allocation before it is made. Throws std::bad_alloc when the armed
// countdown (fail_nth) reaches it; records a violation when the thread is past an agreement.
void note();

// Agreement::run() marks the thread as past its agreement; the C API firewall clears the
// mark when a call starts and ends.
void set_after_agreement(bool after);
bool after_agreement();

// While alive, allocations on this thread are allowed again (Agreement::check(), a user
// callback whose failure the library agrees on). Restores the previous state.
class Allowed {
public:
    Allowed();
    ~Allowed();
    Allowed(const Allowed &) = delete;
    Allowed &operator=(const Allowed &) = delete;

private:
    bool was_;
};

// Test hooks (per thread). fail_nth(n): the n-th allocation from now on (1: the next one)
// throws std::bad_alloc; 0 disarms. violations(): allocations made past an agreement since
// the last reset_violations(); trace_violations(true) prints a backtrace of each to stderr.
void fail_nth(int64_t n);
int64_t armed();  // what is left of the countdown: 0 once it fired (or when disarmed)
int64_t violations();
// Allocations noted on this thread so far (the scaling benchmark and the SMPI guard count
// them per apply and per solver iteration: a steady state allocates nothing).
int64_t allocations();
void reset_violations();
void trace_violations(bool on);

}  // namespace plm::alloc
