/* Non-contiguous receives and sends of large pieces.
 *
 * Receives: a vector of 100-double blocks, small enough to go eagerly, large enough for the
 * rendezvous (single copy); the data must land in the blocks and the gaps stay untouched.
 * Sends: vector, indexed and struct types with big pieces (sent without packing by Billboard)
 * of eager, rendezvous and multi-segment sizes, into contiguous and non-contiguous receives,
 * in every send mode (standard, non-blocking, synchronous, persistent, ready, buffered); the
 * expected bytes come from MPI_Pack / MPI_Unpack of the sender's data, regenerated locally.
 *
 * Arguments, for Billboard (other libraries ignore the variables): "fallback" forces the
 * pipelined copy (BB_SHM_SINGLE_COPY=0), "tcp" sends over TCP even on one host (BB_ROUTES=tcp).
 * Needs 2 ranks (pairs 0-1, 2-3, ...). */
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define BLOCK 100 /* doubles per block: 800 bytes, well above any scatter threshold */
#define STRIDE 150

static void exchange(int count, int peer, MPI_Datatype vec)
{
    size_t span = (size_t)count * STRIDE;
    double *recv = malloc(span * sizeof(double));
    double *send = malloc((size_t)count * BLOCK * sizeof(double));
    for (size_t i = 0; i < span; i++)
        recv[i] = -1.0;
    for (int i = 0; i < count * BLOCK; i++)
        send[i] = t_rank * 1e7 + i;
    MPI_Request r;
    MPI_Status st;
    /* Receive as the vector, send packed: the receive side is what is under test. */
    MPI_CHK(MPI_Irecv(recv, count, vec, peer, 7, MPI_COMM_WORLD, &r));
    MPI_CHK(MPI_Send(send, count * BLOCK, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD));
    MPI_CHK(MPI_Wait(&r, &st));
    int got = -1;
    MPI_CHK(MPI_Get_count(&st, vec, &got));
    CHECK_EQ(got, count, "MPI_Get_count of the vector");
    for (int b = 0; b < count; b++)
        for (int j = 0; j < STRIDE; j++) {
            double want = j < BLOCK ? peer * 1e7 + b * BLOCK + j : -1.0;
            double have = recv[(size_t)b * STRIDE + j];
            if (have != want)
                FAIL("count %d: element %d of block %d is %g, expected %g", count, j, b, have, want);
        }
    free(recv);
    free(send);
}

/* A send type under test: `per` doubles (or struct instances) make one instance; `flat` is
 * the contiguous type with the same signature (`flat_per` of it per instance); `recv` a
 * non-contiguous type with the same signature per instance. */
struct send_case {
    const char *name;
    MPI_Datatype send, flat, recv;
    int flat_per;
};

enum { MODE_SEND, MODE_ISEND, MODE_SSEND, MODE_PERSISTENT, MODE_RSEND, MODE_BSEND, MODES };
static const char *mode_names[MODES] = {"MPI_Send", "MPI_Isend", "MPI_Ssend", "MPI_Send_init", "MPI_Rsend", "MPI_Bsend"};

static unsigned char fill_byte(int rank, size_t i)
{
    /* Never periodic at a power of two: a piece sent from the wrong place shows. */
    return (unsigned char)(((i * 0x9E3779B97F4A7C15ull) >> 56) ^ (unsigned)(rank * 37));
}

static size_t extent_of(MPI_Datatype t)
{
    MPI_Aint lb, extent;
    MPI_CHK(MPI_Type_get_extent(t, &lb, &extent));
    return (size_t)extent;
}

/* Both ranks send `count` instances of c->send to each other, received contiguously (flat) or
 * as c->recv, and check every byte of the receive buffer, gaps included. */
