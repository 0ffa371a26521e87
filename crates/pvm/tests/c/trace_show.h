/*
 * The trace tests' tracer side (trace.c, trace_calls.c, trace_buffers.c): a mask of the
 * events a test asks for, and each trace message decoded as PVM's tracers read it
 * (pvmtev.h): the first event of each kind and end comes with its descriptor (data ids and
 * types, each with its value), later ones as bare records, values in the descriptor's order.
 * Printed without times, addresses or buffer ids (each library numbers its own), with tids by
 * role, so that our library and Debian's print alike. A PvmTraceTime/PvmTraceCount summary
 * (an event id without entry or exit bit) prints as "summary", its times as "t" when they are
 * times (seconds, or microseconds under a million). A test sets `parent_tid` and `kid_tid`,
 * builds its mask with `mask_with`, and prints only the events its `wanted` says.
 */
#include <stdio.h>
#include <string.h>
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
#define DATA_LONG 8
#define DATA_STRING 12
#define DATA_ARRAY 0x80
#define DID_MB 47
#define DID_MRB 55
#define DID_MSB 56
#define DID_PDA 71
#define DID_TS 106
#define DID_TU 107
#define DID_TGS 108
#define DID_TGU 109

static int parent_tid, kid_tid;

/* The events a test prints (the others that come are skipped). */
static int wanted(int kind);

/* A mask (Pvmtmask) naming the `n` events in `kinds`. */
static void mask_with(char mask[36], const int *kinds, int n)
{
    int i;
    memset(mask, '@', 35);
    mask[35] = 0;
    for (i = 0; i < n; i++)
        mask[kinds[i] / 4] |= 1 << (kinds[i] & 3);
}

/* A value by its role: a tid by whose it is, a time as "t", an address as "addr", a
 * buffer id as "buf". */
static void value(int did, int v)
{
    if (did == DID_TS || did == DID_TU)
        printf("t");
    else if (did == DID_TGS || did == DID_TGU) /* a time summed (PvmTraceTime) */
        printf(v >= 0 && v < 1000000 ? "t" : "bad-time(%d)", v);
    else if (did == DID_PDA)
        printf("addr");
    else if ((did == DID_MB || did == DID_MSB || did == DID_MRB) && v > 0)
        printf("buf");
    else if (v == parent_tid)
        printf("parent");
    else if (v == kid_tid)
        printf("kid");
    else
        printf("%d", v);
}

/* A datum of type `type`: a string, a list (its count, then its items), or one int (a long
 * comes as one XDR int too). */
static void datum(int did, int type)
{
    int n, v, i;
    char s[256];
    if (type == DATA_STRING) {
        pvm_upkstr(s);
        printf("\"%s\"", s);
    } else if (type & DATA_ARRAY) {
        pvm_upkint(&n, 1, 1);
        printf("[%d]", n);
        for (i = 0; i < n && i < 64; i++) {
            printf(" ");
            if ((type & ~DATA_ARRAY) == DATA_STRING) {
                pvm_upkstr(s);
                printf("\"%s\"", s);
            } else {
                pvm_upkint(&v, 1, 1);
                value(did, v);
            }
        }
    } else {
        pvm_upkint(&v, 1, 1);
        value(did, v);
    }
}

/* Data ids and types of each event (kind | entry/exit) as its descriptor said. */
static int dids[0x10000][12], types[0x10000][12], ndids[0x10000];

/* Prints the trace message in the active receive buffer, if its event is wanted. */
static void show(void)
{
    int marker, eid, did, type, v, i, kind;
    char name[64];
    pvm_upkint(&marker, 1, 1);
    pvm_upkint(&eid, 1, 1);
    if (eid < 0 || eid >= 0x10000)
        return;
    kind = eid & ~(EVENT_ENTRY | EVENT_EXIT);
    if ((marker != MARK_EVENT_DESC && marker != MARK_EVENT_RECORD) || !wanted(kind))
        return;
    printf("%s %d %s", marker == MARK_EVENT_DESC ? "desc" : "record", kind,
           eid & EVENT_ENTRY ? "entry" : eid & EVENT_EXIT ? "exit" : "summary");
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
            datum(did, type);
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

/* Asks for the kid's events: `mask` for its children, traced to this task with tag 99,
 * unbuffered, every event in full. */
static void trace_children(char mask[36])
{
    printf("settmask %d\n", pvm_settmask(PvmTaskChild, mask));
    pvm_setopt(PvmTraceTid, parent_tid);
    pvm_setopt(PvmTraceCode, 99);
    pvm_setopt(PvmTraceBuffer, 0);
    pvm_setopt(PvmTraceOptions, PvmTraceFull);
}

/* Once the kid has ended (PvmTaskExit, tag 98): what it traced, in the order it came. */
static void show_all(void)
{
    pvm_recv(-1, 98);
    while (pvm_nrecv(-1, 99) > 0)
        show();
}
