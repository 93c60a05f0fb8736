// The public header from C++ (compiled with -std=c++11 -Wall -Wextra -Werror -pedantic): it must
// stay usable there (extern "C" linkage, no C-only constructs). No MPI calls, so it runs without
// mpiexec; it checks that the C linkage works by calling into the library.
#include "pylopsmpi.h"

#include <cstdio>
#include <cstring>

int main()
{
    plm_comm_config_t cfg = PLM_NULL_HANDLE;
    int failures = 0;
    if (plm_comm_config_create(&cfg) != PLM_SUCCESS || plm_comm_config_destroy(&cfg) != PLM_SUCCESS || cfg) ++failures;
    if (plm_check_header_version() != PLM_SUCCESS) ++failures;
    int major = -1, minor = -1, patch = -1;
    if (plm_version(&major, &minor, &patch) != PLM_SUCCESS || major != PLM_VERSION_MAJOR ||
        minor != PLM_VERSION_MINOR || patch != PLM_VERSION_PATCH)
        ++failures;
    if (std::strcmp(plm_version_string(), PLM_VERSION_STRING) != 0) ++failures;
    if (std::strncmp(plm_status_string(PLM_ERR_MPI), "PLM_ERR_MPI", 11) != 0) ++failures;
    if (plm_dtype_size(PLM_COMPLEX128) != 16) ++failures;
    plm_array_t a = PLM_NULL_HANDLE;
    if (plm_array_destroy(&a) != PLM_SUCCESS) ++failures;
    std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "OK", failures);
    return failures ? 1 : 0;
}
