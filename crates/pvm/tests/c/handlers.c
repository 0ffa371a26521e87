/*
 * Message handlers (pvm_addmhf): a message that matches goes to the handler while the task
 * waits for another, with the message as the active receive buffer; after pvm_delmhf such
 * messages are received as any other.
 */
#include <stdio.h>
#include "pvm3.h"

static int calls;

static int handler(int mid)
{
    int x = 0, tag = 0;
    pvm_bufinfo(mid, 0, &tag, 0);
    pvm_upkint(&x, 1, 1);
    printf("handler got %d (tag %d, active buffer %d)\n", x, tag, pvm_getrbuf() == mid);
    calls++;
    return 0;
}

static void send_int(int to, int tag, int x)
{
    pvm_initsend(PvmDataDefault);
    pvm_pkint(&x, 1, 1);
    pvm_send(to, tag);
}

int main(void)
{
    int me = pvm_mytid(), id, x = 0;
    id = pvm_addmhf(-1, 50, -1, handler);
    printf("addmhf %d\n", id >= 0);
    send_int(me, 50, 7);
    send_int(me, 51, 8);
    pvm_recv(-1, 51);
    pvm_upkint(&x, 1, 1);
    printf("received %d after %d handler call\n", x, calls);
    {
        int first = pvm_delmhf(id), again;
        pvm_setopt(PvmAutoErr, 0);
        again = pvm_delmhf(id);
        printf("delmhf %d, again %d\n", first, again);
    }
    send_int(me, 50, 9);
    pvm_recv(-1, 50);
    pvm_upkint(&x, 1, 1);
    printf("received %d, handler calls %d\n", x, calls);
    pvm_exit();
    return 0;
}
