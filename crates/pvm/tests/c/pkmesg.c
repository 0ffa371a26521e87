/*
 * pvm_pkmesg / pvm_upkmesg / pvm_pkmesgbody: whole messages packed into another message and
 * back. Inner messages holding every data type, in each encoding, go inside outer messages
 * (beside other items), travel to self, and come out with their header (tag, context,
 * source, length) and contents. Prints the same under Debian's PVM 3.4.6 (tests/messages.rs
 * runs both); with the argument "ours" it also prints what Debian's library gets wrong: the
 * contents of an unpacked message of every type (its pvm_upkmesg buffers hold the right
 * bytes but unpack wrong), a raw message inside an XDR one, unpacking past the end.
 */
#include <stdio.h>
#include <string.h>
#include "pvm3.h"

static int ours;

static const char *enc_name(int enc)
{
    return enc == PvmDataDefault ? "xdr" : enc == PvmDataRaw ? "raw" : "inplace";
}

static char by[5] = {1, -2, 3, -4, 5};
static short sh[3] = {-300, 0, 300};
static unsigned short us[2] = {65535, 1};
static int in[4] = {-7, 0, 7, 2147483647};
static unsigned int ui[2] = {4294967295u, 3};
/* longs that fit in 32 bits: XDR carries 4 bytes of them, and Debian's library reads a
 * negative one back zero-extended. */
static long lo[2] = {5000000L, 2000000000L};
static unsigned long ul[2] = {4000000000UL, 9};
static float fl[2] = {1.5f, -0.25f};
static double db[2] = {3.125, -1e300};
static float cx[4] = {1, 2, 3, 4};
static double dcx[4] = {5, 6, 7, 8};

/* A message in `enc` holding every type; its id. */
static int every_type(int enc)
{
    int id = pvm_mkbuf(enc), before = pvm_setsbuf(id);
    pvm_pkbyte(by, 5, 1);
    pvm_pkshort(sh, 3, 1);
    pvm_pkushort(us, 2, 1);
    pvm_pkint(in, 4, 1);
    pvm_pkuint(ui, 2, 1);
    pvm_pklong(lo, 2, 1);
    pvm_pkulong(ul, 2, 1);
    pvm_pkfloat(fl, 2, 1);
    pvm_pkdouble(db, 2, 1);
    pvm_pkcplx(cx, 2, 1);
    pvm_pkdcplx(dcx, 2, 1);
    pvm_pkstr("every type");
    pvm_setsbuf(before);
    return id;
}

/* Unpacks every type from the active receive buffer: whether all came back equal. */
static int check_every_type(void)
{
    char b[5], s[32];
    short h[3];
    unsigned short u[2];
    int i[4];
    unsigned int v[2];
    long l[2];
    unsigned long w[2];
    float f[2], c[4];
    double d[2], e[4];
    int bad = 0;
    bad |= pvm_upkbyte(b, 5, 1) || memcmp(b, by, sizeof b);
    bad |= pvm_upkshort(h, 3, 1) || memcmp(h, sh, sizeof h);
    bad |= pvm_upkushort(u, 2, 1) || memcmp(u, us, sizeof u);
    bad |= pvm_upkint(i, 4, 1) || memcmp(i, in, sizeof i);
    bad |= pvm_upkuint(v, 2, 1) || memcmp(v, ui, sizeof v);
    bad |= pvm_upklong(l, 2, 1) || memcmp(l, lo, sizeof l);
    bad |= pvm_upkulong(w, 2, 1) || memcmp(w, ul, sizeof w);
    bad |= pvm_upkfloat(f, 2, 1) || memcmp(f, fl, sizeof f);
    bad |= pvm_upkdouble(d, 2, 1) || memcmp(d, db, sizeof d);
    bad |= pvm_upkcplx(c, 2, 1) || memcmp(c, cx, sizeof c);
    bad |= pvm_upkdcplx(e, 2, 1) || memcmp(e, dcx, sizeof e);
    bad |= pvm_upkstr(s) || strcmp(s, "every type");
    return !bad;
}

/* Packs an inner message of `inner_enc` (tag 77, context 5) into an outer one of
 * `outer_enc` between two ints, sends it to self, and unpacks it again. */
