/*
 * An added host outlives the program that added it, as with pvmd: `added_host_stays add HOST`
 * adds HOST and leaves PVM; `added_host_stays use HOST`, run after the agent's linger time,
 * finds both hosts (pvm_config), asks HOST's clock (pvm_hostsync; and of a host not in the
 * machine: PvmNoHost), spawns a copy of itself there, which asks the first host's clock too,
 * and deletes HOST. One line per check; tests/hosts.rs compares them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include "pvm3.h"

/* Whether host's clock (pvm_hostsync) reads as ours, within a second: the offset that
 * pvm_hostsync gives back (ours minus the host's, tv_usec in [0, 1e6)) and the clock itself. */
static int clock_near(int host)
{
    struct timeval clk, delta, now;
    int cc = pvm_hostsync(host, &clk, &delta);
    gettimeofday(&now, 0);
    return cc == 0 && labs((long)(clk.tv_sec - now.tv_sec)) <= 1 && (delta.tv_sec == 0 || delta.tv_sec == -1) &&
           delta.tv_usec >= 0 && delta.tv_usec < 1000000;
}

int main(int argc, char **argv)
{
    int me = pvm_mytid(), info = 0, nhost, narch, i, host = 0, kid = 0, ok = 0;
    struct pvmhostinfo *hi;
    struct timeval clk, delta;
    char *names[1], *args[] = {"child", 0};

    if (me < 0)
        return 2;
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        int first = pvm_tidtohost(pvm_parent());
        ok = clock_near(first);
        pvm_initsend(PvmDataDefault);
        pvm_pkint(&ok, 1, 1);
        pvm_send(pvm_parent(), 1);
        pvm_exit();
        return 0;
    }
    if (argc < 3)
        return 2;
    names[0] = argv[2];
    if (strcmp(argv[1], "add") == 0) {
        printf("added %d\n", pvm_addhosts(names, 1, &info) == 1 && info > 0);
        pvm_exit();
        return 0;
    }
    pvm_config(&nhost, &narch, &hi);
    for (i = 0; i < nhost; i++)
        if (strcmp(hi[i].hi_name, argv[2]) == 0)
            host = hi[i].hi_tid;
    printf("hosts %d, the added one among them %d\n", nhost, host != 0);
    printf("its clock near ours %d\n", clock_near(host));
    printf("a host not in the machine %d\n", pvm_hostsync(0x7c0000, &clk, &delta) == PvmNoHost);
    printf("spawned there %d\n", pvm_spawn(argv[0], args, PvmTaskHost, argv[2], 1, &kid) == 1 &&
                                     pvm_tidtohost(kid) == host);
    if (kid > 0) {
        pvm_recv(kid, 1);
        pvm_upkint(&ok, 1, 1);
    }
    printf("the child finds the first host's clock near its own %d\n", ok);
    printf("deleted %d\n", pvm_delhosts(names, 1, &info) == 1 && info == 0);
    pvm_exit();
    return 0;
}
