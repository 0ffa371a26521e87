/* Partitioned communication (MPI 4.0 chapter 4) around a ring: MPI_Psend_init to the right,
 * MPI_Precv_init from the left, PARTS parts of COUNT ints, started ROUNDS times. The sender
 * marks its parts ready in a different order each round (MPI_Pready one by one backwards,
 * MPI_Pready_range, MPI_Pready_list shuffled); the receiver watches MPI_Parrived until every
 * part is there (on Billboard a part arrives while others are not yet ready: the sender readies
 * half, the receiver waits for those, then the sender readies the rest); then both complete (MPI_Wait,
 * MPI_Waitall, MPI_Test) and the data is checked. A strided datatype; bad arguments. The two
 * sides may cut the message differently (MPI 4.0 section 4.2.2): 8 sender parts against 4, 16
 * and 3 receiver parts, and 6 plain ints against 3 parts of a strided type. Any N >= 1. */
#include "common.h"

enum { PARTS = 8, COUNT = 100, ROUNDS = 20 };

static int error_class(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

/* Waits until every part in [lo, hi) has arrived, by MPI_Parrived. */
static void await_parts(MPI_Request r, int lo, int hi, int round)
{
    double t0 = MPI_Wtime();
    for (int p = lo; p < hi; p++) {
        int flag = 0;
        while (!flag) {
            MPI_CHK(MPI_Parrived(r, p, &flag));
            CHECK(MPI_Wtime() - t0 < 30, "round %d: partition %d never arrived", round, p);
        }
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "partitioned", 1);
    const int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    static int out[PARTS * COUNT], in[PARTS * COUNT];
    MPI_Request rq[2];
    MPI_CHK(MPI_Psend_init(out, PARTS, COUNT, MPI_INT, right, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]));
    MPI_CHK(MPI_Precv_init(in, PARTS, COUNT, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[1]));
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < PARTS * COUNT; i++)
            out[i] = t_rank * 1000000 + round * 1000 + i, in[i] = -1;
        MPI_CHK(MPI_Startall(2, rq));
        /* The first half, backwards, one by one. */
        for (int p = PARTS / 2 - 1; p >= 0; p--)
            MPI_CHK(MPI_Pready(p, rq[0]));
#ifdef BILLBOARD_MPI
        /* Arrived parts are readable before the rest is even ready. (MPICH 4.0.2 sends nothing
         * until every part is ready: against its header this is left out.) */
        await_parts(rq[1], 0, PARTS / 2, round);
        for (int i = 0; i < PARTS / 2 * COUNT; i++)
            CHECK_EQ(in[i], left * 1000000 + round * 1000 + i, "an arrived partition's data before completion");
#endif
        if (round % 2 == 0) {
            MPI_CHK(MPI_Pready_range(PARTS / 2, PARTS - 1, rq[0]));
        } else {
            int list[PARTS / 2];
            for (int k = 0; k < PARTS / 2; k++)
                list[k] = PARTS / 2 + (k * 3 + round) % (PARTS / 2);
            MPI_CHK(MPI_Pready_list(PARTS / 2, list, rq[0]));
        }
        await_parts(rq[1], 0, PARTS, round);
        if (round % 3 == 0) {
            MPI_CHK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        } else if (round % 3 == 1) {
            MPI_CHK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
            MPI_CHK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        } else {
            t_wait_bounded(&rq[0], MPI_STATUS_IGNORE, 30, "partitioned send");
            t_wait_bounded(&rq[1], MPI_STATUS_IGNORE, 30, "partitioned receive");
        }
        CHECK(rq[0] != MPI_REQUEST_NULL && rq[1] != MPI_REQUEST_NULL, "a partitioned request became null");
        for (int i = 0; i < PARTS * COUNT; i++)
            CHECK_EQ(in[i], left * 1000000 + round * 1000 + i, "received element");
    }
#ifdef BILLBOARD_MPI
    /* Bad arguments are errors (MPICH 4.0.2 checks neither: left to our header). */
    MPI_CHK(MPI_Start(&rq[0]));
    CHECK_EQ(error_class(MPI_Pready(PARTS, rq[0])), MPI_ERR_ARG, "MPI_Pready of a partition out of range");
    int flag;
    CHECK(MPI_Parrived(rq[0], 0, &flag) != MPI_SUCCESS, "MPI_Parrived on a partitioned send succeeded");
    MPI_CHK(MPI_Pready_range(0, PARTS - 1, rq[0]));
    CHECK_EQ(error_class(MPI_Pready(0, rq[0])), MPI_ERR_ARG, "MPI_Pready of a partition already ready");
    MPI_CHK(MPI_Start(&rq[1]));
    MPI_CHK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
