/* A profiling tool as tools are built (mpiP, eztrace): loaded before the MPI library, it
 * defines MPI_ functions that count their calls and hand over to PMPI_. Each program call must
 * reach it exactly once: the library must not call its own MPI_ entry points (a tool would see
 * calls the program never made), and the Fortran bindings reach the C MPI_ names (as MPICH's
 * do: those of `mpif.h` and module `mpi`, not those of `mpi_f08`), so a C tool sees a Fortran 77
 * program's calls too. The counts are printed as the process exits. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { INIT, FINALIZE, SEND, RECV, ISEND, IRECV, WAIT, WAITALL, SENDRECV, BCAST, REDUCE, ALLREDUCE, BARRIER, DUP, CALLS };
static const char *names[CALLS] = {"init", "finalize", "send", "recv", "isend", "irecv", "wait", "waitall", "sendrecv",
                                   "bcast", "reduce", "allreduce", "barrier", "dup"};
static int count[CALLS];

int MPI_Init(int *argc, char ***argv) { count[INIT]++; return PMPI_Init(argc, argv); }
int MPI_Send(const void *b, int c, MPI_Datatype d, int r, int t, MPI_Comm m) { count[SEND]++; return PMPI_Send(b, c, d, r, t, m); }
int MPI_Recv(void *b, int c, MPI_Datatype d, int r, int t, MPI_Comm m, MPI_Status *s) { count[RECV]++; return PMPI_Recv(b, c, d, r, t, m, s); }
int MPI_Isend(const void *b, int c, MPI_Datatype d, int r, int t, MPI_Comm m, MPI_Request *q) { count[ISEND]++; return PMPI_Isend(b, c, d, r, t, m, q); }
int MPI_Irecv(void *b, int c, MPI_Datatype d, int r, int t, MPI_Comm m, MPI_Request *q) { count[IRECV]++; return PMPI_Irecv(b, c, d, r, t, m, q); }
int MPI_Wait(MPI_Request *q, MPI_Status *s) { count[WAIT]++; return PMPI_Wait(q, s); }
int MPI_Waitall(int n, MPI_Request q[], MPI_Status s[]) { count[WAITALL]++; return PMPI_Waitall(n, q, s); }
int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype sd, int dst, int st, void *rb, int rc, MPI_Datatype rd, int src,
                 int rt, MPI_Comm m, MPI_Status *s) {
    count[SENDRECV]++;
    return PMPI_Sendrecv(sb, sc, sd, dst, st, rb, rc, rd, src, rt, m, s);
}
int MPI_Bcast(void *b, int c, MPI_Datatype d, int root, MPI_Comm m) { count[BCAST]++; return PMPI_Bcast(b, c, d, root, m); }
int MPI_Reduce(const void *s, void *r, int c, MPI_Datatype d, MPI_Op o, int root, MPI_Comm m) { count[REDUCE]++; return PMPI_Reduce(s, r, c, d, o, root, m); }
int MPI_Allreduce(const void *s, void *r, int c, MPI_Datatype d, MPI_Op o, MPI_Comm m) { count[ALLREDUCE]++; return PMPI_Allreduce(s, r, c, d, o, m); }
int MPI_Barrier(MPI_Comm m) { count[BARRIER]++; return PMPI_Barrier(m); }
int MPI_Comm_dup(MPI_Comm m, MPI_Comm *n) { count[DUP]++; return PMPI_Comm_dup(m, n); }

int MPI_Finalize(void) { count[FINALIZE]++; return PMPI_Finalize(); }

__attribute__((destructor)) static void report(void) {
    const char *rank = getenv("PMI_RANK");
    printf("tool: rank %s:", rank ? rank : "?");
    for (int i = 0; i < CALLS; i++) printf(" %s %d", names[i], count[i]);
    printf("\n");
    fflush(stdout);
}
