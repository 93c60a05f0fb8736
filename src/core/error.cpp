#include "core/error.hpp"

#include <cstdarg>
#include <cstdio>

#include "core/alloc.hpp"
#include "core/device_fault.hpp"

namespace plm {

void fail(plm_status_t status, const char *file, int line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *base = file;
    for (const char *p = file; *p; ++p)
        if (*p == '/') base = p + 1;
    char full[1024];
    std::snprintf(full, sizeof full, "%s:%d: %s", base, line, msg);
    throw Error(status, full);
}

namespace {
thread_local std::shared_ptr<FaultSink> t_sink;
}

void set_device_fault_sink(std::shared_ptr<FaultSink> sink) noexcept { t_sink = std::move(sink); }

void device_fault(plm_status_t status, const std::string &message)
{
    if (alloc::after_agreement() && t_sink) {
        t_sink->mark(status, message.c_str());
        return;
    }
    throw Error(status, message);
}

}  // namespace plm
