/* The PMPI counting layer of mpi_count.h: every wrapper counts, then calls the PMPI_ function. */
#include "mpi_count.h"

#include <mpi.h>
#include <string.h>

static mpic_counts_t g_counts;

static const char *const k_names[MPIC_KINDS] = {
    "MPI_Allreduce",  "MPI_Iallreduce", "MPI_Reduce",     "MPI_Ireduce",      "MPI_Bcast",      "MPI_Ibcast",
    "MPI_Allgather",  "MPI_Iallgather", "MPI_Allgatherv", "MPI_Iallgatherv",  "MPI_Alltoall",   "MPI_Alltoallv",
    "MPI_Barrier",    "MPI_Send",       "MPI_Recv",       "MPI_Isend",        "MPI_Irecv",      "MPI_Wait",
    "MPI_Test",       "MPI_Comm_dup",   "MPI_Comm_split", "MPI_Comm_free",    "MPI_Op_create",  "MPI_Type_commit",
};

static long long type_bytes(int count, MPI_Datatype t)
{
    int size = 0;
    if (count <= 0 || t == MPI_DATATYPE_NULL) return 0;
    PMPI_Type_size(t, &size);
    return (long long)count * size;
}

static void note(int k, long long bytes)
{
    g_counts.calls[k]++;
    g_counts.bytes[k] += bytes;
}

void mpic_snapshot(mpic_counts_t *out) { *out = g_counts; }
void mpic_reset(void) { memset(&g_counts, 0, sizeof g_counts); }

void mpic_diff(const mpic_counts_t *a, const mpic_counts_t *b, mpic_counts_t *d)
{
    for (int k = 0; k < MPIC_KINDS; k++) {
        d->calls[k] = a->calls[k] - b->calls[k];
        d->bytes[k] = a->bytes[k] - b->bytes[k];
    }
}

const char *mpic_name(int k) { return k >= 0 && k < MPIC_KINDS ? k_names[k] : "?"; }
int mpic_is_collective(int k) { return k >= MPIC_ALLREDUCE && k <= MPIC_BARRIER; }
int mpic_is_message(int k) { return k >= MPIC_SEND && k <= MPIC_IRECV; }
int mpic_is_setup(int k) { return k >= MPIC_COMM_DUP && k < MPIC_KINDS; }

static long long total(const mpic_counts_t *c, int (*in)(int))
{
    long long n = 0;
    for (int k = 0; k < MPIC_KINDS; k++)
        if (in(k)) n += c->calls[k];
    return n;
}
long long mpic_collectives(const mpic_counts_t *c) { return total(c, mpic_is_collective); }
long long mpic_messages(const mpic_counts_t *c) { return total(c, mpic_is_message); }
long long mpic_setup(const mpic_counts_t *c) { return total(c, mpic_is_setup); }

void mpic_print(FILE *f, const mpic_counts_t *c, double per, const char *prefix)
{
    for (int k = 0; k < MPIC_KINDS; k++) {
        if (!c->calls[k]) continue;
        fprintf(f, "%s%-16s %10.3f calls, %12.1f bytes a call\n", prefix, k_names[k], (double)c->calls[k] / per,
                (double)c->bytes[k] / (double)c->calls[k]);
    }
}

