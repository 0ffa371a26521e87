/*
 * pvm_recvf: receives by a matching function of the program's own. The function is called
 * as f(bufid, tid, tag) for each waiting message, with tid and tag as given to the receive;
 * <0 ends the call with that code, 0 passes, 1 takes at once, >1 ranks (the highest, the
 * first of equals, is taken once all are seen). pvm_recv, pvm_nrecv, pvm_trecv, pvm_probe
 * and pvm_precv use it. Prints the same under Debian's PVM 3.4.6 (tests/examples.rs runs
 * both). With the argument "child" it is the spawned helper that sends late.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "pvm3.h"

/* Debian's pvm3.h declares pvm_recvf's result oddly: every call is cast. */
typedef int (*matchf)(int, int, int);
#define RECVF(f) ((matchf)pvm_recvf(f))

static int calls, seen_tid, seen_tag;

static int tag_of(int mid)
{
    int tag = -1;
    pvm_bufinfo(mid, 0, &tag, 0);
    return tag;
}

/* Ranks a message by its tag: the highest tag wins. */
static int by_tag(int mid, int tid, int tag)
{
    calls++;
    seen_tid = tid;
    seen_tag = tag;
    return tag_of(mid);
}

static int all_two(int mid, int tid, int tag) { calls++; return 2; }
static int none(int mid, int tid, int tag) { calls++; return 0; }
static int five_then_one(int mid, int tid, int tag) { calls++; return tag_of(mid) == 3 ? 5 : 1; }
static int two_then_fail(int mid, int tid, int tag) { calls++; return tag_of(mid) == 3 ? 2 : -7; }
static int unknown_code(int mid, int tid, int tag) { calls++; return -99; }
static int only_21(int mid, int tid, int tag) { calls++; return tag_of(mid) == 21; }

/* Reads the message itself: picks the one holding 50, leaves the receive buffer as it was. */
static int holds_50(int mid, int tid, int tag)
{
    int x = -1, before = pvm_setrbuf(mid);
    pvm_upkint(&x, 1, 1);
    pvm_setrbuf(before);
    calls++;
    return x == 50;
}

static void send_int(int to, int tag, int x)
{
    pvm_initsend(PvmDataDefault);
    pvm_pkint(&x, 1, 1);
    pvm_send(to, tag);
}

/* Messages to self tagged 3, 7, 5 holding 30, 70, 50; returns once all have arrived (under
 * Debian's PVM they come back through the daemon). */
static void three(int me)
{
    matchf before = RECVF(0);
    send_int(me, 3, 30);
    send_int(me, 7, 70);
    send_int(me, 5, 50);
    send_int(me, 99, 0);
    while (pvm_probe(me, 99) <= 0)
        ;
    pvm_nrecv(me, 99);
    RECVF(before);
}

static void show(const char *what, int r)
{
    int tag = -1, x = -1;
    if (r > 0) {
        pvm_bufinfo(r, 0, &tag, 0);
        pvm_upkint(&x, 1, 1);
    }
    printf("%s: %s tag %d holding %d, %d calls\n", what, r > 0 ? "got" : "nothing", tag, x, calls);
    calls = 0;
}

static int child(void)
{
    int parent = pvm_parent();
    usleep(200000);
    send_int(parent, 20, 200);
    usleep(100000);
    send_int(parent, 21, 210);
    pvm_exit();
    return 0;
}

int main(int argc, char **argv)
{
    int me, r, x = 0, rtid, rtag, rlen, kid;
    matchf deflt, old;

    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return child();
    me = pvm_mytid();
    pvm_setopt(PvmAutoErr, 0);

    deflt = RECVF(by_tag);
    printf("the default comes back as a function: %d\n", deflt != 0);
    old = RECVF(by_tag);
    printf("installing again returns the one before: %d\n", old == by_tag);

    three(me);
    r = pvm_recv(77, -99);
    printf("matcher saw tid %d tag %d (as given, unchecked)\n", seen_tid, seen_tag);
    show("highest rank", r);
    RECVF(all_two);
    show("equal ranks take the first", pvm_nrecv(-1, -1));
    show("the last one", pvm_nrecv(-1, -1));
    show("an empty queue asks nobody", pvm_nrecv(-1, -1));
    printf("the receive buffer was freed first: %d\n", pvm_getrbuf() == 0);

    three(me);
    RECVF(five_then_one);
    show("rank 1 ends the look", pvm_nrecv(-1, -1));
    RECVF(two_then_fail);
    r = pvm_nrecv(-1, -1);
    printf("an error ends the look: %d, %d calls\n", r, calls);
    calls = 0;
    RECVF(unknown_code);
    r = pvm_recv(-1, -1);
    printf("a code PVM does not name: %d, probe %d\n", r, pvm_probe(-1, -1));
    calls = 0;
    RECVF(none);
    show("nrecv, none picked", pvm_nrecv(-1, -1));
    {
        struct timeval tv = {0, 20000};
        show("trecv, none picked", pvm_trecv(-1, -1, &tv));
    }
    show("probe, none picked", pvm_probe(-1, -1));
    RECVF(holds_50);
    show("probe by content", pvm_probe(-1, -1));
    show("probe again (still there)", pvm_probe(-1, -1));
    show("recv by content (unpacked from its start)", pvm_recv(-1, -1));
    RECVF(all_two);
    r = pvm_precv(-1, 12345, &x, 1, PVM_INT, &rtid, &rtag, &rlen);
    printf("precv asks the matcher: %d, tag %d from self %d, %d calls\n", r, rtag, rtid == me, calls);
    calls = 0;

    old = RECVF(0);
    printf("null restores the default, returns the one before: %d\n", old == all_two);
    pvm_setcontext(pvm_newcontext());
    send_int(me, 4, 40);
    while (pvm_probe(me, 4) <= 0)
        ;
    pvm_setcontext(0);
    show("default: nothing in this context", pvm_nrecv(-1, -1));
    RECVF(all_two);
    show("a matcher sees every context", pvm_nrecv(-1, -1));

    RECVF(deflt);
    three(me);
    r = pvm_probe(-1, 5);
    printf("the default, called: %d for its message, %d for another tag, %d for no buffer\n",
           deflt(r, -1, 5), deflt(r, -1, 6), deflt(-3, -1, -1));
    old = RECVF(0);
    printf("the default installed again is the default: %d\n", old == deflt);
    show("default recv of tag 5", pvm_recv(-1, 5));
    show("default recv of any", pvm_recv(-1, -1));
    show("default recv of any", pvm_recv(-1, -1));

    if (pvm_spawn(argv[0], (char *[]){"child", 0}, PvmTaskDefault, "", 1, &kid) != 1) {
        printf("spawn failed: %d\n", kid);
        pvm_exit();
        return 1;
    }
    RECVF(only_21);
    r = pvm_recv(-1, -1);
    printf("recv waited for the message it picks: tag %d, after more than one look %d\n", tag_of(r),
           calls > 1);
    calls = 0;
    RECVF(0);
    show("the one it passed over", pvm_recv(kid, -1));
    pvm_exit();
    return 0;
}
