/*
 * A virtual machine of two hosts: `two_hosts HOST` adds HOST (pvm_addhosts; PvmHostAdd
 * notified), lists both (pvm_config), asks to hear when HOST is deleted (pvm_notify
 * PvmHostDelete), spawns a copy of itself there (PvmTaskHost), exchanges messages of 1 B to
 * 3 MB with it both ways (over TCP: the copy runs in the other host's network namespace),
 * lists the tasks (pvm_tasks), kills a second copy there (its exit notified here), deletes
 * HOST (pvm_delhosts: the first copy ends, notified too) and receives the host's
 * notification. One line per check; tests/hosts.rs compares them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pvm3.h"

/* Which network namespace this process is in (as the link /proc/self/ns/net names it). */
static void netns(char *out, size_t len)
{
    ssize_t n = readlink("/proc/self/ns/net", out, len - 1);
    out[n < 0 ? 0 : n] = 0;
}

static int child(void)
{
    int parent = pvm_parent(), n, i;
    char ns[64];
    for (;;) {
        pvm_recv(parent, 1);
        pvm_upkint(&n, 1, 1);
        if (n < 0)
            break;
        char *b = malloc(n ? n : 1);
        pvm_upkbyte(b, n, 1);
        for (i = 0; i < n; i++)
            b[i]++;
        pvm_initsend(PvmDataDefault);
        pvm_pkint(&n, 1, 1);
        pvm_pkbyte(b, n, 1);
        pvm_send(parent, 2);
        free(b);
    }
    netns(ns, sizeof ns);
    n = pvm_tidtohost(pvm_mytid());
    pvm_initsend(PvmDataDefault);
    pvm_pkint(&n, 1, 1);
    pvm_pkstr(ns);
    pvm_send(parent, 3);
    /* Waits until its host is deleted. */
    pvm_recv(parent, 4);
    return 0;
}

int main(int argc, char **argv)
{
    int me = pvm_mytid(), info = 0, nhost, narch, i, kid, host, sizes[] = {1, 1000, 100000, 3000000};
    struct pvmhostinfo *hi;
    struct pvmtaskinfo *ti;
    char *names[1], *args[] = {"child", 0}, ns[64], kid_ns[64];

    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return child();
    if (argc < 2 || me < 0)
        return 2;
    names[0] = argv[1];
    printf("notify of added hosts %d\n", pvm_notify(PvmHostAdd, 76, -1, 0));
    printf("added %d\n", pvm_addhosts(names, 1, &info));
    host = info;
    {
        /* PvmHostAdd's message: a count, then the new hosts' tids. */
        int count = 0, added = 0;
        pvm_recv(-1, 76);
        pvm_upkint(&count, 1, 1);
        pvm_upkint(&added, 1, 1);
        printf("notified of 1 added host %d, that one %d\n", count == 1, added == host);
    }
    printf("host tid is a host's %d, not the first's %d\n", pvm_tidtohost(host) == host, host != pvm_tidtohost(me));
    printf("adding it again %d\n", pvm_addhosts(names, 1, &info) == 0 && info == PvmDupHost);
    pvm_config(&nhost, &narch, &hi);
    printf("hosts %d, second %s %d\n", nhost, hi[1].hi_name, hi[1].hi_tid == host);
    printf("notify %d\n", pvm_notify(PvmHostDelete, 77, 1, &host));
    printf("spawned %d\n", pvm_spawn(argv[0], args, PvmTaskHost, argv[1], 1, &kid));
    printf("on the second host %d\n", pvm_tidtohost(kid) == host);
    for (i = 0; i < 4; i++) {
        int n = sizes[i], m = 0, j, ok = 1;
        char *b = malloc(n), *r = malloc(n);
        for (j = 0; j < n; j++)
            b[j] = (char)(j * 7 + i);
        pvm_initsend(PvmDataDefault);
        pvm_pkint(&n, 1, 1);
        pvm_pkbyte(b, n, 1);
        pvm_send(kid, 1);
        pvm_recv(kid, 2);
        pvm_upkint(&m, 1, 1);
        pvm_upkbyte(r, m, 1);
        for (j = 0; j < n && m == n; j++)
            ok &= r[j] == (char)(b[j] + 1);
        printf("%d bytes there and back %d\n", n, ok && m == n);
        free(b);
        free(r);
    }
    i = -1;
    pvm_initsend(PvmDataDefault);
    pvm_pkint(&i, 1, 1);
    pvm_send(kid, 1);
    pvm_recv(kid, 3);
    pvm_upkint(&i, 1, 1);
    pvm_upkstr(kid_ns);
    netns(ns, sizeof ns);
    printf("child says its host is the second %d, in another network namespace %d\n", i == host,
           strcmp(ns, kid_ns) != 0);
    pvm_tasks(0, &nhost, &ti);
    for (i = 0; i < nhost; i++)
        if (ti[i].ti_tid == kid)
            printf("pvm_tasks lists the child on the second host %d\n", ti[i].ti_host == host);
    {
        /* A second child there, killed from here: its exit is notified across the hosts. */
        int other, gone = 0;
        pvm_spawn(argv[0], args, PvmTaskHost, argv[1], 1, &other);
        pvm_notify(PvmTaskExit, 78, 1, &other);
        printf("killed %d\n", pvm_kill(other));
        pvm_recv(-1, 78);
        pvm_upkint(&gone, 1, 1);
        printf("notified of the killed child's exit %d\n", gone == other);
    }
    printf("notify of the first child's exit %d\n", pvm_notify(PvmTaskExit, 79, 1, &kid));
    printf("deleted %d\n", pvm_delhosts(names, 1, &info));
    pvm_recv(-1, 79);
    pvm_upkint(&i, 1, 1);
    printf("notified that the first child ended with its host %d\n", i == kid);
    pvm_recv(-1, 77);
    pvm_upkint(&i, 1, 1);
    printf("notified of the host's deletion %d\n", i == host);
    pvm_config(&nhost, &narch, &hi);
    printf("hosts %d\n", nhost);
    printf("the child is gone %d\n", pvm_pstat(kid) == PvmNoTask);
    pvm_exit();
    return 0;
}
