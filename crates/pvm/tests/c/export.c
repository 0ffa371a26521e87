/*
 * pvm_export: a variable named in PVM_EXPORT reaches the tasks this one spawns (here
 * printenv, whose output is caught), and pvm_unexport stops it. The variable is set after
 * enrolling: spawned tasks also inherit the environment of the agent, which this task's
 * first call started (as pvmd's children inherit pvmd's).
 */
#include <stdio.h>
#include <stdlib.h>
#include "pvm3.h"

int main(void)
{
    int tid;
    char *args[] = {"BB_EXPORT_TEST", 0};
    pvm_catchout(stdout);
    setenv("BB_EXPORT_TEST", "exported value", 1);
    pvm_export("BB_EXPORT_TEST");
    pvm_spawn("printenv", args, 0, "", 1, &tid);
    pvm_unexport("BB_EXPORT_TEST");
    pvm_spawn("printenv", args, 0, "", 1, &tid);
    pvm_exit();
    printf("exit\n");
    return 0;
}