static void send_exchange(const struct send_case *c, int count, int peer, int into_blocks, int mode)
{
    int size;
    MPI_CHK(MPI_Type_size(c->send, &size));
    size_t bytes = (size_t)size * count;
    size_t send_span = extent_of(c->send) * count;
    unsigned char *send = malloc(send_span), *theirs = malloc(send_span);
    for (size_t i = 0; i < send_span; i++) {
        send[i] = fill_byte(t_rank, i);
        theirs[i] = fill_byte(peer, i);
    }
    /* What the peer's message is: its data packed (our MPI_Pack, tested in datatypes.c). */
    unsigned char *packed = malloc(bytes + 1);
    int pos = 0;
    MPI_CHK(MPI_Pack(theirs, count, c->send, packed, (int)bytes + 1, &pos, MPI_COMM_WORLD));
    CHECK_EQ(pos, bytes, "packed size");

    MPI_Datatype rtype = into_blocks ? c->recv : c->flat;
    int rcount = into_blocks ? count : count * c->flat_per;
    size_t recv_span = extent_of(rtype) * rcount;
    unsigned char *recv = malloc(recv_span), *want = malloc(recv_span);
    memset(recv, 0xEE, recv_span);
    memset(want, 0xEE, recv_span);
    pos = 0;
    MPI_CHK(MPI_Unpack(packed, (int)bytes, &pos, want, rcount, rtype, MPI_COMM_WORLD));

    MPI_Request r, s;
    MPI_Status st;
    MPI_CHK(MPI_Irecv(recv, rcount, rtype, peer, 8, MPI_COMM_WORLD, &r));
    /* A ready send needs the receive posted: exchange a token after posting ours. */
    if (mode == MODE_RSEND)
        MPI_CHK(MPI_Sendrecv(NULL, 0, MPI_INT, peer, 9, NULL, 0, MPI_INT, peer, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    switch (mode) {
    case MODE_SEND:
        MPI_CHK(MPI_Send(send, count, c->send, peer, 8, MPI_COMM_WORLD));
        break;
    case MODE_ISEND:
        MPI_CHK(MPI_Isend(send, count, c->send, peer, 8, MPI_COMM_WORLD, &s));
        MPI_CHK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        break;
    case MODE_SSEND:
        MPI_CHK(MPI_Ssend(send, count, c->send, peer, 8, MPI_COMM_WORLD));
        break;
    case MODE_PERSISTENT:
        MPI_CHK(MPI_Send_init(send, count, c->send, peer, 8, MPI_COMM_WORLD, &s));
        MPI_CHK(MPI_Start(&s));
        MPI_CHK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Request_free(&s));
        break;
    case MODE_RSEND:
        MPI_CHK(MPI_Rsend(send, count, c->send, peer, 8, MPI_COMM_WORLD));
        break;
    case MODE_BSEND:
        MPI_CHK(MPI_Bsend(send, count, c->send, peer, 8, MPI_COMM_WORLD));
        break;
    }
    MPI_CHK(MPI_Wait(&r, &st));
    int got = -1;
    MPI_CHK(MPI_Get_count(&st, rtype, &got));
    CHECK_EQ(got, rcount, "MPI_Get_count of the receive");
    for (size_t i = 0; i < recv_span; i++)
        if (recv[i] != want[i])
            FAIL("%s x %d by %s into %s: byte %zu of %zu is %d, expected %d", c->name, count, mode_names[mode],
                 into_blocks ? "blocks" : "a contiguous buffer", i, recv_span, recv[i], want[i]);
    /* The send buffer is the sender's own: untouched. */
    for (size_t i = 0; i < send_span; i++)
        if (send[i] != fill_byte(t_rank, i))
            FAIL("%s x %d by %s: the send buffer changed at byte %zu", c->name, count, mode_names[mode], i);
    free(send);
    free(theirs);
    free(packed);
    free(recv);
    free(want);
}

static void send_cases(int peer)
{
    /* vector: 100 doubles every 150 (one instance = one row). */
    MPI_Datatype vec1, row;
    MPI_CHK(MPI_Type_vector(1, 100, 150, MPI_DOUBLE, &vec1));
    MPI_CHK(MPI_Type_create_resized(vec1, 0, 150 * sizeof(double), &row));
    MPI_CHK(MPI_Type_commit(&row));
    /* indexed: 100 doubles in blocks of 30, 50, 20 at uneven places (extent 137 doubles). */
    int lens[3] = {30, 50, 20}, displs[3] = {0, 41, 117};
    MPI_Datatype idx;
    MPI_CHK(MPI_Type_indexed(3, lens, displs, MPI_DOUBLE, &idx));
    MPI_CHK(MPI_Type_commit(&idx));
    /* Received as: 100 doubles in two blocks of 50, 10 apart. */
    MPI_Datatype halves1, halves;
    MPI_CHK(MPI_Type_vector(2, 50, 60, MPI_DOUBLE, &halves1));
    MPI_CHK(MPI_Type_create_resized(halves1, 0, 125 * sizeof(double), &halves));
    MPI_CHK(MPI_Type_commit(&halves));
    /* struct: 40 ints, 30 doubles, 200 chars with holes; "flat": the same without holes. */
    int blens[3] = {40, 30, 200};
    MPI_Aint sdispl[3] = {0, 256, 640}, fdispl[3] = {0, 160, 400};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    MPI_Datatype st1, strct, flat1, flat;
    MPI_CHK(MPI_Type_create_struct(3, blens, sdispl, types, &st1));
    MPI_CHK(MPI_Type_create_resized(st1, 0, 1024, &strct));
    MPI_CHK(MPI_Type_commit(&strct));
    MPI_CHK(MPI_Type_create_struct(3, blens, fdispl, types, &flat1));
    MPI_CHK(MPI_Type_create_resized(flat1, 0, 600, &flat));
    MPI_CHK(MPI_Type_commit(&flat));

    struct send_case cases[3] = {
        {"vector", row, MPI_DOUBLE, idx, 100},
        {"indexed", idx, MPI_DOUBLE, halves, 100},
        {"struct", strct, flat, strct, 1},
    };
    /* Per instance 800 bytes (vector, indexed) or 600 (struct): 3 go eagerly, 50 by
     * rendezvous on shared memory (eagerly over TCP), 1000 by rendezvous, 3000 in several
     * segments with more pieces than one process_vm_readv takes. */
    int counts[4] = {3, 50, 1000, 3000};
    int k = 0;
    for (int c = 0; c < 3; c++)
        for (int n = 0; n < 4; n++)
            for (int into_blocks = 0; into_blocks < 2; into_blocks++)
                send_exchange(&cases[c], counts[n], peer, into_blocks, k++ % MODES);
    /* Every mode at a rendezvous size too, into blocks. */
    for (int mode = 0; mode < MODES; mode++)
        send_exchange(&cases[mode % 3], 1000, peer, 1, mode);

    MPI_Datatype frees[] = {row, vec1, idx, halves1, halves, st1, strct, flat1, flat};
    for (size_t i = 0; i < sizeof frees / sizeof frees[0]; i++)
        MPI_CHK(MPI_Type_free(&frees[i]));
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "fallback"))
        setenv("BB_SHM_SINGLE_COPY", "0", 1);
    if (argc > 1 && !strcmp(argv[1], "tcp"))
        setenv("BB_ROUTES", "tcp", 1);
    t_init(&argc, &argv, "datatypes_large", 2);
    MPI_Datatype vec;
    MPI_CHK(MPI_Type_vector(1, BLOCK, STRIDE, MPI_DOUBLE, &vec));
    MPI_Datatype row;
    /* One instance = BLOCK doubles, extent STRIDE doubles: count instances form the pattern. */
    MPI_CHK(MPI_Type_create_resized(vec, 0, STRIDE * sizeof(double), &row));
    MPI_CHK(MPI_Type_commit(&row));
    int peer = t_rank ^ 1;
    if (peer < t_size) {
        exchange(3, peer, row);    /* 2.4 KB: eager */
        exchange(50, peer, row);   /* 40 KB: rendezvous */
        exchange(1000, peer, row); /* 800 KB: rendezvous, several segments */
        /* Buffered sends copy anyway: room for the largest message and its overhead. */
        int bsize = 8 << 20;
        void *bbuf = malloc(bsize);
        MPI_CHK(MPI_Buffer_attach(bbuf, bsize));
        send_cases(peer);
        MPI_CHK(MPI_Buffer_detach(&bbuf, &bsize));
        free(bbuf);
    }
    MPI_CHK(MPI_Type_free(&row));
    MPI_CHK(MPI_Type_free(&vec));
    return t_finish();
}
