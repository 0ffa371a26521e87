/* MPI_Comm_spawn_multiple of two commands (this program with two different arguments), the
 * first named without its directory and found through the `path` info key, the second with
 * the `wdir` info key: the children form one MPI_COMM_WORLD, MPI_APPNUM tells which command
 * started each, the second runs in /tmp, and every child reports back. */
#include "common.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strncmp(argv[1], "cmd", 3) == 0) {
        t_init(&argc, &argv, "spawn_multiple-child", 3);
        MPI_Comm parent;
        MPI_CHK(MPI_Comm_get_parent(&parent));
        CHECK(parent != MPI_COMM_NULL, "a spawned process has a parent");
        int *appnum = NULL, flag = 0;
        MPI_CHK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag));
        CHECK(flag, "MPI_APPNUM is set");
        int want = strcmp(argv[1], "cmdA") == 0 ? 0 : 1;
        CHECK_EQ(*appnum, want, "MPI_APPNUM");
        CHECK_EQ(t_size, 3, "children's world size");
        char cwd[4096] = "";
        if (!getcwd(cwd, sizeof cwd))
            FAIL("getcwd failed");
        int in_tmp = strcmp(cwd, "/tmp") == 0;
        CHECK(in_tmp == want, "wdir: command %d runs in %s", want, cwd);
        int report[2] = {t_rank, *appnum};
        MPI_CHK(MPI_Send(report, 2, MPI_INT, 0, 1, parent));
        MPI_CHK(MPI_Comm_disconnect(&parent));
        MPI_Finalize();
        return 0;
    }
    t_init(&argc, &argv, "spawn_multiple", 1);
    char prog[4096];
    /* The second command runs in /tmp: its name must not depend on the directory. */
    if (!realpath(argv[0], prog))
        FAIL("realpath of %s failed", argv[0]);
    char dir[4096], *slash = strrchr(prog, '/');
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - prog), prog);
    char *cmds[2] = {slash + 1, prog};
    char *args_a[] = {"cmdA", NULL}, *args_b[] = {"cmdB", NULL};
    char **argvs[2] = {args_a, args_b};
    int np[2] = {1, 2};
    MPI_Info infos[2];
    MPI_CHK(MPI_Info_create(&infos[0]));
    MPI_CHK(MPI_Info_set(infos[0], "path", dir));
    MPI_CHK(MPI_Info_create(&infos[1]));
    MPI_CHK(MPI_Info_set(infos[1], "wdir", "/tmp"));
    MPI_Comm children;
    int errcodes[3] = {-1, -1, -1};
    MPI_CHK(MPI_Comm_spawn_multiple(2, cmds, argvs, np, infos, 0, MPI_COMM_WORLD, &children, errcodes));
    MPI_CHK(MPI_Info_free(&infos[0]));
    MPI_CHK(MPI_Info_free(&infos[1]));
    for (int i = 0; i < 3; i++)
        CHECK_EQ(errcodes[i], MPI_SUCCESS, "errcode");
    if (t_rank == 0) {
        int seen[3] = {0, 0, 0};
        for (int i = 0; i < 3; i++) {
            int report[2];
            MPI_Status st;
            MPI_CHK(MPI_Recv(report, 2, MPI_INT, MPI_ANY_SOURCE, 1, children, &st));
            CHECK_EQ(report[0], st.MPI_SOURCE, "reporting child's rank");
            CHECK_EQ(report[1], report[0] == 0 ? 0 : 1, "appnum of child");
            seen[report[0]]++;
        }
        CHECK(seen[0] == 1 && seen[1] == 1 && seen[2] == 1, "each child reported once");
    }
    MPI_CHK(MPI_Comm_disconnect(&children));
    return t_finish();
}
