/*
 * Two tasks send each other messages of growing size at the same moment, then receive:
 * neither may wait for the other for good (the rings or sockets fill both ways). Contents
 * are checked. The program spawns a copy of itself (argv[0] must be a path).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pvm3.h"

int main(int argc, char **argv)
{
    int me = pvm_mytid(), other = pvm_parent(), sizes[] = {1, 1000, 100000, 1 << 20, 6 << 20}, bad = 0;
    char *out, *in;
    (void)argc;
    if (other == PvmNoParent && pvm_spawn(argv[0], 0, 0, "", 1, &other) != 1) {
        printf("cannot spawn %s\n", argv[0]);
        return 1;
    }
    out = malloc(6 << 20);
    in = malloc(6 << 20);
    for (unsigned k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int n = sizes[k];
        for (int i = 0; i < n; i++)
            out[i] = (char)(i * 7 + me);
        pvm_initsend(k % 2 ? PvmDataRaw : PvmDataInPlace);
        pvm_pkbyte(out, n, 1);
        if (pvm_send(other, 100 + k) < 0)
            bad++;
        pvm_recv(other, 100 + k);
        if (pvm_upkbyte(in, n, 1) < 0)
            bad++;
        for (int i = 0; i < n; i++)
            if (in[i] != (char)(i * 7 + other)) {
                bad++;
                break;
            }
    }
    if (pvm_parent() == PvmNoParent)
        printf("crossing sends: %d bad\n", bad);
    pvm_exit();
    return bad != 0;
}
