/*
 * Task calls on one host, with their error returns: a bad tid or buffer id is an error code,
 * never a crash. Prints one line per check; tests/examples.rs compares them.
 * Needs PVM_PATH to hold /bin (it spawns sleep and echo as tasks that never enroll).
 */
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include "pvm3.h"

/* One check per line, evaluated in order. */
#define SHOW(label, expr)                 \
    do {                                  \
        int v_ = (expr);                  \
        printf("%s: %d\n", label, v_);    \
    } while (0)

int main(void)
{
    int me = pvm_mytid(), tids[4], n, b, len, tag, src, x = 0;
    struct timeval tv = {0, 20000};
    struct pvmhostinfo *hosts;
    struct pvmtaskinfo *tasks;
    int nhost, narch;

    pvm_setopt(PvmAutoErr, 0);
    SHOW("enrolled", me > 0);
    SHOW("parent", pvm_parent());
    pvm_initsend(PvmDataDefault);
    SHOW("send to a negative tid", pvm_send(-5, 1));
    SHOW("send to no task", pvm_send(me + 4000, 1));
    SHOW("negative tag", pvm_send(me, -3));
    SHOW("free of no buffer", pvm_freebuf(12345));
    SHOW("setrbuf of no buffer", pvm_setrbuf(777));
    SHOW("bufinfo of a negative id", pvm_bufinfo(-1, 0, 0, 0));
    SHOW("bad encoding", pvm_initsend(42));
    SHOW("kill of no task", pvm_kill(me + 4000));
    SHOW("recv with a bad tid", pvm_recv(-7, 1));
    SHOW("nrecv of nothing", pvm_nrecv(-1, 5));
    SHOW("trecv timed out", pvm_trecv(-1, 5, &tv));
    SHOW("probe of nothing", pvm_probe(-1, 5));

    /* To itself, by every route. */
    pvm_initsend(PvmDataRaw);
    x = 41;
    pvm_pkint(&x, 1, 1);
    pvm_send(me, 9);
    b = pvm_probe(-1, 9);
    pvm_bufinfo(b, &len, &tag, &src);
    printf("probe sees %d bytes tag %d from self %d\n", len, tag, src == me);
    b = pvm_recv(me, 9);
    pvm_upkint(&x, 1, 1);
    printf("received %d, buffer is the receive buffer %d\n", x, b == pvm_getrbuf());
    {
        double d[3] = {1.5, 2.5, 3.5}, r[3] = {0};
        int rtid, rtag, rlen, cc;
        pvm_psend(me, 11, d, 3, PVM_DOUBLE);
        cc = pvm_precv(-1, 11, r, 3, PVM_DOUBLE, &rtid, &rtag, &rlen);
        printf("precv %d: %g %g %g len %d tag %d self %d\n", cc, r[0], r[1], r[2], rlen, rtag, rtid == me);
    }
    pvm_initsend(PvmDataDefault);
    pvm_mcast(&me, 1, 12);
    SHOW("mcast skips the sender", pvm_nrecv(-1, 12));

    pvm_config(&nhost, &narch, &hosts);
    printf("config: %d host, arch %s, host tid %x\n", nhost, hosts[0].hi_arch, hosts[0].hi_tid);

    /* Spawning: a missing program, a missing host, then sleep and echo. */
    n = pvm_spawn("no-such-program", 0, 0, "", 1, tids);
    printf("spawn of nothing: %d (%d)\n", n, tids[0]);
    n = pvm_spawn("sleep", 0, PvmTaskHost, "no-such-host", 1, tids);
    printf("spawn on no host: %d (%d)\n", n, tids[0]);
    {
        char *args[] = {"30", 0};
        SHOW("spawn sleep", pvm_spawn("sleep", args, 0, "", 1, tids));
    }
    pvm_tasks(0, &n, &tasks);
    printf("tasks: %d, the sleeper's parent is me %d\n", n,
           tasks[0].ti_tid == tids[0] ? tasks[0].ti_ptid == me : tasks[1].ti_ptid == me);
    SHOW("notify", pvm_notify(PvmTaskExit, 77, 1, tids));
    SHOW("kill", pvm_kill(tids[0]));
    b = pvm_recv(-1, 77);
    pvm_upkint(&x, 1, 1);
    SHOW("notified that the sleeper ended", x == tids[0]);
    SHOW("pstat of it now", pvm_pstat(tids[0]));
    pvm_notify(PvmTaskExit, 78, 1, tids);
    SHOW("notify on a task already gone comes at once", pvm_recv(-1, 78) > 0);

    /* The message box. */
    {
        struct pvmmboxinfo *classes;
        int nclasses, idx;
        char text[32];
        pvm_initsend(PvmDataDefault);
        pvm_pkstr("stored");
        idx = pvm_putinfo("svc", pvm_getsbuf(), PvmMboxMultiInstance);
        SHOW("putinfo index", idx);
        SHOW("second putinfo index", pvm_putinfo("svc", pvm_getsbuf(), PvmMboxMultiInstance));
        SHOW("a locked class refuses another entry", (pvm_putinfo("one", pvm_getsbuf(), 0), pvm_putinfo("one", pvm_getsbuf(), 0)));
        b = pvm_recvinfo("svc", 0, PvmMboxDefault);
        pvm_setrbuf(b);
        pvm_upkstr(text);
        printf("recvinfo: %s\n", text);
        SHOW("recvinfo of nothing", pvm_recvinfo("nothing", 0, 0));
        pvm_getmboxinfo("s*", &nclasses, &classes);
        printf("getmboxinfo: %d class %s with %d entries owned by me %d\n", nclasses, classes[0].mi_name,
               classes[0].mi_nentries, classes[0].mi_owners[1] == me);
        SHOW("delinfo", pvm_delinfo("svc", 1, 0));
        SHOW("delinfo again", pvm_delinfo("svc", 1, 0));
    }

    pvm_catchout(stdout);
    {
        char *args[] = {"caught", "line", 0};
        SHOW("spawn echo", pvm_spawn("echo", args, 0, "", 1, tids));
    }
    fflush(stdout);
    pvm_exit();
    printf("after exit\n");
    return 0;
}
