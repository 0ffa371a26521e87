/*
 * A task killed with SIGKILL is notified to those who asked; pvm_halt ends every other task
 * and the agent. Run with PVM_PATH holding /usr/bin (it spawns Debian's slave1, which waits
 * for a message that never comes).
 */
#include <signal.h>
#include <stdio.h>
#include "pvm3.h"

int main(void)
{
    int tids[2], n, i, x = 0, pid = 0;
    struct pvmtaskinfo *tasks;

    pvm_mytid();
    printf("spawned %d\n", pvm_spawn("slave1", 0, 0, "", 2, tids));
    pvm_notify(PvmTaskExit, 5, 2, tids);
    /* Wait until the first slave has enrolled (pvm_tasks shows its pid either way). */
    pvm_tasks(tids[0], &n, &tasks);
    for (i = 0; i < n; i++)
        if (tasks[i].ti_tid == tids[0])
            pid = tasks[i].ti_pid;
    printf("kill -9 %d\n", pid > 0 ? kill(pid, SIGKILL) : -1);
    pvm_recv(-1, 5);
    pvm_upkint(&x, 1, 1);
    printf("notified of the killed slave: %d\n", x == tids[0]);
    fflush(stdout);
    printf("halt %d\n", pvm_halt());
    return 0;
}
