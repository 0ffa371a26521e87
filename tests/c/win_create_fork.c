/* fork() while an MPI_Win_create window lives. Billboard moves a created window's pages onto a
 * memory file that every member of the host maps (crates/mpi/src/win/remap.rs); a child made by
 * fork() must still get a private copy of them, as it would of any malloc'd memory: its stores
 * never reach the parent's window, and what other ranks put into the parent's window after the
 * fork never reaches the child.
 *
 * Every rank fills its window (malloc'd, several pages, with program data on its edge pages)
 * with a pattern, then forks a child that waits on a pipe. Meanwhile the ranks do RMA on every
 * window under MPI_Win_lock_all (fetch-and-op counters, puts into slots). Then the child checks
 * that its copy still holds the pattern of the fork (the ranks' RMA is not in it), overwrites
 * every byte of it, and exits; the parent checks that its window holds the RMA's results and
 * none of the child's stores, and that the window still works (a second RMA round, exact sums).
 * With argument `free`, the window is freed before the child writes (its pages go back to
 * private memory in the parent while the child lives) and the parent checks the same.
 */
#include "common.h"

#include <stdint.h>
#include <sys/wait.h>

#define LONGS 3000 /* 24000 bytes: six pages or more */
#define ROUNDS 50

static long pattern(int rank, int i)
{
    return (long)rank * 1000003L + i * 7L + 11;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_create_fork", 1);
    int n = t_size, me = t_rank;
    int free_first = argc > 1 && strcmp(argv[1], "free") == 0;
    /* guard | window | guard in one block: the edge pages hold program data too. */
    long *block = malloc((LONGS + 16) * sizeof(long));
    long *mem = block + 8;
    for (int i = 0; i < LONGS + 16; i++)
        block[i] = pattern(me, i - 8);
    MPI_Win win;
    MPI_CHK(MPI_Win_create(mem, LONGS * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    int go[2];
    CHECK(pipe(go) == 0, "pipe");
    fflush(stdout);
    pid_t child = fork();
    CHECK(child >= 0, "fork");
    if (child == 0) {
        /* The child: no MPI. Waits until the ranks' RMA is done, then checks and writes. */
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) != 1)
            _exit(3);
        for (int i = 0; i < LONGS + 16; i++)
            if (block[i] != pattern(me, i - 8)) {
                printf("child of rank %d: long %d of its copy is %ld, not %ld as at the fork\n", me, i - 8, block[i],
                       pattern(me, i - 8));
                fflush(stdout);
                _exit(2);
            }
        for (int i = 0; i < LONGS + 16; i++)
            block[i] = -1;
        _exit(0);
    }
    close(go[0]);
    /* Every rank has forked: from here on the ranks' RMA comes after every child's fork. */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* RMA while the child lives: counters at longs 0 and LONGS - 1, slots 1..n. */
    long one = 1, got, mine = me + 1;
    MPI_CHK(MPI_Win_lock_all(0, win));
    for (int k = 0; k < ROUNDS; k++)
        for (int t = 0; t < n; t++)
            MPI_CHK(MPI_Fetch_and_op(&one, &got, MPI_LONG, t, k % 2 ? LONGS - 1 : 0, MPI_SUM, win));
    for (int t = 0; t < n; t++)
        MPI_CHK(MPI_Put(&mine, 1, MPI_LONG, t, 1 + me, 1, MPI_LONG, win));
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (free_first)
        MPI_CHK(MPI_Win_free(&win));

    /* The child checks its copy and overwrites it; then the parent checks its own. */
    CHECK(write(go[1], "g", 1) == 1, "write to the child's pipe");
    close(go[1]);
    int status;
    CHECK(waitpid(child, &status, 0) == child, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the child's copy of the window changed after the fork (child exit status %#x)", status);
    long want0 = pattern(me, 0) + (long)n * (ROUNDS / 2), want_last = pattern(me, LONGS - 1) + (long)n * (ROUNDS / 2);
    CHECK_EQ(mem[0], want0, "counter at long 0 after the child wrote its copy");
    CHECK_EQ(mem[LONGS - 1], want_last, "counter at the last long after the child wrote its copy");
    for (int r = 0; r < n; r++)
        CHECK_EQ(mem[1 + r], r + 1, "slot of a rank after the child wrote its copy");
    for (int i = 1 + n; i < LONGS - 1; i++)
        if (mem[i] != pattern(me, i))
            FAIL("long %d of the window is %ld after the child wrote its copy, expected %ld", i, mem[i],
                 pattern(me, i));
    for (int i = 0; i < 8; i++)
        if (block[i] != pattern(me, i - 8) || block[LONGS + 8 + i] != pattern(me, LONGS + i))
            FAIL("a guard long beside the window changed after the child wrote its copy");

    if (!free_first) {
        /* Still a window: another round, exact sums. */
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Win_lock_all(0, win));
        for (int k = 0; k < ROUNDS; k++)
            for (int t = 0; t < n; t++)
                MPI_CHK(MPI_Fetch_and_op(&one, &got, MPI_LONG, t, LONGS / 2, MPI_SUM, win));
        MPI_CHK(MPI_Win_unlock_all(win));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        CHECK_EQ(mem[LONGS / 2], pattern(me, LONGS / 2) + (long)n * ROUNDS, "counter after the fork's child ended");
        MPI_CHK(MPI_Win_free(&win));
    }
    free(block);
    return t_finish();
}
