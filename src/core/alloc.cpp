#include "core/alloc.hpp"

#include <cstdio>
#include <new>

#if __has_include(<execinfo.h>)
#include <execinfo.h>
#define PLM_HAVE_BACKTRACE 1
#endif

namespace plm::alloc {

namespace {
thread_local bool t_after = false;
thread_local int64_t t_countdown = 0;
thread_local int64_t t_violations = 0;
thread_local bool t_trace = false;
thread_local bool t_in_note = false;  // backtrace() may allocate: no recursion
thread_local int64_t t_notes = 0;     // every allocation noted on this thread

void report(const char *what)
{
#ifdef PLM_HAVE_BACKTRACE
    if (t_in_note) return;
    t_in_note = true;
    void *frames[32];
    const int n = backtrace(frames, 32);
    std::fprintf(stderr, "pylopsmpi: %s:\n", what);
    backtrace_symbols_fd(frames, n, 2);
    t_in_note = false;
#else
    (void)what;
#endif
}
}  // namespace

void note()
{
    if (t_in_note) return;
    ++t_notes;
    if (t_countdown > 0 && --t_countdown == 0) {
        if (t_trace) report("injected allocation failure");
        throw std::bad_alloc();
    }
    if (t_after) {
        ++t_violations;
        if (t_trace) report("allocation after an agreement");
    }
}

void set_after_agreement(bool after) { t_after = after; }
bool after_agreement() { return t_after; }

Allowed::Allowed() : was_(t_after) { t_after = false; }
Allowed::~Allowed() { t_after = was_; }

void fail_nth(int64_t n) { t_countdown = n; }
int64_t armed() { return t_countdown; }
int64_t violations() { return t_violations; }
int64_t allocations() { return t_notes; }
void reset_violations() { t_violations = 0; }
void trace_violations(bool on) { t_trace = on; }

}  // namespace plm::alloc
