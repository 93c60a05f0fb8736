/* Counts of the MPI calls a program makes, through MPI's profiling interface (PMPI): linked into
 * a program, mpi_count.c defines MPI_Allreduce, MPI_Isend, ... which count and call PMPI_*.
 * Works under Open MPI, MPICH and SimGrid's SMPI (whose programs bind their own definitions
 * first). Used by bench_scaling (collectives per library call and their sizes) and by the
 * SMPI guard (tests/smpi: MPI calls per apply and per CGLS iteration must not grow).
 *
 * Counters are per process (per simulated rank under SMPI: its own copy of the program). */
#ifndef PLM_MPI_COUNT_H
#define PLM_MPI_COUNT_H

#include <stdio.h>

/* What is counted, one slot per MPI function (the blocking and non-blocking forms apart). */
enum {
    MPIC_ALLREDUCE,
    MPIC_IALLREDUCE,
    MPIC_REDUCE,
    MPIC_IREDUCE,
    MPIC_BCAST,
    MPIC_IBCAST,
    MPIC_ALLGATHER,
    MPIC_IALLGATHER,
    MPIC_ALLGATHERV,
    MPIC_IALLGATHERV,
    MPIC_ALLTOALL,
    MPIC_ALLTOALLV,
    MPIC_BARRIER,
    MPIC_SEND,
    MPIC_RECV,
    MPIC_ISEND,
    MPIC_IRECV,
    MPIC_WAIT,
    MPIC_TEST,
    MPIC_COMM_DUP,
    MPIC_COMM_SPLIT,
    MPIC_COMM_FREE,
    MPIC_OP_CREATE,
    MPIC_TYPE_COMMIT,
    MPIC_KINDS
};

typedef struct {
    long long calls[MPIC_KINDS];
    long long bytes[MPIC_KINDS]; /* payload this rank passes in: count x type size (sends,
                                    reductions: the send count; receives: the receive count) */
} mpic_counts_t;

/* The counters so far (since the start or mpic_reset). */
void mpic_snapshot(mpic_counts_t *out);
void mpic_reset(void);
/* d = a - b. */
void mpic_diff(const mpic_counts_t *a, const mpic_counts_t *b, mpic_counts_t *d);
/* The MPI name of slot k ("MPI_Allreduce"); whether it is a collective, a message
 * (point-to-point), a completion call (Wait/Test) or communicator/handle management. */
const char *mpic_name(int k);
int mpic_is_collective(int k);
int mpic_is_message(int k);
int mpic_is_setup(int k);
/* Totals of one class: collectives, messages (sends and receives), setup calls. */
long long mpic_collectives(const mpic_counts_t *c);
long long mpic_messages(const mpic_counts_t *c);
long long mpic_setup(const mpic_counts_t *c);
/* Prints the non-zero slots of c divided by `per` ("per apply"), one line each, with the mean
 * bytes of a call. */
void mpic_print(FILE *f, const mpic_counts_t *c, double per, const char *prefix);

#endif
