#include "core/error.hpp"

#include <cstdarg>
#include <cstdio>

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

}  // namespace plm
