/* plm_comm_abort ends the whole job from one rank: the last rank aborts while the others wait
 * for a message that never comes, which only the abort can end. CTest runs it through sh and
 * passes when the job exits with the error code given to plm_comm_abort (42), within its
 * timeout; "RETURNED" on stderr says which rank went on when it should not have. */
#include <stdio.h>

#include "pylopsmpi.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    plm_comm_t comm = NULL;
    if (plm_comm_create(MPI_COMM_WORLD, NULL, &comm) != PLM_SUCCESS) {
        fprintf(stderr, "plm_comm_create: %s\n", plm_last_error());
        return 2;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) {
        const plm_status_t st = plm_comm_abort(comm, 42);
        fprintf(stderr, "RETURNED: plm_comm_abort returned %s: %s\n", plm_status_string(st), plm_last_error());
        return 3;
    }
    int x = 0;
    MPI_Recv(&x, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    fprintf(stderr, "RETURNED: rank %d received a message nobody sent\n", rank);
    return 4;
}
