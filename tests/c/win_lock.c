/* Passive-target synchronisation (MPI_Win_lock / unlock, lock_all, flush): the target does
 * nothing but wait in MPI calls (a barrier, a receive) while the others act on its window.
 *
 * 1. Mutual exclusion: every rank, many times, takes an exclusive lock on rank 0's counter,
 *    reads it (MPI_Get + MPI_Win_flush), writes it back plus one (MPI_Put), unlocks. A lost
 *    update would show as a total below ranks x rounds: exclusive locks must exclude.
 * 2. Fetch-and-add under MPI_Win_lock_all: each rank takes tickets from every rank's counter;
 *    the tickets one counter handed out are exactly 0..n*rounds-1, each once.
 * 3. Compare-and-swap: every rank tries to claim each of n slots at rank 0 (swap its rank
 *    in for -1); each slot is won by exactly one rank, and each rank learns who won.
 * 4. The target's own lock: rank 0 increments its counter by load/store inside
 *    MPI_Win_lock(EXCLUSIVE, 0) while the others use MPI_Accumulate under shared locks.
 * 5. Request-based: MPI_Rput / MPI_Rget / MPI_Raccumulate / MPI_Rget_accumulate with
 *    MPI_Wait inside a lock_all epoch, checked against a serial model.
 * 6. Flush orders: a put, MPI_Win_flush, then a get of the same place sees the put.
 * 7. Accumulate ordering (MPI's default: accumulates of one origin to one place apply in
 *    order): a run of MPI_REPLACE accumulates, then MPI_Get_accumulate with MPI_NO_OP sees
 *    the last; a run of fetch-and-adds with no flush between them fetches consecutive values.
 */
#include "common.h"

#define ROUNDS 200
/* Exclusive-lock rounds per rank: MPICH 4.0.2 takes ~20 ms per contended acquisition with
 * more ranks than cores (each waits for a scheduler slice), so the suite keeps this small. */
