/*
 * pvm_packf / pvm_unpackf: printf-like packing, on top of the library's pvm_pk* and pvm_upk*
 * routines (variadic functions cannot be defined in stable Rust, so these two are C).
 *
 * The format grammar of PVM's pvm_packf(3): an optional leading "%+" (initsend, with the
 * encoding as an int argument), then conversions '%' count stride modifiers fchar, where
 * count is digits or '*' (an int argument), stride is '.' and digits or '*', modifiers are
 * any of h (short), l (long; double for f, double complex for x), u (unsigned), and fchar is
 * c (bytes), d (integers), f (float), x (complex float) or s (string). With a count or a
 * stride the argument is an array's address; without, packf takes the value itself (the
 * unpacking side always takes addresses).
 */
#include <stdarg.h>
#include <stddef.h>

int pvm_pkbyte(char *, int, int);
int pvm_pkshort(short *, int, int);
int pvm_pkushort(unsigned short *, int, int);
int pvm_pkint(int *, int, int);
int pvm_pkuint(unsigned int *, int, int);
int pvm_pklong(long *, int, int);
int pvm_pkulong(unsigned long *, int, int);
int pvm_pkfloat(float *, int, int);
int pvm_pkdouble(double *, int, int);
int pvm_pkcplx(float *, int, int);
int pvm_pkdcplx(double *, int, int);
int pvm_pkstr(char *);
int pvm_initsend(int);
int pvm_upkbyte(char *, int, int);
int pvm_upkshort(short *, int, int);
int pvm_upkushort(unsigned short *, int, int);
int pvm_upkint(int *, int, int);
int pvm_upkuint(unsigned int *, int, int);
int pvm_upklong(long *, int, int);
int pvm_upkulong(unsigned long *, int, int);
int pvm_upkfloat(float *, int, int);
int pvm_upkdouble(double *, int, int);
int pvm_upkcplx(float *, int, int);
int pvm_upkdcplx(double *, int, int);
int pvm_upkstr(char *);

#define PvmBadParam (-2)

/* Tracing (trace.rs): pvm_packf and pvm_unpackf are one event each, as in Debian's library;
 * while one is traced, the pack routines it calls are not. */
#define TEV_PACKF 83
#define TEV_UNPACKF 89
int bb_pvm_trace_format_entry(int kind, const char *fmt);
void bb_pvm_trace_format_exit(int kind, int traced, int cc);

/* One parsed conversion. */
struct conv {
    int count; /* -1: no count given (a single value, by value when packing) */
    int stride;
    int given; /* a count or a stride was written: the argument is an address */
    char size; /* 0, 'h' or 'l' */
    char type; /* c d u f x s ('u': d with the u modifier) */
};

/* Parses the conversion at *fp (just past '%'), taking '*' values from ap. */
static int parse(const char **fp, va_list *ap, struct conv *c)
{
    const char *f = *fp;
    c->count = -1;
    c->stride = 1;
    c->size = 0;
    c->given = 0;
    if (*f == '*' || (*f >= '0' && *f <= '9') || *f == '.')
        c->given = 1;
    if (*f == '*') {
        c->count = va_arg(*ap, int);
        f++;
    } else if (*f >= '0' && *f <= '9') {
        c->count = 0;
        while (*f >= '0' && *f <= '9')
            c->count = c->count * 10 + (*f++ - '0');
    }
    if (*f == '.') {
        f++;
        if (*f == '*') {
            c->stride = va_arg(*ap, int);
            f++;
        } else {
            c->stride = 0;
            while (*f >= '0' && *f <= '9')
                c->stride = c->stride * 10 + (*f++ - '0');
        }
    }
    {
        int unsig = 0;
        for (; *f == 'h' || *f == 'l' || *f == 'u'; f++) {
            if (*f == 'u')
                unsig = 1;
            else
                c->size = *f;
        }
        c->type = *f;
        if (unsig && c->type == 'd')
            c->type = 'u';
    }
    if (!*f || c->count < -1 || c->stride < 1)
        return PvmBadParam;
    *fp = f + 1;
    return 0;
}

