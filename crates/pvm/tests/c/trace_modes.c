/*
 * The trace modes (PvmTraceOptions for children: PvmTraceCount, PvmTraceTime, PvmTraceFull)
 * and pvm_packf/pvm_unpackf as one event each: this task traces three children in turn, one
 * in each mode. Each child sends three messages of an int, receives one, packs a message with
 * pvm_packf ("%+": its own initsend) and unpacks one with pvm_unpackf, and leaves. Counted or
 * timed, the child sends one summary when it leaves (its event names and counts, and under
 * PvmTraceTime the time in each); in full, each event comes as it happens, and pvm_packf and
 * pvm_unpackf come as one event each with their format, without the pack routines they call.
 * An option other than these three is refused. Printed as trace_show.h decodes it:
 * tests/messages.rs compares it with Debian's PVM.
 */
#include "trace_show.h"

#define EV_EXIT 7
#define EV_INITSEND 17
#define EV_PKINT 36
#define EV_PKSTR 42
#define EV_RECV 45
#define EV_SEND 47
#define EV_UPKINT 63
#define EV_UPKSTR 69
#define EV_PACKF 83
#define EV_UNPACKF 89
#define EV_TIMING 106
#define EV_PROFILING 107

/* Counted and timed: the calls' events. */
static const int summed[] = {EV_EXIT, EV_INITSEND, EV_PKINT, EV_RECV, EV_SEND, EV_UPKINT, EV_PACKF, EV_UNPACKF};
/* In full: the packing ones (those pvm_packf and pvm_unpackf call too). */
static const int packing[] = {EV_INITSEND, EV_PKINT, EV_PKSTR, EV_UPKINT, EV_UPKSTR, EV_PACKF, EV_UNPACKF};

/* The calls' events and the summaries (not pvmd's own: newtask, spntask, endtask). */
static int wanted(int kind)
{
    unsigned i;
    for (i = 0; i < sizeof summed / sizeof summed[0]; i++)
        if (summed[i] == kind)
            return 1;
    for (i = 0; i < sizeof packing / sizeof packing[0]; i++)
        if (packing[i] == kind)
            return 1;
    return kind == EV_TIMING || kind == EV_PROFILING;
}

static void child(void)
{
    int p = pvm_parent(), i, x = 0;
    char s[64] = "";
    for (i = 0; i < 3; i++) {
        pvm_initsend(PvmDataDefault);
        pvm_pkint(&i, 1, 1);
        pvm_send(p, 1);
    }
    pvm_recv(p, 2);
    pvm_upkint(&x, 1, 1);
    pvm_packf("%+%d%s", PvmDataDefault, x + 1, "from packf");
    pvm_send(p, 3);
    pvm_recv(p, 4);
    pvm_unpackf("%d%s", &x, s);
    pvm_exit();
}

/* Traces one child with `options` and the events in `kinds`, and prints what came. */
static void trace_one(const char *argv0, const char *title, int options, const int *kinds, int n)
{
    char mask[36], s[64] = "";
    int i, x = 7;
    printf("%s\n", title);
    mask_with(mask, kinds, n);
    trace_children(mask);
    pvm_setopt(PvmTraceOptions, options);
    if (pvm_spawn((char *)argv0, (char *[]){"child", 0}, PvmTaskDefault, "", 1, &kid_tid) != 1) {
        printf("spawn failed\n");
        return;
    }
    pvm_notify(PvmTaskExit, 98, 1, &kid_tid);
    for (i = 0; i < 3; i++)
        pvm_recv(kid_tid, 1);
    pvm_initsend(PvmDataDefault);
    pvm_pkint(&x, 1, 1);
    pvm_send(kid_tid, 2);
    pvm_recv(kid_tid, 3);
    pvm_upkint(&x, 1, 1);
    pvm_upkstr(s);
    printf("packf sent %d %s\n", x, s);
    pvm_packf("%+%d%s", PvmDataDefault, 9, "to unpackf");
    pvm_send(kid_tid, 4);
    show_all();
}

int main(int argc, char **argv)
{
    int me = pvm_mytid();

    if (me < 0)
        return 2;
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        child();
        return 0;
    }
    parent_tid = me;
    trace_one(argv[0], "counted", PvmTraceCount, summed, sizeof summed / sizeof summed[0]);
    trace_one(argv[0], "timed", PvmTraceTime, summed, sizeof summed / sizeof summed[0]);
    trace_one(argv[0], "in full", PvmTraceFull, packing, sizeof packing / sizeof packing[0]);
    pvm_setopt(PvmAutoErr, 0);
    printf("an unknown trace option: %d\n", pvm_setopt(PvmSelfTraceOptions, 7));
    printf("a known one: %d\n", pvm_setopt(PvmSelfTraceOptions, PvmTraceCount) >= 0);
    pvm_exit();
    return 0;
}
