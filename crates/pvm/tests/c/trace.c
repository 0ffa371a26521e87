/*
 * Tracing (PvmTraceTid, PvmTraceCode, pvm_settmask(PvmTaskChild)): this task traces the
 * pvm_send, pvm_recv, pvm_nrecv and pvm_trecv calls of a child it spawns, which receives three
 * messages (trecv, nrecv, recv) and answers twice. Each trace message (tag 99) is decoded as PVM's tracers read it (pvmtev.h): the
 * first event of each kind and end comes with its descriptor (data ids and types), later ones
 * as bare records. Printed without times, with tids by role: tests/messages.rs compares it
 * with Debian's PVM. Only the library's events are printed: Debian's pvmd also sends the
 * tracer its own (a data-id preamble, newtask, spntask, endtask), which ours does not yet.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include "pvm3.h"

int pvm_settmask(int who, char *mask); /* in Debian's pvmtev.h */

/* From Debian's pvmtev.h (our header does not carry it). */
#define MARK_EVENT_DESC -5
#define MARK_EVENT_DESC_END -6
#define MARK_EVENT_RECORD -7
#define MARK_EVENT_RECORD_END -8
#define EVENT_ENTRY 0x4000
#define EVENT_EXIT 0x8000
#define DATA_INT 6
#define DATA_STRING 12
#define DID_TS 106
#define DID_TU 107
#define EV_NRECV 28
#define EV_RECV 45
#define EV_SEND 47
#define EV_TRECV 57

static int parent_tid, kid_tid;

/* A value by its role: a tid by whose it is, a time as "t". */
static void value(int did, int v)
{
    if (did == DID_TS || did == DID_TU)
        printf("t");
    else if (v == parent_tid)
        printf("parent");
    else if (v == kid_tid)
        printf("kid");
    else if (v > 0 && did == 47)
        printf("buf"); /* TEV_DID_MB: a buffer id */
    else
        printf("%d", v);
}

/* Data ids of each event (kind | entry/exit) as its descriptor said, for its records. */
static int dids[0x10000][8], ndids[0x10000];

static void show(void)
{
    int marker, eid, did, type, v, i;
    char name[64];
    pvm_upkint(&marker, 1, 1);
    pvm_upkint(&eid, 1, 1);
    i = eid & ~(EVENT_ENTRY | EVENT_EXIT);
    if ((marker != MARK_EVENT_DESC && marker != MARK_EVENT_RECORD) ||
        (i != EV_SEND && i != EV_RECV && i != EV_NRECV && i != EV_TRECV))
        return;
    printf("%s %d %s", marker == MARK_EVENT_DESC ? "desc" : marker == MARK_EVENT_RECORD ? "record" : "?",
           eid & ~(EVENT_ENTRY | EVENT_EXIT), eid & EVENT_ENTRY ? "entry" : eid & EVENT_EXIT ? "exit" : "?");
    if (marker == MARK_EVENT_DESC) {
        pvm_upkstr(name);
        printf(" %s:", name);
        ndids[eid] = 0;
        for (;;) {
            pvm_upkint(&did, 1, 1);
            if (did == MARK_EVENT_DESC_END)
                break;
            pvm_upkint(&type, 1, 1);
            printf(" %d/%d=", did, type);
            if (type == DATA_INT) {
                pvm_upkint(&v, 1, 1);
                value(did, v);
            } else if (type == DATA_STRING) {
                pvm_upkstr(name);
                printf("\"%s\"", name);
            } else {
                printf("?");
            }
            if (ndids[eid] < 8)
                dids[eid][ndids[eid]++] = did;
        }
    } else {
        printf(":");
        for (i = 0; i < ndids[eid]; i++) {
            pvm_upkint(&v, 1, 1);
            printf(" %d=", dids[eid][i]);
            value(dids[eid][i], v);
        }
        pvm_upkint(&v, 1, 1);
        if (v != MARK_EVENT_RECORD_END)
            printf(" (no end marker: %d)", v);
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    int me = pvm_mytid(), n = 7, i;
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
    memset(mask, '@', 35);
    mask[35] = 0;
    mask[EV_SEND / 4] |= 1 << (EV_SEND & 3);
    mask[EV_RECV / 4] |= 1 << (EV_RECV & 3);
    mask[EV_NRECV / 4] |= 1 << (EV_NRECV & 3);
    mask[EV_TRECV / 4] |= 1 << (EV_TRECV & 3);
    printf("settmask %d\n", pvm_settmask(PvmTaskChild, mask));
    pvm_setopt(PvmTraceTid, me);
    pvm_setopt(PvmTraceCode, 99);
    pvm_setopt(PvmTraceBuffer, 0);
    pvm_setopt(PvmTraceOptions, PvmTraceFull);
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
    pvm_recv(-1, 98);
    /* What the child traced, in the order it came. */
    while (pvm_nrecv(-1, 99) > 0)
        show();
    pvm_exit();
    return 0;
}
