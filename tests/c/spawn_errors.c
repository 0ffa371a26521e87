/* Spawn errors, with MPI_ERRORS_RETURN: a command that does not exist fails with
 * MPI_ERR_SPAWN in every parent, the message names the command, the error codes say so, no
 * child runs and nothing hangs; so do a `wdir` that is not a directory and a `host` that is not
 * the job's. The job then goes on and a good spawn still works.
 *   spawn_errors die    spawns a child that exits with code 3 after MPI_Init while the parent
 *                       sleeps: the launcher must end the job naming the child
 *                       (tests/tests/dynamic.rs).
 *   spawn_errors early [HOST]
 *                       spawns, beside a child that calls MPI_Init, one that ends before
 *                       it: exits 0 at once, exits 3, cannot be executed (a script whose
 *                       interpreter is missing). Each spawn fails with MPI_ERR_SPAWN within
 *                       EARLY_LIMIT seconds (the launcher sees the child end; it took
 *                       BB_SPAWN_WAIT_MS, 120 s, before), the error codes name the instance
 *                       that ended, the job goes on and a good spawn still works. With HOST,
 *                       the children run there (tests/tests/dynamic.rs).
 *   spawn_errors now    a command that does not exist and a `wdir` that is not a directory
 *                       each fail within EARLY_LIMIT seconds, then a good spawn works: also
 *                       under MPICH's Hydra, which starts what it is asked and tells nobody
 *                       when exec fails (tests/tests/mpich_binaries.rs). */
#include "common.h"
#include <sys/stat.h>
#include <time.h>

/* Seconds a spawn may take to fail: "within a second", with room for a loaded machine. */
#define EARLY_LIMIT 10.0

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Command 0: argv0 "wait-child" (reaches MPI_Init, then is stopped); command 1: `bad` with
 * `bad_arg`, which ends before MPI_Init. */
static void expect_early_end(const char *argv0, const char *bad, char *bad_arg, const char *host,
                             const char *named)
{
    char *cmds[2] = {(char *)argv0, (char *)bad};
    char *wait_args[] = {"wait-child", NULL};
    char *bad_args[] = {bad_arg, NULL};
    char **argvs[2] = {wait_args, bad_arg ? bad_args : MPI_ARGV_NULL};
    int maxprocs[2] = {1, 1};
    MPI_Info infos[2] = {MPI_INFO_NULL, MPI_INFO_NULL};
    if (host)
        for (int i = 0; i < 2; i++) {
            MPI_CHK(MPI_Info_create(&infos[i]));
            MPI_CHK(MPI_Info_set(infos[i], "host", host));
        }
    int errcodes[2] = {-1, -1};
    MPI_Comm children = MPI_COMM_WORLD;
    double t0 = now_s();
    int rc = MPI_Comm_spawn_multiple(2, cmds, argvs, maxprocs, infos, 0, MPI_COMM_WORLD, &children, errcodes);
    double took = now_s() - t0;
    int class = 0;
    MPI_Error_class(rc, &class);
    CHECK_EQ(class, MPI_ERR_SPAWN, "error class of a spawn whose child ends before MPI_Init");
    CHECK(children == MPI_COMM_NULL, "no intercommunicator after a failed spawn");
    CHECK(took < EARLY_LIMIT, "the spawn with %s failed after %.1f s, not at once", named, took);
    CHECK(strstr(t_errstr(rc), named) != NULL, "the error names %s: %s", named, t_errstr(rc));
    if (t_rank == 0) {
        CHECK_EQ(errcodes[1], MPI_ERR_SPAWN, "errcode of the instance that ended");
        CHECK_EQ(errcodes[0], MPI_ERR_PROC_ABORTED, "errcode of the instance stopped because of it");
    }
    for (int i = 0; i < 2; i++)
        if (infos[i] != MPI_INFO_NULL)
            MPI_CHK(MPI_Info_free(&infos[i]));
    if (t_rank == 0)
        printf("the spawn (%s) failed in %.2f s\n", named, took);
}

static int early(const char *argv0, const char *host)
{
    MPI_CHK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    expect_early_end(argv0, argv0, "exit0", host, "exited with code 0 before MPI_Init");
    expect_early_end(argv0, argv0, "exit3", host, "exited with code 3 before MPI_Init");
    /* Executable, but exec fails: the interpreter it names does not exist. */
    char script[128];
    snprintf(script, sizeof script, "/tmp/bb-spawn-noexec-%d-%d", (int)getpid(), t_rank);
    FILE *f = fopen(script, "w");
    CHECK(f != NULL, "cannot write %s", script);
    fputs("#!/no/such/interpreter-bb\n", f);
    fclose(f);
    chmod(script, 0755);
    expect_early_end(argv0, script, NULL, host, "exited with code 127 before MPI_Init");
    unlink(script);
    /* The job goes on: a good spawn still works. */
    MPI_Info info = MPI_INFO_NULL;
    if (host) {
        MPI_CHK(MPI_Info_create(&info));
        MPI_CHK(MPI_Info_set(info, "host", host));
    }
    char *args[] = {"child", NULL};
    MPI_Comm children;
    MPI_CHK(MPI_Comm_spawn(argv0, args, 1, info, 0, MPI_COMM_WORLD, &children, MPI_ERRCODES_IGNORE));
    MPI_CHK(MPI_Comm_disconnect(&children));
    if (info != MPI_INFO_NULL)
        MPI_CHK(MPI_Info_free(&info));
    return t_finish();
}

