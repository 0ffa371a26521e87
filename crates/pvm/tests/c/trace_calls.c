/*
 * Tracing of pvm_psend, pvm_precv, pvm_mcast and pvm_initsend (PvmTraceTid, PvmTraceCode,
 * pvm_settmask(PvmTaskChild)): this task traces a child that sends it two arrays with
 * pvm_psend, receives one with pvm_precv, and multicasts to it twice. Each trace message
 * (tag 99) is decoded as PVM's tracers read it (pvmtev.h): descriptors with their data ids
 * and types (an int, a long: the array's address, a list of ints: the multicast's tids),
 * later events as bare records in the descriptor's order. Printed without times or
 * addresses, with tids by role: tests/messages.rs compares it with Debian's PVM.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pvm3.h"

int pvm_settmask(int who, char *mask); /* in Debian's pvmtev.h */

#define MARK_EVENT_DESC -5
#define MARK_EVENT_DESC_END -6
#define MARK_EVENT_RECORD -7
#define MARK_EVENT_RECORD_END -8
#define EVENT_ENTRY 0x4000
#define EVENT_EXIT 0x8000
#define DATA_STRING 12
#define DATA_ARRAY 0x80
#define DID_TS 106
#define DID_TU 107
#define DID_PDA 71
#define DID_MSB 56
#define EV_INITSEND 17
#define EV_MCAST 23
#define EV_PRECV 84
#define EV_PSEND 85

static int parent_tid, kid_tid;

static void value(int did, int v)
{
    if (did == DID_TS || did == DID_TU)
        printf("t");
    else if (did == DID_PDA)
        printf("addr");
    else if (did == DID_MSB && v > 0)
        printf("buf"); /* a buffer id: each library numbers its own */
    else if (v == parent_tid)
        printf("parent");
    else if (v == kid_tid)
        printf("kid");
    else
        printf("%d", v);
}

/* A datum of type `type`: a list (its count, then its ints), or one int (a long comes as
 * one XDR int too). */
static void datum(int did, int type)
{
    int n, v, i;
    if (type & DATA_ARRAY) {
        pvm_upkint(&n, 1, 1);
        printf("[%d]", n);
        for (i = 0; i < n && i < 64; i++) {
            pvm_upkint(&v, 1, 1);
            printf(" ");
            value(did, v);
        }
    } else {
        pvm_upkint(&v, 1, 1);
        value(did, v);
    }
}

static int dids[0x10000][12], types[0x10000][12], ndids[0x10000];

static void show(void)
{
    int marker, eid, did, type, v, i, kind;
    char name[64];
    pvm_upkint(&marker, 1, 1);
    pvm_upkint(&eid, 1, 1);
    if (eid < 0 || eid >= 0x10000)
        return;
    kind = eid & ~(EVENT_ENTRY | EVENT_EXIT);
    if ((marker != MARK_EVENT_DESC && marker != MARK_EVENT_RECORD) ||
        (kind != EV_INITSEND && kind != EV_MCAST && kind != EV_PRECV && kind != EV_PSEND))
        return;
    printf("%s %d %s", marker == MARK_EVENT_DESC ? "desc" : "record", kind, eid & EVENT_ENTRY ? "entry" : "exit");
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
            if (type == DATA_STRING) {
                pvm_upkstr(name);
                printf("\"%s\"", name);
            } else {
                datum(did, type);
            }
            if (ndids[eid] < 12) {
                dids[eid][ndids[eid]] = did;
                types[eid][ndids[eid]++] = type;
            }
        }
    } else {
        printf(":");
        for (i = 0; i < ndids[eid]; i++) {
            printf(" %d=", dids[eid][i]);
            datum(dids[eid][i], types[eid][i]);
        }
        pvm_upkint(&v, 1, 1);
        if (v != MARK_EVENT_RECORD_END)
            printf(" (no end marker: %d)", v);
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    int me = pvm_mytid(), x[4] = {1, 2, 3, 4}, rt = 0, rg = 0, rl = 0, i;
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
    memset(mask, '@', 35);
    mask[35] = 0;
    mask[EV_INITSEND / 4] |= 1 << (EV_INITSEND & 3);
    mask[EV_MCAST / 4] |= 1 << (EV_MCAST & 3);
    mask[EV_PRECV / 4] |= 1 << (EV_PRECV & 3);
    mask[EV_PSEND / 4] |= 1 << (EV_PSEND & 3);
    printf("settmask %d\n", pvm_settmask(PvmTaskChild, mask));
    pvm_setopt(PvmTraceTid, me);
    pvm_setopt(PvmTraceCode, 99);
    pvm_setopt(PvmTraceBuffer, 0);
    pvm_setopt(PvmTraceOptions, PvmTraceFull);
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
    pvm_recv(-1, 98);
    while (pvm_nrecv(-1, 99) > 0)
        show();
    pvm_exit();
    return 0;
}
