/*
 * Received buffers kept while others arrive (held_message.rs: a small message stays in its
 * ring cell until it is unpacked or a later call copies it in). The child sends one message
 * in XDR (an int, a string, an int), one raw (an int, a string), then 40 in-place messages of
 * 1000 bytes each, more than a 4 KiB ring holds (BB_PVM_RING_BYTES=4096 in the test): they
 * fill the ring behind the first message before the parent receives it, and again while the
 * parent sleeps with it half unpacked, so its cell must not be written over. The parent switches between the first two buffers with
 * pvm_setrbuf, unpacks each where it left off, receives the rest while keeping the first,
 * and frees it; then it receives through a pvm_recvf matcher while a message is held. It prints what it saw; the output is the same under Debian's PVM. The
 * program spawns a copy of itself (argv[0] must be a path).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pvm3.h"

#include "many_messages.h"

static void child(int parent)
{
    int a = 101, b = 102, c = 202;
    /* Connected first, then told to go. */
    pvm_initsend(PvmDataDefault);
    pvm_send(parent, 5);
    pvm_recv(parent, 6);
    pvm_initsend(PvmDataDefault);
    pvm_pkint(&a, 1, 1);
    pvm_pkstr("first");
    pvm_pkint(&b, 1, 1);
    pvm_send(parent, 1);
    pvm_initsend(PvmDataRaw);
    pvm_pkint(&c, 1, 1);
    pvm_pkstr("second");
    pvm_send(parent, 2);
    send_many(parent);
    pvm_recv(parent, 4);
    pvm_initsend(PvmDataDefault);
    pvm_pkstr("third");
    pvm_send(parent, 8);
    send_many(parent);
    pvm_recv(parent, 9);
}

/* A matcher for pvm_recvf: the first message, whatever it is. */
static int first(int bufid, int tid, int tag)
{
    (void)bufid, (void)tid, (void)tag;
    return 1;
}

int main(int argc, char **argv)
{
    int kid, b1, b2, old, v = 0, bytes = 0, tag = 0, src = 0, rc;
    char s[16] = "";
    (void)argc;
    if (pvm_parent() != PvmNoParent) {
        child(pvm_parent());
        pvm_exit();
        return 0;
    }
    if (pvm_spawn(argv[0], (char *[]){"child", 0}, PvmTaskDefault, "", 1, &kid) != 1) {
        printf("cannot spawn %s\n", argv[0]);
        return 1;
    }
    pvm_recv(kid, 5);
    pvm_initsend(PvmDataDefault);
    pvm_send(kid, 6);
    /* The first message waits at the front of the ring, the ring full behind it. */
    usleep(300000);
    b1 = pvm_recv(kid, 1);
    pvm_upkint(&v, 1, 1);
    printf("first: %d\n", v);
    /* The child fills the room the first message's receive made meanwhile. */
    usleep(300000);
    pvm_upkstr(s);
    printf("first, after the ring filled: %s\n", s);
    old = pvm_setrbuf(0);
    printf("setrbuf(0) returns the received buffer: %d\n", old == b1);
    b2 = pvm_recv(kid, 2);
    pvm_upkint(&v, 1, 1);
    printf("second: %d, another buffer: %d\n", v, b2 != b1);
    old = pvm_setrbuf(b1);
    pvm_upkint(&v, 1, 1);
    printf("back to the first (setrbuf returned the second: %d): %d\n", old == b2, v);
    pvm_setrbuf(b2);
    pvm_upkstr(s);
    printf("back to the second: %s\n", s);
    printf("half the rest, the first kept: %d bad\n", receive_many(kid, 0, MANY / 2));
    rc = pvm_bufinfo(b1, &bytes, &tag, &src);
    printf("bufinfo of the first: %d, %d bytes, tag %d, from the child %d\n", rc, bytes, tag, src == kid);
    pvm_setrbuf(b1);
    pvm_setopt(PvmAutoErr, 0);
    printf("the first again, at its end: %d\n", pvm_upkint(&v, 1, 1));
    rc = pvm_freebuf(b1);
    printf("freed: %d, then bufinfo: %d\n", rc, pvm_bufinfo(b1, &bytes, &tag, &src));
    printf("the other half: %d bad\n", receive_many(kid, MANY / 2, MANY));
    pvm_initsend(PvmDataDefault);
    pvm_send(kid, 4);
    /* Held in its cell, then a matcher's receives: the ring fills behind it again. */
    usleep(300000);
    pvm_recv(kid, 8);
    pvm_upkstr(s);
    printf("third: %s\n", s);
    pvm_recvf(first);
    printf("through a matcher: %d bad\n", receive_many(kid, 0, MANY));
    pvm_recvf(0);
    pvm_initsend(PvmDataDefault);
    pvm_send(kid, 9);
    pvm_exit();
    return 0;
}
