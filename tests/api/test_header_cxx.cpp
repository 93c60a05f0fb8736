// The public header from C++ (compiled with -std=c++11 -Wall -Wextra -Werror -pedantic): it must
// stay usable there (extern "C" linkage, no C-only constructs). No MPI calls, so it runs without
// mpiexec; it checks that the C linkage works by calling into the library.
#include "pylopsmpi.h"

#include <cstdio>
#include <cstring>

int main()
{
    plm_comm_config_t cfg = PLM_COMM_CONFIG_INITIALIZER;
    int failures = 0;
    if (cfg.struct_size != sizeof(plm_comm_config_t) || cfg.magic != PLM_CONFIG_MAGIC) ++failures;
    if (plm_comm_config_struct_size() != sizeof(plm_comm_config_t)) ++failures;
    if (plm_check_header_version() != PLM_SUCCESS) ++failures;
    const plm_version_t *v = plm_version();
    if (!v || v->major != PLM_VERSION_MAJOR || v->minor != PLM_VERSION_MINOR || v->patch != PLM_VERSION_PATCH)
        ++failures;
    if (plm_version_number() != PLM_VERSION_CODE) ++failures;
    if (std::strncmp(plm_status_string(PLM_ERR_MPI), "PLM_ERR_MPI", 11) != 0) ++failures;
    if (plm_dtype_size(PLM_COMPLEX128) != 16) ++failures;
    plm_array_t a = PLM_NULL_HANDLE;
    if (plm_array_destroy(&a) != PLM_SUCCESS) ++failures;
    std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "OK", failures);
    return failures ? 1 : 0;
}