static void expect_spawn_error(const char *cmd, MPI_Info info, const char *named)
{
    MPI_Comm children = MPI_COMM_WORLD;
    int errcodes[2] = {-1, -1};
    int rc = MPI_Comm_spawn(cmd, MPI_ARGV_NULL, 2, info, 0, MPI_COMM_WORLD, &children, errcodes);
    CHECK(rc != MPI_SUCCESS, "spawning %s succeeded", cmd);
    int class = 0;
    MPI_Error_class(rc, &class);
    CHECK_EQ(class, MPI_ERR_SPAWN, "error class");
    CHECK(children == MPI_COMM_NULL, "no intercommunicator after a failed spawn");
    const char *msg = t_errstr(rc);
    CHECK(strstr(msg, named) != NULL, "the error message names %s: %s", named, msg);
    if (t_rank == 0)
        for (int i = 0; i < 2; i++)
            CHECK(errcodes[i] != MPI_SUCCESS, "errcode %d of a failed spawn: %d", i, errcodes[i]);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "die-child") == 0) {
        MPI_Init(&argc, &argv);
        exit(3);
    }
    if (argc > 1 && strcmp(argv[1], "exit0") == 0)
        return 0;
    if (argc > 1 && strcmp(argv[1], "exit3") == 0)
        return 3;
    if (argc > 1 && strcmp(argv[1], "wait-child") == 0) {
        /* Its sibling ends before MPI_Init, so this MPI_Init never completes: the launcher
         * stops it. */
        MPI_Init(&argc, &argv);
        sleep(60);
        return 4;
    }
    if (argc > 1 && strcmp(argv[1], "early") == 0) {
        t_init(&argc, &argv, "spawn_errors-early", 1);
        return early(argv[0], argc > 2 ? argv[2] : NULL);
    }
    if (argc > 1 && strcmp(argv[1], "die") == 0) {
        t_init(&argc, &argv, "spawn_errors-die", 1);
        char *args[] = {"die-child", NULL};
        MPI_Comm children;
        MPI_CHK(MPI_Comm_spawn(argv[0], args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &children, MPI_ERRCODES_IGNORE));
        /* Not a receive from the child: its death would fail that first, and this process
         * would abort. The launcher alone must notice. */
        sleep(40);
        FAIL("the job outlived its dead child");
    }
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        MPI_Init(&argc, &argv);
        MPI_Comm parent;
        MPI_Comm_get_parent(&parent);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "now") == 0) {
        t_init(&argc, &argv, "spawn_errors-now", 1);
        double t0 = now_s();
        expect_spawn_error("./no-such-program-bb", MPI_INFO_NULL, "no-such-program-bb");
        double took = now_s() - t0;
        CHECK(took < EARLY_LIMIT, "the spawn of a program that does not exist failed after %.1f s, not at once", took);
        MPI_Info info;
        MPI_CHK(MPI_Info_create(&info));
        MPI_CHK(MPI_Info_set(info, "wdir", "/no/such/dir-bb"));
        t0 = now_s();
        expect_spawn_error(argv[0], info, "/no/such/dir-bb");
        took = now_s() - t0;
        CHECK(took < EARLY_LIMIT, "the spawn into a working directory that is not there failed after %.1f s", took);
        MPI_CHK(MPI_Info_free(&info));
        char *args[] = {"child", NULL};
        MPI_Comm children;
        MPI_CHK(MPI_Comm_spawn(argv[0], args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &children, MPI_ERRCODES_IGNORE));
        MPI_CHK(MPI_Comm_disconnect(&children));
        return t_finish();
    }
    t_init(&argc, &argv, "spawn_errors", 1);
    expect_spawn_error("./no-such-program-bb", MPI_INFO_NULL, "no-such-program-bb");
    MPI_Info info;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "wdir", "/no/such/dir-bb"));
    expect_spawn_error(argv[0], info, "/no/such/dir-bb");
    MPI_CHK(MPI_Info_free(&info));
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "host", "no-such-host-bb"));
    expect_spawn_error(argv[0], info, "no-such-host-bb");
    MPI_CHK(MPI_Info_free(&info));
    char *args[] = {"child", NULL};
    MPI_Comm children;
    MPI_CHK(MPI_Comm_spawn(argv[0], args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &children, MPI_ERRCODES_IGNORE));
    MPI_CHK(MPI_Comm_disconnect(&children));
    return t_finish();
}
