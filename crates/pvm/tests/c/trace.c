/*
 * Tracing (PvmTraceTid, PvmTraceCode, pvm_settmask(PvmTaskChild)): this task traces the
 * pvm_send, pvm_recv, pvm_nrecv and pvm_trecv calls of a child it spawns, which receives three
 * messages (trecv, nrecv, recv) and answers twice. Each trace message (tag 99) is printed as
 * trace_show.h decodes it: tests/messages.rs compares it with Debian's PVM. Only the
 * library's events are printed: Debian's pvmd also sends the tracer its own (a data-id
 * preamble, newtask, spntask, endtask), which ours does not yet.
 */
#include <sys/time.h>
#include "trace_show.h"

#define EV_NRECV 28
#define EV_RECV 45
#define EV_SEND 47
#define EV_TRECV 57

static int wanted(int kind)
{
    return kind == EV_SEND || kind == EV_RECV || kind == EV_NRECV || kind == EV_TRECV;
}

int main(int argc, char **argv)
{
    int me = pvm_mytid(), n = 7, i;
    const int kinds[] = {EV_SEND, EV_RECV, EV_NRECV, EV_TRECV};
    char mask[36];

    if (me < 0)
        return 2;
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        int p = pvm_parent(), got;
        struct timeval ten = {10, 0};
        /* Tag 3 comes after tag 1: once it is here, so is tag 1, and nrecv finds it. */
        pvm_trecv(p, 3, &ten);
        got = pvm_nrecv(p, 1);
        if (got <= 0)
            return 3;
        pvm_upkint(&n, 1, 1);
        pvm_recv(p, 4);
        for (i = 0; i < 2; i++) {
            pvm_initsend(PvmDataDefault);
            pvm_pkint(&n, 1, 1);
            pvm_pkint(&i, 1, 1);
            pvm_send(p, 2);
        }
        pvm_exit();
        return 0;
    }
    parent_tid = me;
    mask_with(mask, kinds, 4);
    trace_children(mask);
    printf("spawned %d\n", pvm_spawn(argv[0], (char *[]){"child", 0}, PvmTaskDefault, "", 1, &kid_tid));
    pvm_notify(PvmTaskExit, 98, 1, &kid_tid);
    pvm_initsend(PvmDataDefault);
    pvm_pkint(&n, 1, 1);
    pvm_send(kid_tid, 1);
    pvm_send(kid_tid, 3);
    pvm_send(kid_tid, 4);
    for (i = 0; i < 2; i++) {
        int m = 0, j = -1;
        pvm_recv(kid_tid, 2);
        pvm_upkint(&m, 1, 1);
        pvm_upkint(&j, 1, 1);
        printf("answer %d %d\n", m, j);
    }
    show_all();
    pvm_exit();
    return 0;
}