int pvm_packf(const char *fmt, ...)
{
    va_list ap;
    struct conv c;
    int cc = 0;
    const char *f = fmt;

    int traced;

    if (!fmt)
        return PvmBadParam;
    traced = bb_pvm_trace_format_entry(TEV_PACKF, fmt) > 0;
    va_start(ap, fmt);
    if (f[0] == '%' && f[1] == '+') {
        if ((cc = pvm_initsend(va_arg(ap, int))) < 0) {
            va_end(ap);
            bb_pvm_trace_format_exit(TEV_PACKF, traced, cc);
            return cc;
        }
        f += 2;
    }
    while (*f && cc >= 0) {
        if (*f++ != '%')
            continue;
        if (*f == '%') {
            f++;
            continue;
        }
        if ((cc = parse(&f, &ap, &c)) < 0)
            break;
        if (!c.given) { /* one value, passed by value (promoted) */
            switch (c.type) {
            case 'c': { char v = (char)va_arg(ap, int); cc = pvm_pkbyte(&v, 1, 1); break; }
            case 'd':
                if (c.size == 'h') { short v = (short)va_arg(ap, int); cc = pvm_pkshort(&v, 1, 1); }
                else if (c.size == 'l') { long v = va_arg(ap, long); cc = pvm_pklong(&v, 1, 1); }
                else { int v = va_arg(ap, int); cc = pvm_pkint(&v, 1, 1); }
                break;
            case 'u':
                if (c.size == 'h') { unsigned short v = (unsigned short)va_arg(ap, unsigned); cc = pvm_pkushort(&v, 1, 1); }
                else if (c.size == 'l') { unsigned long v = va_arg(ap, unsigned long); cc = pvm_pkulong(&v, 1, 1); }
                else { unsigned v = va_arg(ap, unsigned); cc = pvm_pkuint(&v, 1, 1); }
                break;
            case 'f':
                if (c.size == 'l') { double v = va_arg(ap, double); cc = pvm_pkdouble(&v, 1, 1); }
                else { float v = (float)va_arg(ap, double); cc = pvm_pkfloat(&v, 1, 1); }
                break;
            case 's': cc = pvm_pkstr(va_arg(ap, char *)); break;
            default: cc = PvmBadParam;
            }
            continue;
        }
        { /* an array, passed by pointer */
            void *p = va_arg(ap, void *);
            if (c.count < 0)
                c.count = 1;
            switch (c.type) {
            case 'c': cc = pvm_pkbyte(p, c.count, c.stride); break;
            case 'd':
                cc = c.size == 'h' ? pvm_pkshort(p, c.count, c.stride)
                   : c.size == 'l' ? pvm_pklong(p, c.count, c.stride) : pvm_pkint(p, c.count, c.stride);
                break;
            case 'u':
                cc = c.size == 'h' ? pvm_pkushort(p, c.count, c.stride)
                   : c.size == 'l' ? pvm_pkulong(p, c.count, c.stride) : pvm_pkuint(p, c.count, c.stride);
                break;
            case 'f':
                cc = c.size == 'l' ? pvm_pkdouble(p, c.count, c.stride) : pvm_pkfloat(p, c.count, c.stride);
                break;
            case 'x':
                cc = c.size == 'l' ? pvm_pkdcplx(p, c.count, c.stride) : pvm_pkcplx(p, c.count, c.stride);
                break;
            case 's': cc = pvm_pkstr(p); break;
            default: cc = PvmBadParam;
            }
        }
    }
    va_end(ap);
    cc = cc < 0 ? cc : 0;
    bb_pvm_trace_format_exit(TEV_PACKF, traced, cc);
    return cc;
}

int pvm_unpackf(const char *fmt, ...)
{
    va_list ap;
    struct conv c;
    int cc = 0;
    const char *f = fmt;

    int traced;

    if (!fmt)
        return PvmBadParam;
    traced = bb_pvm_trace_format_entry(TEV_UNPACKF, fmt) > 0;
    va_start(ap, fmt);
    while (*f && cc >= 0) {
        if (*f++ != '%')
            continue;
        if (*f == '%') {
            f++;
            continue;
        }
        if ((cc = parse(&f, &ap, &c)) < 0)
            break;
        {
            void *p = va_arg(ap, void *); /* unpacking always takes pointers */
            int n = c.count < 0 ? 1 : c.count;
            switch (c.type) {
            case 'c': cc = pvm_upkbyte(p, n, c.stride); break;
            case 'd':
                cc = c.size == 'h' ? pvm_upkshort(p, n, c.stride)
                   : c.size == 'l' ? pvm_upklong(p, n, c.stride) : pvm_upkint(p, n, c.stride);
                break;
            case 'u':
                cc = c.size == 'h' ? pvm_upkushort(p, n, c.stride)
                   : c.size == 'l' ? pvm_upkulong(p, n, c.stride) : pvm_upkuint(p, n, c.stride);
                break;
            case 'f':
                cc = c.size == 'l' ? pvm_upkdouble(p, n, c.stride) : pvm_upkfloat(p, n, c.stride);
                break;
            case 'x':
                cc = c.size == 'l' ? pvm_upkdcplx(p, n, c.stride) : pvm_upkcplx(p, n, c.stride);
                break;
            case 's': cc = pvm_upkstr(p); break;
            default: cc = PvmBadParam;
            }
        }
    }
    va_end(ap);
    cc = cc < 0 ? cc : 0;
    bb_pvm_trace_format_exit(TEV_UNPACKF, traced, cc);
    return cc;
}
