// Shared by the white-box tests of the communication layer (test_primitives, test_backend):
// cmocka under MPI from C++, the world communicator fixture, a per-rank failure collector,
// a hang watchdog, exception guards and exact test data for every dtype.
#pragma once

#include <climits>
#include <complex>
#include <cstdarg>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <vector>

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
#include <unistd.h>
// cmocka defines a fail() macro, which would rewrite plm::fail in PLM_FAIL; we never use it.
#undef fail

#include "comm/agreement.hpp"

using namespace plm;
using namespace plm::comm;
using c64 = std::complex<float>;
using c128 = std::complex<double>;


namespace {


// ---------------------------------------------------------------------------------------
// Fixtures and helpers
// ---------------------------------------------------------------------------------------

std::shared_ptr<Communicator> &comm_ptr()
{
    static std::shared_ptr<Communicator> c;  // freed after MPI_Finalize: the dtor checks
    return c;
}

const Communicator &C()
{
    auto &c = comm_ptr();
    if (!c) c = Communicator::create(MPI_COMM_WORLD, nullptr);
    return *c;
}

int R() { return C().rank(); }
int P() { return C().size(); }

// Collects failures of one test on this rank; prints the first few with the rank.
struct Checker {
    bool ok = true;
    int reported = 0;
    void bad(const char *fmt, ...) __attribute__((format(printf, 2, 3)))
    {
        ok = false;
        if (++reported > 8) return;
        char buf[1024];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        std::fprintf(stderr, "[rank %d/%d, max_mpi_count %lld] %s\n", R(), P(),
                     static_cast<long long>(max_mpi_count()), buf);
    }
    void expect(bool cond, const char *fmt, ...) __attribute__((format(printf, 3, 4)))
    {
        if (cond) return;
        char buf[1024];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        bad("%s", buf);
    }
};

// Runs f, turning an unexpected exception into a failure (the message says which case).
// Watchdog: every case re-arms a 60 s alarm; if a collective never returns (ranks took
// different paths), the alarm names the case on stderr and exits, instead of a silent CTest
// timeout.
char g_case[256] = "(none)";
extern "C" void watchdog_fire(int)
{
    static const char head[] = "HANG: a collective did not return within 60 s; last case started here: ";
    if (write(2, head, sizeof head - 1) < 0) _exit(3);
    if (write(2, g_case, std::strlen(g_case)) < 0) _exit(3);
    if (write(2, "\n", 1) < 0) _exit(3);
    _exit(3);
}
void watchdog_install()
{
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = watchdog_fire;
    sigaction(SIGALRM, &sa, nullptr);
}
void watchdog_case(const std::string &what)
{
    std::snprintf(g_case, sizeof g_case, "%s (max_mpi_count %lld)", what.c_str(),
                  static_cast<long long>(max_mpi_count()));
    alarm(60);
}

// PLM_TEST_TRACE=1 prints every case before it runs.
template <typename F> void guarded(Checker &ck, const std::string &what, F &&f)
{
    watchdog_case(what);
    static const bool trace = std::getenv("PLM_TEST_TRACE") != nullptr;
    if (trace)
        std::fprintf(stderr, "[rank %d, max_mpi_count %lld] %s\n", R(), static_cast<long long>(max_mpi_count()),
                     what.c_str());
    try {
        f();
    } catch (const Error &e) {
        ck.bad("%s threw %s: %s", what.c_str(), plm_status_string(e.status()), e.what());
    } catch (const std::exception &e) {
        ck.bad("%s threw std::exception: %s", what.c_str(), e.what());
    }
}

// Status thrown by f, or PLM_SUCCESS.
template <typename F> plm_status_t status_of(F &&f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.status();
    }
    return PLM_SUCCESS;
}

template <typename T> struct TypeInfo;
template <> struct TypeInfo<float> {
    static constexpr DType dt = DType::f32;
    static constexpr const char *name = "f32";
};
template <> struct TypeInfo<double> {
    static constexpr DType dt = DType::f64;
    static constexpr const char *name = "f64";
};
template <> struct TypeInfo<c64> {
    static constexpr DType dt = DType::c64;
    static constexpr const char *name = "c64";
};
template <> struct TypeInfo<c128> {
    static constexpr DType dt = DType::c128;
    static constexpr const char *name = "c128";
};
template <> struct TypeInfo<int64_t> {
    static constexpr DType dt = DType::i64;
    static constexpr const char *name = "i64";
};

template <typename T> T mk(long long re, long long im)
{
    if constexpr (is_complex_v<T>)
        return T(static_cast<real_t<T>>(re), static_cast<real_t<T>>(im));
    else {
        (void)im;
        return static_cast<T>(re);
    }
}

template <typename T> std::string str(const T &v)
{
    std::ostringstream o;
    o << v;
    return o.str();
}

template <typename T> T sentinel() { return mk<T>(-77777, 55555); }

// Data of rank r at index i (small integers; distinct across ranks and indices).
template <typename T> T val(int r, int64_t i) { return mk<T>((r + 1) * 3 + (i % 11) - 5, (i % 5) - 2 * r); }

// Factors for PROD: magnitudes <= 3 (Gaussian integers of norm <= 2), exact for 4 ranks.
template <typename T> T pval(int r, int64_t i)
{
    static const long long f[] = {1, -1, 2, -2, 3};
    if constexpr (is_complex_v<T>)
        return mk<T>(1 + (r + i) % 2, ((r * 3 + i) % 3) - 1);
    else
        return mk<T>(f[(r + 2 * i) % 5], 0);
}

// Same buffers compared element by element; reports the first difference.
template <typename T>
void expect_equal(Checker &ck, const std::vector<T> &got, const std::vector<T> &want, const std::string &what)
{
    if (got.size() != want.size()) {
        ck.bad("%s: size %zu, expected %zu", what.c_str(), got.size(), want.size());
        return;
    }
    for (size_t i = 0; i < got.size(); ++i)
        if (!(got[i] == want[i])) {
            ck.bad("%s: element %zu is %s, expected %s", what.c_str(), i, str(got[i]).c_str(), str(want[i]).c_str());
            return;
        }
}

template <typename T> std::string tag(const char *what) { return std::string(what) + "<" + TypeInfo<T>::name + ">"; }

const char *op_name(ReduceOp op)
{
    switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
    case ReduceOp::prod: return "prod";
    }
    return "?";
}

}  // namespace
