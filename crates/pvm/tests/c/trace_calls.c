/*
 * Tracing of pvm_psend, pvm_precv, pvm_mcast and pvm_initsend (PvmTraceTid, PvmTraceCode,
 * pvm_settmask(PvmTaskChild)): this task traces a child that sends it two arrays with
 * pvm_psend, receives one with pvm_precv, and multicasts to it twice. Each trace message
 * (tag 99) is printed as trace_show.h decodes it (an int, a long: the array's address, a
 * list of ints: the multicast's tids): tests/messages.rs compares it with Debian's PVM.
 */
#include "trace_show.h"

#define EV_INITSEND 17
#define EV_MCAST 23
#define EV_PRECV 84
#define EV_PSEND 85

static int wanted(int kind)
{
    return kind == EV_INITSEND || kind == EV_MCAST || kind == EV_PRECV || kind == EV_PSEND;
}

int main(int argc, char **argv)
{
    int me = pvm_mytid(), x[4] = {1, 2, 3, 4}, rt = 0, rg = 0, rl = 0, i;
    const int kinds[] = {EV_INITSEND, EV_MCAST, EV_PRECV, EV_PSEND};
    char mask[36];

    if (me < 0)
        return 2;
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        int p = pvm_parent();
        pvm_psend(p, 5, x, 3, PVM_INT);
        pvm_precv(p, 6, x, 4, PVM_INT, &rt, &rg, &rl);
        pvm_psend(p, 5, x, 2, PVM_INT);
        for (i = 0; i < 2; i++) {
            pvm_initsend(PvmDataDefault);
            pvm_pkint(x, 2, 1);
            pvm_mcast(&p, 1, 7);
        }
        pvm_exit();
        return 0;
    }
    parent_tid = me;
    mask_with(mask, kinds, 4);
    trace_children(mask);
    printf("spawned %d\n", pvm_spawn(argv[0], (char *[]){"child", 0}, PvmTaskDefault, "", 1, &kid_tid));
    pvm_notify(PvmTaskExit, 98, 1, &kid_tid);
    printf("precv %d\n", pvm_precv(kid_tid, 5, x, 4, PVM_INT, &rt, &rg, &rl));
    pvm_psend(kid_tid, 6, x, 4, PVM_INT);
    printf("precv %d\n", pvm_precv(kid_tid, 5, x, 4, PVM_INT, &rt, &rg, &rl));
    for (i = 0; i < 2; i++) {
        pvm_recv(kid_tid, 7);
        pvm_upkint(x, 2, 1);
        printf("mcast got %d %d\n", x[0], x[1]);
    }
    show_all();
    pvm_exit();
    return 0;
}
