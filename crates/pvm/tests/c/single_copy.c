/*
 * Large messages between tasks of a host go by single copy (single_copy.rs): checks what
 * the receivers see. The parent multicasts one PvmDataInPlace message (an int, a large
 * in-place stretch, an int) to three copies of itself and overwrites the stretch once
 * pvm_mcast returns: every child must see the values at send time. Child 0 first waits for a
 * later message (tag 2), so the multicast must not wait on it for good, and unpacks that one
 * in two pvm_upkbyte calls. Each child then takes a bytes-only message whole in one
 * pvm_upkbyte, after which pvm_bufinfo still gives its length and a further unpack is
 * PvmNoData. Child 1 finally receives a large message and exits without unpacking it or
 * calling pvm_exit: the send still succeeds. The program spawns copies of itself (argv[0]
 * must be a path).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pvm3.h"

#define N 300000

static int check(const char *in, int n, int seed)
{
    for (int i = 0; i < n; i++)
        if (in[i] != (char)(i * 7 + seed))
            return 1;
    return 0;
}

static void fill(char *out, int n, int seed)
{
    for (int i = 0; i < n; i++)
        out[i] = (char)(i * 7 + seed);
}

static void child(int parent, int me)
{
    char *in = malloc(N);
    int bad = 0, k = 0, k2 = 0, bytes = 0, tag = 0, src = 0, id;
    if (me == 0) {
        id = pvm_recv(parent, 2);
        bad += pvm_upkbyte(in, N / 2, 1) < 0;
        bad += pvm_upkbyte(in + N / 2, N - N / 2, 1) < 0;
        bad += check(in, N, 2);
        pvm_bufinfo(id, &bytes, &tag, &src);
        bad += bytes != N || tag != 2 || src != parent;
    }
    id = pvm_recv(parent, 1);
    bad += pvm_upkint(&k, 1, 1) < 0 || k != 11;
    bad += pvm_upkbyte(in, N, 1) < 0;
    bad += check(in, N, 1);
    bad += pvm_upkint(&k2, 1, 1) < 0 || k2 != 22;
    pvm_bufinfo(id, &bytes, &tag, &src);
    bad += bytes != N + 8;
    id = pvm_recv(parent, 3);
    bad += pvm_upkbyte(in, N, 1) < 0;
    bad += check(in, N, 3);
    pvm_bufinfo(id, &bytes, &tag, &src);
    bad += bytes != N || tag != 3;
    pvm_setopt(PvmAutoErr, 0);
    bad += pvm_upkbyte(in, 1, 1) != PvmNoData;
    pvm_initsend(PvmDataDefault);
    pvm_pkint(&bad, 1, 1);
    pvm_send(parent, 9);
    if (me == 1) {
        pvm_recv(parent, 4);
        exit(0);
    }
}

int main(int argc, char **argv)
{
    int parent = pvm_parent(), kids[3], bad = 0, k = 11, k2 = 22;
    char *out, *raw;
    (void)argc;
    if (parent != PvmNoParent) {
        int inst = 0;
        /* Which child this is: the parent tells it first. */
        pvm_recv(parent, 7);
        pvm_upkint(&inst, 1, 1);
        child(parent, inst);
        pvm_exit();
        return 0;
    }
    if (pvm_spawn(argv[0], 0, 0, "", 3, kids) != 3) {
        printf("cannot spawn %s\n", argv[0]);
        return 1;
    }
    for (int i = 0; i < 3; i++) {
        pvm_initsend(PvmDataDefault);
        pvm_pkint(&i, 1, 1);
        pvm_send(kids[i], 7);
    }
    out = malloc(N);
    raw = malloc(N);
    fill(out, N, 1);
    pvm_initsend(PvmDataInPlace);
    pvm_pkint(&k, 1, 1);
    pvm_pkbyte(out, N, 1);
    pvm_pkint(&k2, 1, 1);
    bad += pvm_mcast(kids, 3, 1) < 0;
    memset(out, 0, N);
    fill(raw, N, 2);
    pvm_initsend(PvmDataRaw);
    pvm_pkbyte(raw, N, 1);
    bad += pvm_send(kids[0], 2) < 0;
    fill(raw, N, 3);
    pvm_initsend(PvmDataInPlace);
    pvm_pkbyte(raw, N, 1);
    bad += pvm_mcast(kids, 3, 3) < 0;
    for (int i = 0; i < 3; i++) {
        int b = 0;
        pvm_recv(-1, 9);
        pvm_upkint(&b, 1, 1);
        bad += b;
    }
    pvm_initsend(PvmDataRaw);
    pvm_pkbyte(raw, N, 1);
    bad += pvm_send(kids[1], 4) < 0;
    printf("single copy: %d bad\n", bad);
    pvm_exit();
    return bad != 0;
}
