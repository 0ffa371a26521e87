/*
 * pvm_catchout: the output of children spawned after it (stdout and stderr, in the order
 * they wrote it) is printed on the parent's stream, each line as "[t40002] text" between
 * "[t40002] BEGIN" (before pvm_spawn returns) and "[t40002] EOF"; with PvmShowTids 0 only
 * the lines, as they are. With the argument "child" it is such a child. tests/messages.rs
 * compares each task's lines, in order, with Debian's PVM 3.4.6 on the same program.
 */
#include <stdio.h>
#include <string.h>
#include "pvm3.h"

static int child(const char *how)
{
    pvm_mytid();
    printf("%sout\n", how);
    fflush(stdout);
    fprintf(stderr, "%serr\n", how);
    printf("%slast, no newline", how);
    fflush(stdout);
    pvm_exit();
    return 0;
}

/* Spawns `n` children told `how` to print, and waits for them to end. */
static void spawn_and_wait(char *self, char *how, int n)
{
    int tids[4], got, i, x;
    got = pvm_spawn(self, (char *[]){"child", how, 0}, PvmTaskDefault, "", n, tids);
    printf("spawned %d\n", got);
    fflush(stdout);
    pvm_notify(PvmTaskExit, 66, got, tids);
    for (i = 0; i < got; i++) {
        pvm_recv(-1, 66);
        pvm_upkint(&x, 1, 1);
    }
    printf("%d ended\n", got);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "child") == 0)
        return child(argv[2]);
    pvm_mytid();
    printf("catchout %d, PvmShowTids %d\n", pvm_catchout(stdout), pvm_getopt(PvmShowTids));
    fflush(stdout);
    spawn_and_wait(argv[0], "tagged ", 2);
    printf("PvmShowTids was %d\n", pvm_setopt(PvmShowTids, 0));
    fflush(stdout);
    spawn_and_wait(argv[0], "plain: ", 1);
    pvm_catchout(0);
    spawn_and_wait(argv[0], "uncaught ", 1);
    pvm_exit();
    printf("after exit\n");
    return 0;
}
