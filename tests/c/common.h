/* Shared helpers for the Billboard C test suite (tests/c).
 *
 * Each program tests one feature. Rank 0 prints exactly one line at the end:
 *     PASS <name>
 * or any rank prints
 *     FAIL <name>: <expected vs got> (rank R, file:line)
 * and the job ends non-zero (MPI_Abort, or _exit when the failure is in MPI_Abort's way).
 *
 * A watchdog (alarm) turns a hang into a FAIL line and exit code 2, so that a broken library
 * fails rather than hangs. Its period is BB_CTEST_TIMEOUT seconds (default 60).
 *
 * Everything here is plain MPI 3.1 and builds against MPICH's mpi.h and ours.
 */
#ifndef BB_CTEST_COMMON_H
#define BB_CTEST_COMMON_H

#include <dirent.h>
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *t_name = "?";
static int t_rank = -1;
static int t_size = 0;
static char t_alarm_msg[256];

static void t_on_alarm(int sig)
{
    (void)sig;
    /* async-signal-safe: write + _exit only */
    ssize_t w = write(1, t_alarm_msg, strlen(t_alarm_msg));
    (void)w;
    _exit(2);
}

static void t_watchdog(void)
{
    int secs = 60;
    const char *e = getenv("BB_CTEST_TIMEOUT");
    if (e && atoi(e) > 0)
        secs = atoi(e);
    snprintf(t_alarm_msg, sizeof t_alarm_msg, "FAIL %s: timed out after %d s (rank %d, pid %d)\n", t_name, secs,
             t_rank, (int)getpid());
    signal(SIGALRM, t_on_alarm);
    alarm((unsigned)secs);
}

/* Print a FAIL line and end the job. */
static void t_fail_at(const char *file, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("FAIL %s: %s (rank %d, %s:%d)\n", t_name, msg, t_rank, file, line);
    fflush(stdout);
    fflush(stderr);
    int init = 0, fini = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fini);
    if (init && !fini)
        MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);
}

#define FAIL(...) t_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            t_fail_at(__FILE__, __LINE__, __VA_ARGS__);                                                                \
    } while (0)

/* Integer equality with an automatic message. */
#define CHECK_EQ(got, want, what)                                                                                      \
    do {                                                                                                               \
        long long g_ = (long long)(got), w_ = (long long)(want);                                                       \
        if (g_ != w_)                                                                                                  \
            t_fail_at(__FILE__, __LINE__, "%s: expected %lld, got %lld", (what), w_, g_);                              \
    } while (0)

static const char *t_errstr(int rc)
{
    static char s[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    s[0] = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof s, "(no string for code %d)", rc);
    return s;
}

/* Call an MPI function that must succeed (errors are returned: see t_init). */
#define MPI_CHK(call)                                                                                                  \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        if (rc_ != MPI_SUCCESS)                                                                                        \
            t_fail_at(__FILE__, __LINE__, "%s returned %d (%s), expected MPI_SUCCESS", #call, rc_, t_errstr(rc_));     \
    } while (0)

/* Whether the library is Billboard (at run time: the MPICH-header build runs on it too), for
 * checks of what MPICH 4.0.2 does otherwise. */
static int t_on_billboard(void)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_CHK(MPI_Get_library_version(v, &len));
    return strstr(v, "Billboard") != NULL;
}

static void t_setup(const char *name, int min_size)
{
    t_name = name;
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_size);
    t_watchdog();
    /* Errors come back as codes so the test can name what failed. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (t_size < min_size)
        FAIL("needs at least %d ranks, got %d", min_size, t_size);
}

/* MPI_Init + setup. */
static void t_init(int *argc, char ***argv, const char *name, int min_size)
{
    t_name = name;
    t_watchdog();
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) {
        printf("FAIL %s: MPI_Init returned %d\n", name, rc);
        fflush(stdout);
        _exit(1);
    }
    t_setup(name, min_size);
}

/* All ranks reached the end: barrier, finalize, rank 0 prints PASS. */
static int t_finish(void)
{
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    int rank = t_rank;
    int rc = MPI_Finalize();
    if (rc != MPI_SUCCESS) {
        printf("FAIL %s: MPI_Finalize returned %d (rank %d)\n", t_name, rc, rank);
        fflush(stdout);
        _exit(1);
    }
    if (rank == 0) {
        printf("PASS %s\n", t_name);
        fflush(stdout);
    }
    return 0;
}

/* A started handle of the MPI_T counter `name` in `session`, or NULL where the library has
 * none (Billboard's bb_rma_* counters, for instance, are not MPICH's). */
