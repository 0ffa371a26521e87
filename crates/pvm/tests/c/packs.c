/*
 * Packs one of every type in each encoding, prints the bytes the library made, then unpacks
 * them and prints the values. Built once against Debian's PVM and once against ours, the two
 * outputs must be the same (tests/xdr_matches_debian.rs).
 */
#include <stdio.h>
#include <string.h>
#include <pvm3.h>

static void dump(const char *what, int enc)
{
    int len = 0, tag, tid;
    unsigned char out[4096];
    int b = pvm_getsbuf();
    pvm_bufinfo(b, &len, &tag, &tid);
    pvm_setrbuf(b);
    if (len > (int)sizeof out || pvm_upkbyte((char *)out, len, 1) < 0) {
        printf("%s enc %d: cannot read %d bytes back\n", what, enc, len);
        return;
    }
    printf("%s enc %d len %d: ", what, enc, len);
    for (int k = 0; k < len; k++)
        printf("%02x", out[k]);
    printf("\n");
}

static void pack_all(void)
{
    int i[4] = {1, -2, 2147483647, -2147483647 - 1};
    unsigned int ui[2] = {7, 4294967295u};
    short s[3] = {1, -1, 300};
    unsigned short us[2] = {65535, 2};
    long l[2] = {5, -7};
    unsigned long ul[2] = {9, 4294967295ul};
    float f[2] = {1.5f, -2.25f};
    double d[2] = {3.25, -1e300};
    float cx[4] = {1, 2, 3, 4};
    double dcx[4] = {5, 6, 7, 8};
    char c[5] = {'a', 'b', 'c', 'd', 'e'};
    pvm_pkint(i, 4, 1);
    pvm_pkint(i, 2, 2); /* stride */
    pvm_pkuint(ui, 2, 1);
    pvm_pkshort(s, 3, 1);
    pvm_pkushort(us, 2, 1);
    pvm_pklong(l, 2, 1);
    pvm_pkulong(ul, 2, 1);
    pvm_pkfloat(f, 2, 1);
    pvm_pkdouble(d, 2, 1);
    pvm_pkcplx(cx, 2, 1);
    pvm_pkdcplx(dcx, 1, 2);
    pvm_pkbyte(c, 3, 1);
    pvm_pkbyte(c, 3, 2);
    pvm_pkstr("hey");
    pvm_pkstr("");
    pvm_pkbyte(c, 5, 1);
    pvm_packf("%d %hd %lf %3d %s", 42, 7, 2.5, i, "packf");
}

static void unpack_all(void)
{
    int i[4], i2[2];
    unsigned int ui[2];
    short s[3];
    unsigned short us[2];
    long l[2];
    unsigned long ul[2];
    float f[2], cx[4];
    double d[2], dcx[2];
    char c[5] = {0}, c2[3] = {0}, str[16], str2[16], c5[5];
    int pi, pi3[3];
    short ps;
    double pd;
    char pstr[16];
    int cc = 0;
    cc |= pvm_upkint(i, 4, 1);
    cc |= pvm_upkint(i2, 2, 1);
    cc |= pvm_upkuint(ui, 2, 1);
    cc |= pvm_upkshort(s, 3, 1);
    cc |= pvm_upkushort(us, 2, 1);
    cc |= pvm_upklong(l, 2, 1);
    cc |= pvm_upkulong(ul, 2, 1);
    cc |= pvm_upkfloat(f, 2, 1);
    cc |= pvm_upkdouble(d, 2, 1);
    cc |= pvm_upkcplx(cx, 2, 1);
    cc |= pvm_upkdcplx(dcx, 1, 1);
    cc |= pvm_upkbyte(c, 3, 1);
    cc |= pvm_upkbyte(c2, 3, 1);
    cc |= pvm_upkstr(str);
    cc |= pvm_upkstr(str2);
    cc |= pvm_upkbyte(c5, 5, 1);
    cc |= pvm_unpackf("%d %hd %lf %3d %s", &pi, &ps, &pd, pi3, pstr);
    printf("  cc %d ints %d %d %d %d | %d %d | %u %u | %d %d %d | %u %u | %ld %ld | %lu %lu\n", cc, i[0], i[1],
           i[2], i[3], i2[0], i2[1], ui[0], ui[1], s[0], s[1], s[2], us[0], us[1], l[0], l[1], ul[0], ul[1]);
    printf("  reals %g %g | %g %g | %g %g %g %g | %g %g\n", f[0], f[1], d[0], d[1], cx[0], cx[1], cx[2], cx[3],
           dcx[0], dcx[1]);
    printf("  bytes %.3s %.3s '%s' '%s' %.5s | packf %d %d %g %d %d %d %s\n", c, c2, str, str2, c5, pi, ps, pd,
           pi3[0], pi3[1], pi3[2], pstr);
    /* Past the end: PvmNoData, and the error codes of bad arguments. */
    printf("  past the end %d, bad count %d, bad buffer %d %d, freebuf of nothing %d\n", pvm_upkint(i, 1, 1),
           pvm_upkint(i, -1, 1), pvm_setrbuf(99999), pvm_bufinfo(99999, 0, 0, 0), pvm_freebuf(99999));
}

int main(void)
{
    pvm_setopt(PvmAutoErr, 0);
    /* Raw and XDR (in place is raw on the wire, but Debian's library cannot read an in-place
       send buffer back, so it has its own tests). */
    for (int enc = 0; enc <= 1; enc++) {
        int b = pvm_mkbuf(enc);
        pvm_setsbuf(b);
        pack_all();
        dump(enc == 0 ? "xdr" : "raw", enc);
        pvm_freebuf(b);
        b = pvm_mkbuf(enc);
        pvm_setsbuf(b);
        pack_all();
        pvm_setrbuf(b);
        unpack_all();
        pvm_setsbuf(0);
        pvm_setrbuf(0);
        pvm_freebuf(b);
    }
    pvm_initsend(PvmDataDefault);
    long big[2] = {1L << 40 | 5, -(1L << 40) - 3};
    printf("a long beyond 32 bits: %d\n", pvm_pklong(big, 2, 1));
    dump("xdr", 0);
    printf("no buffer: %d %d\n", (pvm_setsbuf(0), pvm_pkint((int[]){1}, 1, 1)), (pvm_setrbuf(0), pvm_upkint((int[]){1}, 1, 1)));
    printf("bad encoding: %d\n", pvm_mkbuf(9));
    return 0;
}
