/* MPI_Win_create on memory the program maps shared itself: a shared mapping of a file
 * (mkstemp in TMPDIR or /tmp, its path kept until MPI_Win_create has returned) and anonymous shared
 * memory (mmap MAP_SHARED | MAP_ANONYMOUS, which the kernel keeps on a file of its own).
 * Billboard offers that file to the other ranks of the host as it is (win/remap.rs,
 * shared_object): they map it, and RMA on the window is loads, stores and CPU atomics by the
 * origin, as on a window of MPI_Win_allocate. For each of the two, ROUNDS rounds in one
 * MPI_Win_lock_all epoch, every rank on every target t (itself too): MPI_Fetch_and_op
 * (MPI_SUM, 1) on t's counter, MPI_Put of its stamp into its slot of t, then after a flush
 * MPI_Compare_and_swap of the stamp for stamp + 1 and MPI_Get of it back; a fence epoch of a
 * put to the right neighbour; then each rank checks its window against the serial model, and
 * after MPI_Win_free, that its mapping still holds those bytes (for the file: read back with
 * pread, so the window was the file's pages, not a copy of them).
 *
 * On Billboard no operation on another rank may take a single copy (process_vm_writev/readv,
 * the MPI_T counter bb_rma_single_copies): for the file always (it is opened by its path),
 * for the anonymous memory where the kernel lets this process open /proc/self/map_files/
 * (CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE; the test looks). Elsewhere only results count.
 */
#include "common.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#define ROUNDS 50
#define WLONGS 64 /* per window: counter, fence slot, then one slot per rank */

/* Whether this process may open its own mapping at `p` through /proc/self/map_files/. */
static int map_files_open(void *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512], path[128];
    unsigned long lo, hi, at = (unsigned long)p;
    int ok = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= at && at < hi) {
            snprintf(path, sizeof path, "/proc/self/map_files/%lx-%lx", lo, hi);
            int fd = open(path, O_RDWR);
            ok = fd >= 0;
            if (fd >= 0)
                close(fd);
            break;
        }
    fclose(f);
    return ok;
}

static void run(const char *what, long *w, int fd, const char *path, MPI_T_pvar_session session,
                MPI_T_pvar_handle copies, int expect_no_copies)
{
    int n = t_size, me = t_rank;
    memset(w, 0, WLONGS * sizeof(long));
    unsigned long long copies_before = copies ? t_pvar_read(session, copies) : 0;
    MPI_Win win;
    MPI_CHK(MPI_Win_create(w, WLONGS * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    if (path)
        unlink(path); /* the window has the file now: a failure below leaves nothing behind */
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    long one = 1;
    for (int k = 0; k < ROUNDS; k++) {
        long stamp = 1000L * k + me;
        MPI_CHK(MPI_Win_lock_all(0, win));
        for (int t = 0; t < n; t++) {
            long before = -1, old = -1, back = -1, next = stamp + 1;
            MPI_CHK(MPI_Fetch_and_op(&one, &before, MPI_LONG, t, 0, MPI_SUM, win));
            MPI_CHK(MPI_Put(&stamp, 1, MPI_LONG, t, 2 + me, 1, MPI_LONG, win));
            MPI_CHK(MPI_Win_flush(t, win));
            CHECK(before >= 0 && before < (long)n * ROUNDS, "%s: counter of rank %d fetched %ld", what, t, before);
            MPI_CHK(MPI_Compare_and_swap(&next, &stamp, &old, MPI_LONG, t, 2 + me, win));
            MPI_CHK(MPI_Win_flush(t, win));
            CHECK(old == stamp, "%s round %d: compare_and_swap at rank %d found %ld, not the %ld put", what, k, t,
                  old, stamp);
            MPI_CHK(MPI_Get(&back, 1, MPI_LONG, t, 2 + me, 1, MPI_LONG, win));
            MPI_CHK(MPI_Win_flush(t, win));
            CHECK(back == stamp + 1, "%s round %d: get from rank %d read %ld, expected %ld", what, k, t, back,
                  stamp + 1);
        }
        MPI_CHK(MPI_Win_unlock_all(win));
        MPI_CHK(MPI_Win_fence(0, win));
        MPI_CHK(MPI_Put(&stamp, 1, MPI_LONG, (me + 1) % n, 1, 1, MPI_LONG, win));
        MPI_CHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
        long left = 1000L * k + (me + n - 1) % n;
        CHECK(w[1] == left, "%s round %d: fence put brought %ld, expected %ld", what, k, w[1], left);
        CHECK(w[0] == (long)n * (k + 1), "%s round %d: counter %ld, expected %ld", what, k, w[0], (long)n * (k + 1));
        for (int o = 0; o < n; o++)
            CHECK(w[2 + o] == 1000L * k + o + 1, "%s round %d: slot of rank %d is %ld, expected %ld", what, k, o,
                  w[2 + o], 1000L * k + o + 1);
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD)); /* nobody reaches this window's next round early */
    }
    MPI_CHK(MPI_Win_free(&win));
    CHECK_EQ(w[0], (long)n * ROUNDS, "counter after MPI_Win_free");
    if (fd >= 0) {
        long in_file[WLONGS];
        CHECK(pread(fd, in_file, sizeof in_file, 0) == (ssize_t)sizeof in_file, "%s: pread of the file", what);
        CHECK(memcmp(in_file, w, sizeof in_file) == 0, "%s: the file does not hold the window's bytes", what);
    }
    if (copies && expect_no_copies) {
        unsigned long long c = t_pvar_read(session, copies) - copies_before;
        CHECK(c == 0, "%s: %llu single copies: a window in shared memory must be reached by loads and stores", what,
              c);
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_create_mapped", 1);
    int provided;
    MPI_CHK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_T_pvar_session session;
    MPI_CHK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle copies = t_pvar_counter(session, "bb_rma_single_copies");
    if (!copies && t_rank == 0 && t_on_billboard())
        FAIL("Billboard has no MPI_T counter bb_rma_single_copies");
    size_t bytes = WLONGS * sizeof(long);

    /* A file's shared mapping. */
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[512];
    snprintf(path, sizeof path, "%s/win_create_mapped.XXXXXX", dir);
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp %s", path);
    CHECK(ftruncate(fd, (off_t)bytes) == 0, "ftruncate %s", path);
    long *w = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(w != MAP_FAILED, "mmap of %s", path);
    run("file", w, fd, path, session, copies, 1);
    munmap(w, bytes);
    close(fd);

    /* Anonymous shared memory. */
    w = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(w != MAP_FAILED, "anonymous shared mmap");
    int mine = map_files_open(w), all = 0;
    MPI_CHK(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
    run("anonymous", w, -1, NULL, session, copies, all);
    munmap(w, bytes);

    MPI_CHK(MPI_T_pvar_session_free(&session));
    MPI_CHK(MPI_T_finalize());
    return t_finish();
}
