/*
 * Spawns Debian's spmd four times in one call and catches their output: the four are
 * siblings (pvm_siblings) and pass a token around their ring.
 */
#include <stdio.h>
#include "pvm3.h"

int main(void)
{
    int tids[4];
    pvm_catchout(stdout);
    printf("spawned %d\n", pvm_spawn("spmd", 0, 0, "", 4, tids));
    fflush(stdout);
    pvm_exit(); /* waits for the children: all their output is printed */
    return 0;
}