#endif
    MPI_CHK(MPI_Request_free(&rq[0]));
    MPI_CHK(MPI_Request_free(&rq[1]));

    /* A strided datatype: every other int, 3 parts of 4 elements. */
    {
        int sbuf[24], rbuf[24];
        MPI_Datatype every_other;
        MPI_CHK(MPI_Type_vector(4, 1, 2, MPI_INT, &every_other));
        MPI_CHK(MPI_Type_create_resized(every_other, 0, 8 * sizeof(int), &every_other));
        MPI_CHK(MPI_Type_commit(&every_other));
        for (int i = 0; i < 24; i++)
            sbuf[i] = t_rank * 100 + i, rbuf[i] = -1;
        MPI_Request s, r;
        MPI_CHK(MPI_Precv_init(rbuf, 3, 1, every_other, left, 8, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
        MPI_CHK(MPI_Psend_init(sbuf, 3, 1, every_other, right, 8, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
        MPI_CHK(MPI_Start(&r));
        MPI_CHK(MPI_Start(&s));
        MPI_CHK(MPI_Pready_range(0, 2, s));
        MPI_CHK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int i = 0; i < 24; i++)
            CHECK_EQ(rbuf[i], i % 2 ? -1 : left * 100 + i, "strided partitioned element");
        MPI_CHK(MPI_Request_free(&s));
        MPI_CHK(MPI_Request_free(&r));
        MPI_CHK(MPI_Type_free(&every_other));
    }

    /* Different numbers of parts on the two sides: 48 ints sent in 8 parts, received in 4, 16 and
     * 3 (the sides' parts straddle each other); then 6 plain ints against 3 parts of 2 ints of a
     * strided type, the sender readying backwards. */
    {
        int sbuf[48], rbuf[48];
        const int cuts[3] = {4, 16, 3};
        for (int k = 0; k < 3; k++) {
            for (int i = 0; i < 48; i++)
                sbuf[i] = t_rank * 1000 + k * 100 + i, rbuf[i] = -1;
            MPI_Request s, r;
            MPI_CHK(MPI_Precv_init(rbuf, cuts[k], 48 / cuts[k], MPI_INT, left, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
            MPI_CHK(MPI_Psend_init(sbuf, 8, 6, MPI_INT, right, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
            MPI_CHK(MPI_Start(&r));
            MPI_CHK(MPI_Start(&s));
            for (int p = 7; p >= 0; p--)
                MPI_CHK(MPI_Pready(p, s));
            await_parts(r, 0, cuts[k], k);
            MPI_CHK(MPI_Wait(&s, MPI_STATUS_IGNORE));
            MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            for (int i = 0; i < 48; i++)
                CHECK(rbuf[i] == left * 1000 + k * 100 + i, "%d receiver parts against 8: element %d = %d", cuts[k], i,
                      rbuf[i]);
            MPI_CHK(MPI_Request_free(&s));
            MPI_CHK(MPI_Request_free(&r));
        }
        MPI_Datatype pair;
        MPI_CHK(MPI_Type_vector(2, 1, 3, MPI_INT, &pair));
        MPI_CHK(MPI_Type_create_resized(pair, 0, 6 * sizeof(int), &pair));
        MPI_CHK(MPI_Type_commit(&pair));
        for (int i = 0; i < 18; i++)
            sbuf[i] = t_rank * 100 + i, rbuf[i] = -1;
        MPI_Request s, r;
        MPI_CHK(MPI_Precv_init(rbuf, 3, 1, pair, left, 10, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
        MPI_CHK(MPI_Psend_init(sbuf, 6, 1, MPI_INT, right, 10, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
        MPI_CHK(MPI_Start(&r));
        MPI_CHK(MPI_Start(&s));
        for (int p = 5; p >= 0; p--)
            MPI_CHK(MPI_Pready(p, s));
        MPI_CHK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        /* Receiver part j holds ints 2j and 2j+1 at rbuf[6j] and rbuf[6j+3]. */
        for (int i = 0; i < 18; i++) {
            int want = i % 3 ? -1 : left * 100 + (i / 6) * 2 + (i % 6) / 3;
            CHECK(rbuf[i] == want, "strided receiver parts against plain ones: element %d = %d, want %d", i, rbuf[i],
                  want);
        }
        MPI_CHK(MPI_Request_free(&s));
        MPI_CHK(MPI_Request_free(&r));
        MPI_CHK(MPI_Type_free(&pair));
    }
    return t_finish();
}
