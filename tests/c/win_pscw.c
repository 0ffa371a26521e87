/* Generalized active target (MPI_Win_post / start / complete / wait, MPI_Win_test), checked
 * against a serial model.
 *
 * 1. Ring: each round every rank exposes its window to its left neighbour and accesses its
 *    right one: a put of a round-dependent block, an accumulate, and a get of what the right
 *    neighbour wrote in its own window before posting. Odd rounds end the exposure by
 *    polling MPI_Win_test instead of MPI_Win_wait.
 * 2. Star: rank 0 exposes to all others at once; each adds its rank + 1 into every element
 *    with MPI_Accumulate, and rank 0 checks the sum after MPI_Win_wait.
 * 3. Errors: MPI_Win_complete without MPI_Win_start, MPI_Win_wait without MPI_Win_post,
 *    and a put outside the access group are RMA synchronisation errors.
 */
#include "common.h"

#define N 64
#define ROUNDS 50

static void expect_class(int rc, int cls, const char *what)
{
    int got = -1;
    MPI_Error_class(rc, &got);
    CHECK(got == cls, "%s: error class %d, expected %d", what, got, cls);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_pscw", 1);
    int n = t_size, me = t_rank, right = (me + 1) % n, left = (me + n - 1) % n;
    int *mem;
    MPI_Win win;
    MPI_CHK(MPI_Win_allocate(2 * N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_Group world, gleft, gright, others, g0;
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_CHK(MPI_Group_incl(world, 1, &left, &gleft));
    MPI_CHK(MPI_Group_incl(world, 1, &right, &gright));
    int zero = 0;
    MPI_CHK(MPI_Group_incl(world, 1, &zero, &g0));
    MPI_CHK(MPI_Group_excl(world, 1, &zero, &others));

    /* 1. ring */
    for (int r = 0; r < ROUNDS; r++) {
        /* Set before the post: the left neighbour reads this rank's second half. */
        for (int i = 0; i < N; i++) {
            mem[i] = -1;
            mem[N + i] = me * 10000 + r * 100 + i;
        }
        int block[N], got[N], add[4] = {r, r, r, r};
        for (int i = 0; i < N; i++) {
            block[i] = me * 1000 + r + i;
            got[i] = -5;
        }
        MPI_CHK(MPI_Win_post(gleft, 0, win));
        MPI_CHK(MPI_Win_start(gright, 0, win));
        MPI_CHK(MPI_Put(block, N - 4, MPI_INT, right, 0, N - 4, MPI_INT, win));
        MPI_CHK(MPI_Accumulate(add, 4, MPI_INT, right, N - 4, 4, MPI_INT, MPI_SUM, win));
        MPI_CHK(MPI_Get(got, N, MPI_INT, right, N, N, MPI_INT, win));
        MPI_CHK(MPI_Win_complete(win));
        for (int i = 0; i < N; i++)
            CHECK(got[i] == right * 10000 + r * 100 + i, "round %d: got[%d] = %d from rank %d", r, i, got[i], right);
        if (r % 2) {
            int flag = 0;
            double t0 = MPI_Wtime();
            while (!flag) {
                MPI_CHK(MPI_Win_test(win, &flag));
                CHECK(flag || MPI_Wtime() - t0 < 30, "MPI_Win_test never said the exposure ended");
            }
        } else {
            MPI_CHK(MPI_Win_wait(win));
        }
        for (int i = 0; i < N - 4; i++)
            CHECK(mem[i] == left * 1000 + r + i, "round %d: mem[%d] = %d after the put from rank %d", r, i, mem[i],
                  left);
        for (int i = N - 4; i < N; i++)
            CHECK(mem[i] == -1 + r, "round %d: mem[%d] = %d after the accumulate", r, i, mem[i]);
    }

    /* 2. star */
    for (int i = 0; i < N; i++)
        mem[i] = 0;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        if (n > 1) {
            MPI_CHK(MPI_Win_post(others, 0, win));
            MPI_CHK(MPI_Win_wait(win));
        }
        for (int i = 0; i < N; i++)
            CHECK_EQ(mem[i], (long)n * (n + 1) / 2 - 1, "sum of the others' accumulates");
    } else {
        int v[N];
        for (int i = 0; i < N; i++)
            v[i] = me + 1;
        MPI_CHK(MPI_Win_start(g0, 0, win));
        MPI_CHK(MPI_Accumulate(v, N, MPI_INT, 0, 0, N, MPI_INT, MPI_SUM, win));
        MPI_CHK(MPI_Win_complete(win));
    }

    /* 3. errors */
    expect_class(MPI_Win_complete(win), MPI_ERR_RMA_SYNC, "MPI_Win_complete without MPI_Win_start");
    expect_class(MPI_Win_wait(win), MPI_ERR_RMA_SYNC, "MPI_Win_wait without MPI_Win_post");
    if (n > 2) {
        MPI_CHK(MPI_Win_post(gleft, 0, win));
        MPI_CHK(MPI_Win_start(gright, 0, win));
        int v = 1;
        expect_class(MPI_Put(&v, 1, MPI_INT, left, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC,
                     "MPI_Put to a rank outside the access group");
        MPI_CHK(MPI_Win_complete(win));
        MPI_CHK(MPI_Win_wait(win));
    }

    MPI_CHK(MPI_Group_free(&world));
    MPI_CHK(MPI_Group_free(&gleft));
    MPI_CHK(MPI_Group_free(&gright));
    MPI_CHK(MPI_Group_free(&g0));
    MPI_CHK(MPI_Group_free(&others));
    MPI_CHK(MPI_Win_free(&win));
    return t_finish();
}