/* ---- the wrappers ---------------------------------------------------------------------- */

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    note(MPIC_ALLREDUCE, type_bytes(n, t));
    return PMPI_Allreduce(s, r, n, t, op, c);
}
int MPI_Iallreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request *q)
{
    note(MPIC_IALLREDUCE, type_bytes(n, t));
    return PMPI_Iallreduce(s, r, n, t, op, c, q);
}
int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c)
{
    note(MPIC_REDUCE, type_bytes(n, t));
    return PMPI_Reduce(s, r, n, t, op, root, c);
}
int MPI_Ireduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c, MPI_Request *q)
{
    note(MPIC_IREDUCE, type_bytes(n, t));
    return PMPI_Ireduce(s, r, n, t, op, root, c, q);
}
int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{
    note(MPIC_BCAST, type_bytes(n, t));
    return PMPI_Bcast(b, n, t, root, c);
}
int MPI_Ibcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *q)
{
    note(MPIC_IBCAST, type_bytes(n, t));
    return PMPI_Ibcast(b, n, t, root, c, q);
}
int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c)
{
    note(MPIC_ALLGATHER, type_bytes(rn, rt));
    return PMPI_Allgather(s, sn, st, r, rn, rt, c);
}
int MPI_Iallgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c,
                   MPI_Request *q)
{
    note(MPIC_IALLGATHER, type_bytes(rn, rt));
    return PMPI_Iallgather(s, sn, st, r, rn, rt, c, q);
}
int MPI_Allgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int *rn, const int *rd, MPI_Datatype rt,
                   MPI_Comm c)
{
    note(MPIC_ALLGATHERV, type_bytes(sn, st));
    return PMPI_Allgatherv(s, sn, st, r, rn, rd, rt, c);
}
int MPI_Iallgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int *rn, const int *rd, MPI_Datatype rt,
                    MPI_Comm c, MPI_Request *q)
{
    note(MPIC_IALLGATHERV, type_bytes(sn, st));
    return PMPI_Iallgatherv(s, sn, st, r, rn, rd, rt, c, q);
}
int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c)
{
    note(MPIC_ALLTOALL, type_bytes(sn, st));
    return PMPI_Alltoall(s, sn, st, r, rn, rt, c);
}
int MPI_Alltoallv(const void *s, const int *sn, const int *sd, MPI_Datatype st, void *r, const int *rn, const int *rd,
                  MPI_Datatype rt, MPI_Comm c)
{
    note(MPIC_ALLTOALLV, 0);
    return PMPI_Alltoallv(s, sn, sd, st, r, rn, rd, rt, c);
}
int MPI_Barrier(MPI_Comm c)
{
    note(MPIC_BARRIER, 0);
    return PMPI_Barrier(c);
}
int MPI_Send(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c)
{
    note(MPIC_SEND, type_bytes(n, t));
    return PMPI_Send(b, n, t, dest, tag, c);
}
int MPI_Recv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status *st)
{
    note(MPIC_RECV, type_bytes(n, t));
    return PMPI_Recv(b, n, t, src, tag, c, st);
}
int MPI_Isend(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c, MPI_Request *q)
{
    note(MPIC_ISEND, dest == MPI_PROC_NULL ? 0 : type_bytes(n, t));
    return PMPI_Isend(b, n, t, dest, tag, c, q);
}
int MPI_Irecv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Request *q)
{
    note(MPIC_IRECV, src == MPI_PROC_NULL ? 0 : type_bytes(n, t));
    return PMPI_Irecv(b, n, t, src, tag, c, q);
}
int MPI_Wait(MPI_Request *q, MPI_Status *st)
{
    note(MPIC_WAIT, 0);
    return PMPI_Wait(q, st);
}
int MPI_Test(MPI_Request *q, int *flag, MPI_Status *st)
{
    note(MPIC_TEST, 0);
    return PMPI_Test(q, flag, st);
}
int MPI_Comm_dup(MPI_Comm c, MPI_Comm *out)
{
    note(MPIC_COMM_DUP, 0);
    return PMPI_Comm_dup(c, out);
}
int MPI_Comm_split(MPI_Comm c, int color, int key, MPI_Comm *out)
{
    note(MPIC_COMM_SPLIT, 0);
    return PMPI_Comm_split(c, color, key, out);
}
int MPI_Comm_free(MPI_Comm *c)
{
    note(MPIC_COMM_FREE, 0);
    return PMPI_Comm_free(c);
}
int MPI_Op_create(MPI_User_function *f, int commute, MPI_Op *op)
{
    note(MPIC_OP_CREATE, 0);
    return PMPI_Op_create(f, commute, op);
}
int MPI_Type_commit(MPI_Datatype *t)
{
    note(MPIC_TYPE_COMMIT, 0);
    return PMPI_Type_commit(t);
}
