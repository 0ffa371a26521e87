/*
 * Tracing of the pack and unpack routines, the buffer calls (pvm_mkbuf, pvm_freebuf,
 * pvm_setsbuf, pvm_getsbuf, pvm_setrbuf, pvm_getrbuf), pvm_spawn and pvm_exit
 * (PvmTraceTid, PvmTraceCode, pvm_settmask(PvmTaskChild)): this task traces a child that
 * packs a message into a buffer of its own, unpacks the answer (one unpack too many: an
 * error in the event), switches and frees buffers (one that does not exist), spawns a
 * program that is not there, and leaves. Each trace message (tag 99) is printed as
 * trace_show.h decodes it: tests/messages.rs compares it with Debian's PVM.
 */
#include "trace_show.h"

#define EV_EXIT 7
#define EV_FREEBUF 8
#define EV_GETRBUF 12
#define EV_GETSBUF 13
#define EV_MKBUF 24
#define EV_PKBYTE 31
#define EV_PKDOUBLE 34
#define EV_PKINT 36
#define EV_PKSTR 42
#define EV_SETRBUF 50
#define EV_SETSBUF 51
#define EV_SPAWN 52
#define EV_UPKBYTE 58
#define EV_UPKDOUBLE 61
#define EV_UPKINT 63
#define EV_UPKSTR 69

static const int kinds[] = {EV_EXIT,    EV_FREEBUF, EV_GETRBUF, EV_GETSBUF,  EV_MKBUF,  EV_PKBYTE,
                            EV_PKDOUBLE, EV_PKINT,  EV_PKSTR,   EV_SETRBUF,  EV_SETSBUF, EV_SPAWN,
                            EV_UPKBYTE, EV_UPKDOUBLE, EV_UPKINT, EV_UPKSTR};

static int wanted(int kind)
{
    unsigned i;
    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i] == kind)
            return 1;
    return 0;
}

/* A message of an int pair, a string, a double and three bytes. */
static void pack_one(int a, const char *s)
{
    int x[2] = {a, a + 1};
    double d = a / 4.0;
    pvm_pkint(x, 2, 1);
    pvm_pkstr((char *)s);
    pvm_pkdouble(&d, 1, 1);
    pvm_pkbyte("xyz", 3, 1);
}

/* Unpacks what pack_one packed, and prints it. */
static void unpack_one(const char *who)
{
    int x[2] = {0, 0};
    double d = 0;
    char s[64] = "", b[4] = "";
    pvm_upkint(x, 2, 1);
    pvm_upkstr(s);
    pvm_upkdouble(&d, 1, 1);
    pvm_upkbyte(b, 3, 1);
    printf("%s got %d %d %s %g %s\n", who, x[0], x[1], s, d, b);
}

int main(int argc, char **argv)
{
    int me = pvm_mytid(), t = 0;
    char mask[36];

    if (me < 0)
        return 2;
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        int p = pvm_parent(), b, r, x;
        pvm_setopt(PvmAutoErr, 0);
        b = pvm_mkbuf(PvmDataDefault);
        pvm_setsbuf(b);
        pvm_getsbuf();
        pack_one(10, "from the kid");
        pvm_send(p, 1);
        pvm_recv(p, 2);
        unpack_one("kid");
        pvm_upkint(&x, 1, 1); /* nothing left: PvmNoData */
        r = pvm_getrbuf();
        pvm_setrbuf(0);
        pvm_freebuf(r);
        pvm_freebuf(9999); /* no such buffer */
        pvm_spawn("bb-trace-no-such-program", 0, PvmTaskDefault, "", 1, &t);
        pvm_exit();
        return 0;
    }
    parent_tid = me;
    mask_with(mask, kinds, sizeof kinds / sizeof kinds[0]);
    trace_children(mask);
    printf("spawned %d\n", pvm_spawn(argv[0], (char *[]){"child", 0}, PvmTaskDefault, "", 1, &kid_tid));
    pvm_notify(PvmTaskExit, 98, 1, &kid_tid);
    pvm_recv(kid_tid, 1);
    unpack_one("parent");
    pvm_initsend(PvmDataDefault);
    pack_one(20, "from the parent");
    pvm_send(kid_tid, 2);
    show_all();
    pvm_exit();
    return 0;
}
