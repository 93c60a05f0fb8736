// Status/error type and the check macros every layer uses. Errors travel as plm::Error
// exceptions inside the library and become a plm_status_t at the C API firewall.
#pragma once

#include <stdexcept>
#include <string>

#include "pylopsmpi.h"

namespace plm {

class Error : public std::runtime_error {
public:
    Error(plm_status_t status, const std::string &message) : std::runtime_error(message), status_(status) {}
    plm_status_t status() const { return status_; }

private:
    plm_status_t status_;
};

// Throws Error with "file:line: message"; printf-style formatting.
[[noreturn]] void fail(plm_status_t status, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

// The integer a C caller put in an enum argument. C may pass any int there, and loading an
// undeclared value as a C++ enum is undefined, so enum inputs are read through this.
template <typename E> int enum_value(const E &e)
{
    static_assert(sizeof(E) == sizeof(int), "C enums are int-sized");
    int v;
    __builtin_memcpy(&v, &e, sizeof v);
    return v;
}

}  // namespace plm

#define PLM_FAIL(status, ...) ::plm::fail((status), __FILE__, __LINE__, __VA_ARGS__)
#define PLM_REQUIRE(cond, status, ...)      \
    do {                                    \
        if (!(cond)) PLM_FAIL(status, __VA_ARGS__); \
    } while (0)
#define PLM_CHECK(call)                                                   \
    do {                                                                  \
        plm_status_t plm_check_st_ = (call);                              \
        if (plm_check_st_ != PLM_SUCCESS)                                 \
            PLM_FAIL(plm_check_st_, "%s failed: %s", #call, plm_status_string(plm_check_st_)); \
    } while (0)