#define LOCK_ROUNDS 50

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_lock", 1);
    int n = t_size, me = t_rank;
    long *mem;
    MPI_Win win;
    MPI_CHK(MPI_Win_allocate((MPI_Aint)(8 + 2 * n) * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    for (int i = 0; i < 8 + 2 * n; i++)
        mem[i] = 0;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* 1. read-modify-write of mem[0] at rank 0 under exclusive locks */
    for (int r = 0; r < LOCK_ROUNDS; r++) {
        long v = -1, one;
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        MPI_CHK(MPI_Get(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win));
        MPI_CHK(MPI_Win_flush(0, win));
        one = v + 1;
        MPI_CHK(MPI_Put(&one, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win));
        MPI_CHK(MPI_Win_unlock(0, win));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0)
        CHECK_EQ(mem[0], (long)n * LOCK_ROUNDS, "counter after exclusive read-modify-writes");

    /* 2. fetch-and-add tickets from every rank's mem[1] under lock_all */
    /* seen[t * ROUNDS + k]: how often ticket k of rank t was drawn (summed over ranks) */
    int *seen = calloc((size_t)n * ROUNDS, sizeof(int)), *all = calloc((size_t)n * ROUNDS, sizeof(int));
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int r = 0; r < ROUNDS; r++) {
        long one = 1, got = -1;
        int t = (me + r) % n;
        MPI_CHK(MPI_Fetch_and_op(&one, &got, MPI_LONG, t, 1, MPI_SUM, win));
        MPI_CHK(MPI_Win_flush(t, win));
        CHECK(got >= 0 && got < ROUNDS, "ticket %ld of rank %d out of range", got, t);
        seen[t * ROUNDS + got]++;
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Allreduce(seen, all, n * ROUNDS, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ(mem[1], ROUNDS, "tickets handed out by this rank");
    for (int k = 0; k < ROUNDS; k++)
        CHECK(all[me * ROUNDS + k] == 1, "ticket %d of rank %d drawn %d times", k, me, all[me * ROUNDS + k]);
    free(seen);
    free(all);

    /* 3. compare-and-swap claims of n slots (mem[8 + s]) at rank 0, initially -1 */
    if (me == 0)
        for (int s = 0; s < n; s++)
            mem[8 + s] = -1;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_lock_all(0, win));
    int won = 0;
    for (int s = 0; s < n; s++) {
        int slot = (s + me) % n;
        long mine = me, empty = -1, was = -2;
        MPI_CHK(MPI_Compare_and_swap(&mine, &empty, &was, MPI_LONG, 0, 8 + slot, win));
        MPI_CHK(MPI_Win_flush(0, win));
        CHECK(was >= -1 && was < n, "slot %d held %ld", slot, was);
        if (was == -1)
            won++;
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    int total = 0;
    MPI_CHK(MPI_Allreduce(&won, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ(total, n, "slots won over all ranks");
    if (me == 0)
        for (int s = 0; s < n; s++)
            CHECK(mem[8 + s] >= 0 && mem[8 + s] < n, "slot %d ends with %ld", s, mem[8 + s]);

    /* 4. the target's own exclusive lock against others' accumulates (mem[2] at rank 0) */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    for (int r = 0; r < ROUNDS; r++) {
        if (me == 0) {
            MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            long v = mem[2];
            mem[2] = v + 1;
            MPI_CHK(MPI_Win_unlock(0, win));
        } else {
            long one = 1;
            MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
            MPI_CHK(MPI_Accumulate(&one, 1, MPI_LONG, 0, 2, 1, MPI_LONG, MPI_SUM, win));
            MPI_CHK(MPI_Win_unlock(0, win));
        }
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0)
        CHECK_EQ(mem[2], (long)n * ROUNDS, "local increments plus accumulates");

    /* 5. request-based operations on the right neighbour's mem[3..6] */
    int right = (me + 1) % n, left = (me + n - 1) % n;
    MPI_CHK(MPI_Win_lock_all(0, win));
    {
        MPI_Request rq[4];
        long put = 100 + me, acc = 7, got = -1, fetched = -1, add = 5;
        MPI_CHK(MPI_Rput(&put, 1, MPI_LONG, right, 3, 1, MPI_LONG, win, &rq[0]));
        MPI_CHK(MPI_Raccumulate(&acc, 1, MPI_LONG, right, 4, 1, MPI_LONG, MPI_SUM, win, &rq[1]));
        MPI_CHK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Win_flush(right, win));
        MPI_CHK(MPI_Rget(&got, 1, MPI_LONG, right, 3, 1, MPI_LONG, win, &rq[2]));
        MPI_CHK(MPI_Rget_accumulate(&add, 1, MPI_LONG, &fetched, 1, MPI_LONG, right, 4, 1, MPI_LONG, MPI_SUM, win,
                                    &rq[3]));
        MPI_CHK(MPI_Wait(&rq[2], MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Wait(&rq[3], MPI_STATUS_IGNORE));
        CHECK_EQ(got, 100 + me, "MPI_Rget after MPI_Rput and a flush");
        CHECK_EQ(fetched, 7, "MPI_Rget_accumulate's fetch after MPI_Raccumulate");
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_EQ(mem[3], 100 + left, "value put by the left neighbour");
    CHECK_EQ(mem[4], 12, "7 + 5 accumulated by the left neighbour");

    /* 6. put, flush, get of the same place in one lock epoch; strided target type */
    MPI_Datatype every2;
    MPI_CHK(MPI_Type_vector(2, 1, 2, MPI_LONG, &every2));
    MPI_CHK(MPI_Type_commit(&every2));
    MPI_CHK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    long pair[2] = {1000 + me, 2000 + me}, back[2] = {0, 0};
    MPI_CHK(MPI_Put(pair, 2, MPI_LONG, right, 5, 1, every2, win));
    MPI_CHK(MPI_Win_flush(right, win));
    MPI_CHK(MPI_Get(back, 2, MPI_LONG, right, 5, 1, every2, win));
    MPI_CHK(MPI_Win_flush_local(right, win));
    CHECK_EQ(back[0], 1000 + me, "first strided element read back");
    CHECK_EQ(back[1], 2000 + me, "second strided element read back");
    MPI_CHK(MPI_Win_unlock(right, win));
    MPI_CHK(MPI_Type_free(&every2));

    /* 7. ordering of one origin's accumulates to one place: slot 8 + n + me of the right
     * neighbour, and its mem[7] (2000 + me, from part 6), which only this rank adds to */
    MPI_CHK(MPI_Win_lock_all(0, win));
    {
        long vals[100], last = -1, fetched[10];
        for (int k = 0; k < 100; k++) {
            vals[k] = me * 100000 + k;
            MPI_CHK(MPI_Accumulate(&vals[k], 1, MPI_LONG, right, 8 + n + me, 1, MPI_LONG, MPI_REPLACE, win));
        }
        MPI_CHK(MPI_Get_accumulate(NULL, 0, MPI_LONG, &last, 1, MPI_LONG, right, 8 + n + me, 1, MPI_LONG, MPI_NO_OP,
                                   win));
        long one = 1;
        for (int k = 0; k < 10; k++)
            MPI_CHK(MPI_Fetch_and_op(&one, &fetched[k], MPI_LONG, right, 7, MPI_SUM, win));
        MPI_CHK(MPI_Win_flush(right, win));
        CHECK_EQ(last, me * 100000 + 99, "MPI_NO_OP fetch after 100 MPI_REPLACE accumulates");
        for (int k = 0; k < 10; k++)
            CHECK_EQ(fetched[k], fetched[0] + k, "fetch-and-adds of one origin, in order");
    }
    MPI_CHK(MPI_Win_unlock_all(win));

    /* Unlocking what is not locked is an RMA synchronisation error. */
    int rc = MPI_Win_unlock(right, win);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, MPI_ERR_RMA_SYNC, "class of MPI_Win_unlock without a lock");

    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_free(&win));
    return t_finish();
}
