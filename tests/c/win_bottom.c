/* One-sided operations whose origin (and result) buffer is MPI_BOTTOM with a datatype of
 * absolute addresses (MPI_Get_address), as ARMCI-MPI's direct I/O-vector method moves a set of
 * separate local pieces in one operation (NWChem with ARMCI_STRIDED_METHOD=IOV died at its
 * first MPI_Get: "NULL result buffer for 1800 bytes"). A NULL buffer is an error only where the
 * datatype starts at offset 0. Windows from MPI_Win_allocate and MPI_Win_create, under an
 * exclusive lock of the right-hand neighbour; MPI_Sendrecv from and into MPI_BOTTOM beside. */
#include "common.h"

enum { PIECES = 3, LEN = 5, N = 64 };

/* PIECES separate heap pieces of LEN doubles, and a type that names them by absolute address. */
static MPI_Datatype absolute(double *pieces[PIECES])
{
    int lens[PIECES];
    MPI_Aint at[PIECES];
    for (int p = 0; p < PIECES; p++) {
        lens[p] = LEN;
        MPI_CHK(MPI_Get_address(pieces[p], &at[p]));
    }
    MPI_Datatype t;
    MPI_CHK(MPI_Type_create_hindexed(PIECES, lens, at, MPI_DOUBLE, &t));
    MPI_CHK(MPI_Type_commit(&t));
    return t;
}

/* The same pieces in the window: piece p at element 10 * p + 1. */
static MPI_Datatype in_window(void)
{
    int lens[PIECES], at[PIECES];
    for (int p = 0; p < PIECES; p++) {
        lens[p] = LEN;
        at[p] = 10 * p + 1;
    }
    MPI_Datatype t;
    MPI_CHK(MPI_Type_indexed(PIECES, lens, at, MPI_DOUBLE, &t));
    MPI_CHK(MPI_Type_commit(&t));
    return t;
}

static void run(double *base, MPI_Win win, const char *kind)
{
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    double *pieces[PIECES], *results[PIECES];
    for (int p = 0; p < PIECES; p++) {
        pieces[p] = malloc(LEN * sizeof(double));
        results[p] = malloc(LEN * sizeof(double));
    }
    MPI_Datatype origin = absolute(pieces), result = absolute(results), target = in_window();
    for (int i = 0; i < N; i++)
        base[i] = 100.0 * t_rank + i;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* Get: the right-hand window's pieces land in our separate pieces. */
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPI_CHK(MPI_Get(MPI_BOTTOM, 1, origin, right, 0, 1, target, win));
    MPI_CHK(MPI_Win_unlock(right, win));
    for (int p = 0; p < PIECES; p++)
        for (int i = 0; i < LEN; i++)
            CHECK(pieces[p][i] == 100.0 * right + 10 * p + 1 + i, "%s: MPI_Get piece %d[%d] = %g, want %g", kind, p, i,
                  pieces[p][i], 100.0 * right + 10 * p + 1 + i);

    /* Put, then Accumulate: the pieces (now p * 1000 + i) go back, then are added once more. */
    for (int p = 0; p < PIECES; p++)
        for (int i = 0; i < LEN; i++)
            pieces[p][i] = p * 1000.0 + i;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPI_CHK(MPI_Put(MPI_BOTTOM, 1, origin, right, 0, 1, target, win));
    MPI_CHK(MPI_Win_flush(right, win));
    MPI_CHK(MPI_Accumulate(MPI_BOTTOM, 1, origin, right, 0, 1, target, MPI_SUM, win));
    /* Get_accumulate: adds the pieces a third time, and brings what was there before. */
    MPI_CHK(MPI_Get_accumulate(MPI_BOTTOM, 1, origin, MPI_BOTTOM, 1, result, right, 0, 1, target, MPI_SUM, win));
    MPI_CHK(MPI_Win_unlock(right, win));
    for (int p = 0; p < PIECES; p++)
        for (int i = 0; i < LEN; i++)
            CHECK(results[p][i] == 2 * (p * 1000.0 + i), "%s: MPI_Get_accumulate's result %d[%d] = %g, want %g", kind, p,
                  i, results[p][i], 2 * (p * 1000.0 + i));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, t_rank, 0, win));
    for (int p = 0; p < PIECES; p++)
        for (int i = 0; i < LEN; i++)
            CHECK(base[10 * p + 1 + i] == 3 * (p * 1000.0 + i), "%s: element %d = %g after put and two adds from rank %d",
                  kind, 10 * p + 1 + i, base[10 * p + 1 + i], left);
    CHECK(base[0] == 100.0 * t_rank && base[6] == 100.0 * t_rank + 6, "%s: elements outside the pieces changed", kind);
    MPI_CHK(MPI_Win_unlock(t_rank, win));

    /* Point-to-point from and into MPI_BOTTOM alike. */
    MPI_CHK(MPI_Sendrecv(MPI_BOTTOM, 1, origin, right, 7, MPI_BOTTOM, 1, result, left, 7, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
    for (int p = 0; p < PIECES; p++)
        for (int i = 0; i < LEN; i++)
            CHECK(results[p][i] == p * 1000.0 + i, "%s: MPI_Sendrecv piece %d[%d] = %g", kind, p, i, results[p][i]);

    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Type_free(&origin);
    MPI_Type_free(&result);
    MPI_Type_free(&target);
    for (int p = 0; p < PIECES; p++) {
        free(pieces[p]);
        free(results[p]);
    }
}

int main(int argc, char **argv)
{
    t_name = "win_bottom";
    t_watchdog();
    MPI_Init(&argc, &argv);
    t_setup("win_bottom", 0);
    double *base;
    MPI_Win win;
    MPI_CHK(MPI_Win_allocate(N * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    run(base, win, "MPI_Win_allocate");
    MPI_CHK(MPI_Win_free(&win));
    double *mine = malloc(N * sizeof(double));
    MPI_CHK(MPI_Win_create(mine, N * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    run(mine, win, "MPI_Win_create");
    MPI_CHK(MPI_Win_free(&win));
    free(mine);
    return t_finish();
}