static inline MPI_T_pvar_handle t_pvar_counter(MPI_T_pvar_session session, const char *name)
{
    int num = 0;
    MPI_CHK(MPI_T_pvar_get_num(&num));
    for (int i = 0; i < num; i++) {
        char nm[256], desc[512];
        int nl = sizeof nm, dl = sizeof desc, verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_CHK(MPI_T_pvar_get_info(i, nm, &nl, &verbosity, &var_class, &dt, &en, desc, &dl, &bind, &readonly,
                                    &continuous, &atomic));
        if (strcmp(nm, name) != 0)
            continue;
        MPI_T_pvar_handle h;
        int count = 0;
        MPI_CHK(MPI_T_pvar_handle_alloc(session, i, NULL, &h, &count));
        CHECK_EQ(count, 1, name);
        MPI_CHK(MPI_T_pvar_start(session, h));
        return h;
    }
    return NULL;
}

/* The value of a counter from t_pvar_counter. */
static inline unsigned long long t_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    MPI_CHK(MPI_T_pvar_read(session, h, &v));
    return v;
}

/* Spin on MPI_Test for at most `secs` seconds; FAIL if the request does not complete. */
static void t_wait_bounded(MPI_Request *req, MPI_Status *st, double secs, const char *what)
{
    double t0 = MPI_Wtime();
    int flag = 0;
    while (!flag) {
        MPI_CHK(MPI_Test(req, &flag, st));
        if (!flag && MPI_Wtime() - t0 > secs)
            FAIL("%s did not complete within %.1f s", what, secs);
    }
}

/* Agreement flags (icoll_order.c, mpix_iagree.c): member r of n clears bit (r + salt) % 24 of
 * 0xffffff and keeps bit 24, so every member's flag differs and the AND of all is known. */
static inline int t_flag_of(int r, int salt) { return 0x1ffffff & ~(1 << ((r + salt) % 24)); }

/* The AND of members 0..n-1's t_flag_of(r, salt). */
static inline int t_flags_and(int n, int salt)
{
    int want = 0x1ffffff;
    for (int r = 0; r < n; r++)
        want &= t_flag_of(r, salt);
    return want;
}

/* Adds 1 to the long at `disp` of rank 0's window with MPI_Fetch_and_op under lock_all, checking
 * that each fetch sees a larger value than the last, until rank 0 sends tag 5 (received here);
 * returns how many it added (win_dynamic_regions.c, win_dynamic_mapped.c: fetch-adds while the
 * target attaches and detaches). */
static inline long t_fetch_adds_until_told(MPI_Win win, MPI_Aint disp)
{
    long one = 1, last = -1, ops = 0, dummy;
    int stop = 0;
    MPI_CHK(MPI_Win_lock_all(0, win));
    while (!stop) {
        long got = -1;
        MPI_CHK(MPI_Fetch_and_op(&one, &got, MPI_LONG, 0, disp, MPI_SUM, win));
        MPI_CHK(MPI_Win_flush(0, win));
        CHECK(got > last, "fetch_and_op %ld fetched %ld after %ld", ops, got, last);
        last = got;
        ops++;
        MPI_CHK(MPI_Iprobe(0, 5, MPI_COMM_WORLD, &stop, MPI_STATUS_IGNORE));
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    MPI_CHK(MPI_Recv(&dummy, 1, MPI_LONG, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    return ops;
}

/* Descriptors this process has open now (two_jobs.c, spawn.c: disconnect closes the other
 * job's connections). */
static inline int t_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL, "cannot read /proc/self/fd");
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

/* How many peers Billboard's per-peer tables hold now: the element count of its MPI_T per-peer
 * counter bb_bytes_received (two_jobs.c, spawn.c: disconnected peers' numbers are taken again).
 * Needs MPI_T_init_thread first. */
static inline int t_peers_known(void)
{
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle;
    int index = -1, count = -1;
    CHECK(MPI_T_pvar_get_index("bb_bytes_received", MPI_T_PVAR_CLASS_COUNTER, &index) == MPI_SUCCESS,
          "no pvar bb_bytes_received");
    CHECK(MPI_T_pvar_session_create(&session) == MPI_SUCCESS, "MPI_T_pvar_session_create");
    CHECK(MPI_T_pvar_handle_alloc(session, index, NULL, &handle, &count) == MPI_SUCCESS, "MPI_T_pvar_handle_alloc");
    MPI_T_pvar_handle_free(session, &handle);
    MPI_T_pvar_session_free(&session);
    return count;
}

/* Deterministic test pattern. */
static inline unsigned char t_byte(long i, int seed) { return (unsigned char)((i * 131 + seed * 7 + (i >> 8)) & 0xff); }

/* A non-commutative user op on (first, last, ok) triples of ranks or indices:
 * (a..b) . (c..d) = (a..d), ok only if b + 1 == c: associative, not commutative, so any fold
 * out of rank order shows (coll_reduce.c, coll_rscan.c). */
typedef struct {
    int first, last, ok;
} seg_t;
static inline void seg_op(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    (void)dt;
    seg_t *a = invec, *b = inoutvec;
    for (int i = 0; i < *len; i++) {
        b[i].ok = a[i].ok && b[i].ok && a[i].last + 1 == b[i].first;
        b[i].first = a[i].first;
    }
}

#endif
