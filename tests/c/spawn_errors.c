/* Spawn errors, with MPI_ERRORS_RETURN: a command that does not exist fails with
 * MPI_ERR_SPAWN in every parent, the message names the command, the error codes say so, no
 * child runs and nothing hangs; so do a `wdir` that is not a directory and a `host` that is not
 * the job's. The job then goes on and a good spawn still works.
 *   spawn_errors die    spawns a child that exits with code 3 after MPI_Init while the parent
 *                       sleeps: the launcher must end the job naming the child
 *                       (tests/tests/dynamic.rs). */
#include "common.h"

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
