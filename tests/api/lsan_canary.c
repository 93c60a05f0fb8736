/* A deliberate leak, for the sanitizer job (tests/api/CMakeLists.txt, lsan_canary_np2): the array
 * is never destroyed, so LeakSanitizer must report memory allocated under plm_array_create. If the
 * suppressions in scripts/lsan.supp (Open MPI, hwloc, PMIx) ever hid pylopsmpi's own leaks, this
 * test would fail. */
#include <stdio.h>

#include "pylopsmpi.h"

int main(int argc, char **argv)
{
    plm_comm_t comm = NULL;
    plm_array_t leaked = NULL;
    const int64_t n = 16;
    int rank = 0;
    MPI_Init(&argc, &argv);
    if (plm_comm_create(MPI_COMM_WORLD, NULL, &comm) != PLM_SUCCESS) return 2;
    if (plm_array_create(comm, 1, &n, 0, PLM_PARTITION_SCATTER, PLM_FLOAT64, PLM_MEMORY_HOST, &leaked) != PLM_SUCCESS)
        return 2;
    leaked = NULL; /* forget it: the leak */
    plm_comm_destroy(&comm);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) printf("lsan_canary: leaked one array on purpose\n");
    MPI_Finalize();
    return 0;
}