static void round_trip(int me, int outer_enc, int inner_enc)
{
    struct pvmminfo set, got;
    int inner = every_type(inner_enc), ilen, olen, r, x = 0, y = 0, mid, rb;
    pvm_getminfo(inner, &set);
    set.ctx = 5;
    set.tag = 77;
    set.src = me;
    pvm_setminfo(inner, &set);
    pvm_bufinfo(inner, &ilen, 0, 0);
    pvm_initsend(outer_enc);
    x = 11;
    pvm_pkint(&x, 1, 1);
    r = pvm_pkmesg(inner);
    x = 22;
    pvm_pkint(&x, 1, 1);
    pvm_bufinfo(pvm_getsbuf(), &olen, 0, 0);
    printf("%s in %s: pkmesg %d, inner %d bytes, outer %d (header and length: %d)\n", enc_name(inner_enc),
           enc_name(outer_enc), r, ilen, olen, olen - ilen - 8);
    pvm_send(me, 40);
    rb = pvm_recv(me, 40);
    pvm_upkint(&x, 1, 1);
    mid = pvm_upkmesg();
    pvm_upkint(&y, 1, 1);
    pvm_getminfo(mid, &got);
    printf("  upkmesg: new buffer %d, receive buffer kept %d; around it %d %d; len %d tag %d ctx %d src self %d\n",
           mid > 0 && mid != rb, pvm_getrbuf() == rb, x, y, got.len, got.tag, got.ctx, got.src == me);
    pvm_setrbuf(mid);
    if (ours) {
        r = check_every_type();
        printf("  every type unpacked: %d, then %d\n", r, pvm_upkint(&x, 1, 1));
    }
    pvm_freebuf(mid);
    pvm_freebuf(inner);
}

int main(int argc, char **argv)
{
    int me = pvm_mytid(), a, b, r, x, y, len, got;
    ours = argc > 1 && strcmp(argv[1], "ours") == 0;
    pvm_setopt(PvmAutoErr, 0);

    round_trip(me, PvmDataDefault, PvmDataDefault);
    round_trip(me, PvmDataRaw, PvmDataRaw);
    round_trip(me, PvmDataRaw, PvmDataDefault);
    if (ours) {
        round_trip(me, PvmDataRaw, PvmDataInPlace);
        round_trip(me, PvmDataDefault, PvmDataRaw);
    }

    /* A message received is packed whole, its sender with it (the manual's example). */
    pvm_initsend(PvmDataDefault);
    x = 99;
    pvm_pkint(&x, 1, 1);
    pvm_send(me, 41);
    pvm_recv(me, 41);
    pvm_initsend(PvmDataDefault);
    pvm_pkstr("here is the message I received...");
    printf("pkmesg of the receive buffer: %d\n", pvm_pkmesg(pvm_getrbuf()));
    pvm_send(me, 42);
    pvm_recv(me, 42);
    {
        char s[64];
        struct pvmminfo m;
        pvm_upkstr(s);
        r = pvm_upkmesg();
        pvm_getminfo(r, &m);
        pvm_setrbuf(r);
        pvm_upkint(&x, 1, 1);
        printf("  %s: tag %d from self %d holding %d\n", s, m.tag, m.src == me, x);
    }

    /* pvm_pkmesgbody splices the body in: no header, encodings must match. */
    a = pvm_mkbuf(PvmDataDefault);
    b = pvm_setsbuf(a);
    x = 5;
    pvm_pkint(&x, 1, 1);
    pvm_setsbuf(b);
    pvm_initsend(PvmDataDefault);
    x = 4;
    pvm_pkint(&x, 1, 1);
    printf("pkmesgbody: %d", pvm_pkmesgbody(a));
    pvm_bufinfo(pvm_getsbuf(), &len, 0, 0);
    printf(", outer %d bytes\n", len);
    pvm_send(me, 43);
    pvm_recv(me, 43);
    x = y = 0;
    pvm_upkint(&x, 1, 1);
    pvm_upkint(&y, 1, 1);
    printf("  spliced: %d %d, then %d\n", x, y, pvm_upkint(&x, 1, 1));
    pvm_initsend(PvmDataRaw);
    printf("pkmesgbody of xdr into raw: %d\n", pvm_pkmesgbody(a));

    /* Errors. */
    printf("pkmesg of the send buffer: %d\n", pvm_pkmesg(pvm_getsbuf()));
    printf("pkmesg of no such buffer: %d\n", pvm_pkmesg(9999));
    printf("pkmesg of a negative id: %d\n", pvm_pkmesg(-1));
    pvm_setsbuf(0);
    printf("pkmesg with no send buffer: %d\n", pvm_pkmesg(a));
    printf("pkmesgbody with no send buffer: %d\n", pvm_pkmesgbody(a));
    pvm_setrbuf(0);
    printf("upkmesg with no receive buffer: %d\n", pvm_upkmesg());
    if (ours) {
        pvm_setrbuf(a);
        printf("upkmesg of an int (too short a header): %d\n", pvm_upkmesg());
        pvm_initsend(PvmDataDefault);
        got = pvm_pkmesg(a);
        pvm_setrbuf(pvm_getsbuf());
        r = pvm_upkmesg();
        printf("upkmesg of a send buffer: %d, then past the end %d\n", got == 0 && r > 0, pvm_upkmesg());
    }
    pvm_exit();
    return 0;
}
