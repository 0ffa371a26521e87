/*
 * Received buffers kept, switched and freed when their receive had to wait (held_message.rs:
 * a small message that comes while pvm_recv waits stays in its ring cell, as one that was
 * there already). Each message is sent by the child only when the parent asks for it, so the
 * parent's receive waits for it. After the first message the child sends 40 in-place
 * messages of 1000 bytes, more than a 4 KiB ring holds (BB_PVM_RING_BYTES=4096 in the test):
 * they fill the ring behind the first while the parent sleeps with it half unpacked, so its
 * cell must not be written over. The parent keeps the first (pvm_setrbuf(0)), receives the
 * second by a waiting receive, switches between the two, unpacks each where it left off,
 * keeps both while it receives the rest, and frees a buffer received by a waiting receive. It prints what it saw;
 * the output is the same under Debian's PVM. The program spawns a copy of itself (argv[0]
 * must be a path).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pvm3.h"

#include "many_messages.h"

static void ask(int tid, int tag)
{
    pvm_initsend(PvmDataDefault);
    pvm_send(tid, tag);
}

static void child(int parent)
{
    int a = 101, b = 102, c = 202;
    ask(parent, 5);
    pvm_recv(parent, 6);
    pvm_initsend(PvmDataDefault);
    pvm_pkint(&a, 1, 1);
    pvm_pkstr("first");
    pvm_pkint(&b, 1, 1);
    pvm_send(parent, 1);
    send_many(parent);
    pvm_recv(parent, 7);
    pvm_initsend(PvmDataRaw);
    pvm_pkint(&c, 1, 1);
    pvm_pkstr("second");
    pvm_send(parent, 2);
    pvm_recv(parent, 8);
    pvm_initsend(PvmDataDefault);
    pvm_pkstr("third");
    pvm_send(parent, 8);
    pvm_recv(parent, 9);
    pvm_initsend(PvmDataDefault);
    pvm_pkstr("fourth");
    pvm_send(parent, 9);
    pvm_recv(parent, 10);
}

int main(int argc, char **argv)
{
    int kid, b1, b2, b3, old, v = 0, bytes = 0, tag = 0, src = 0, rc;
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
    /* Asked for, then waited for: the receive is there before the message. */
    ask(kid, 6);
    b1 = pvm_recv(kid, 1);
    pvm_upkint(&v, 1, 1);
    printf("first: %d\n", v);
    /* The child fills the ring behind the first message meanwhile. */
    usleep(300000);
    pvm_upkstr(s);
    printf("first, after the ring filled: %s\n", s);
    old = pvm_setrbuf(0);
    printf("setrbuf(0) returns the received buffer: %d\n", old == b1);
    ask(kid, 7);
    b2 = pvm_recv(kid, 2);
    pvm_upkint(&v, 1, 1);
    printf("second: %d, another buffer: %d\n", v, b2 != b1);
    old = pvm_setrbuf(b1);
    pvm_upkint(&v, 1, 1);
    printf("back to the first (setrbuf returned the second: %d): %d\n", old == b2, v);
    old = pvm_setrbuf(0);
    printf("the rest, both kept (setrbuf returned the first: %d): %d bad\n", old == b1, receive_many(kid, 0, MANY));
    rc = pvm_bufinfo(b2, &bytes, &tag, &src);
    printf("bufinfo of the second: %d, %d bytes, tag %d, from the child %d\n", rc, bytes, tag, src == kid);
    pvm_setrbuf(b2);
    pvm_upkstr(s);
    printf("back to the second, after 40 more: %s\n", s);
    pvm_setopt(PvmAutoErr, 0);
    rc = pvm_freebuf(b1);
    printf("the first freed: %d, then bufinfo: %d\n", rc, pvm_bufinfo(b1, &bytes, &tag, &src));
    ask(kid, 8);
    b3 = pvm_recv(kid, 8);
    rc = pvm_freebuf(b3);
    printf("the third freed unread: %d, then bufinfo: %d, receive buffer %d\n", rc,
           pvm_bufinfo(b3, &bytes, &tag, &src), pvm_getrbuf());
    ask(kid, 9);
    pvm_recv(kid, 9);
    pvm_upkstr(s);
    printf("fourth: %s\n", s);
    ask(kid, 10);
    pvm_exit();
    return 0;
}
