/* Probe, Iprobe, Mprobe, Improbe, Mrecv, Imrecv: status of a probe, probe does not consume,
 * matched probes remove the message from matching (a later Recv/probe cannot see it),
 * MPI_MESSAGE_NO_PROC for PROC_NULL, ANY_SOURCE/ANY_TAG. Any N >= 1. */
#include "common.h"

/* Iprobe in a bounded loop: FAIL instead of hanging. */
static void iprobe_until(int src, int tag, MPI_Comm comm, MPI_Status *st, const char *what)
{
    double t0 = MPI_Wtime();
    int flag = 0;
    while (!flag) {
        MPI_CHK(MPI_Iprobe(src, tag, comm, &flag, st));
        if (!flag && MPI_Wtime() - t0 > 20.0)
            FAIL("%s: Iprobe found no message within 20 s", what);
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "probe", 1);
    const int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;

    /* Iprobe of a tag nobody sends: flag 0. */
    {
        int flag = 1;
        MPI_Status st;
        MPI_CHK(MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, &st));
        CHECK_EQ(flag, 0, "Iprobe with no message");
    }

    /* Each rank sends 3 messages right: tag 1 (5 ints), tag 2 (100000 ints), tag 3 (0 ints). */
    int n2 = 100000;
    int *big = malloc(n2 * sizeof(int)), *rbig = malloc(n2 * sizeof(int));
    for (int i = 0; i < n2; i++)
        big[i] = t_rank + i;
    int small[5] = {t_rank, 1, 2, 3, 4};
    MPI_Request sr[3];
    MPI_CHK(MPI_Isend(small, 5, MPI_INT, right, 1, MPI_COMM_WORLD, &sr[0]));
    MPI_CHK(MPI_Isend(big, n2, MPI_INT, right, 2, MPI_COMM_WORLD, &sr[1]));
    MPI_CHK(MPI_Isend(NULL, 0, MPI_INT, right, 3, MPI_COMM_WORLD, &sr[2]));

    /* Blocking Probe on tag 2 reports size; probing twice sees the same message. */
    MPI_Status st;
    MPI_CHK(MPI_Probe(left, 2, MPI_COMM_WORLD, &st));
    int c = -1;
    MPI_CHK(MPI_Get_count(&st, MPI_INT, &c));
    CHECK_EQ(c, n2, "Probe count for tag 2");
    CHECK_EQ(st.MPI_SOURCE, left, "Probe source");
    CHECK_EQ(st.MPI_TAG, 2, "Probe tag");
    iprobe_until(MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &st, "second probe of tag 2");
    MPI_CHK(MPI_Get_count(&st, MPI_INT, &c));
    CHECK_EQ(c, n2, "Iprobe count for tag 2");
    /* ANY_TAG probe from left sees the first message sent (tag 1): non-overtaking. */
    MPI_CHK(MPI_Probe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    CHECK_EQ(st.MPI_TAG, 1, "Probe ANY_TAG finds the earliest message");
    MPI_CHK(MPI_Get_count(&st, MPI_BYTE, &c));
    CHECK_EQ(c, 5 * (int)sizeof(int), "Probe count in bytes for tag 1");

    /* Mprobe tag 2 removes it from matching; Iprobe on tag 2 then finds nothing. */
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_CHK(MPI_Mprobe(left, 2, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg != MPI_MESSAGE_NULL, "Mprobe returned MPI_MESSAGE_NULL");
    MPI_CHK(MPI_Get_count(&st, MPI_INT, &c));
    CHECK_EQ(c, n2, "Mprobe count");
    int flag = 1;
    MPI_CHK(MPI_Iprobe(left, 2, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    CHECK_EQ(flag, 0, "Iprobe after Mprobe took the message");
    memset(rbig, 0, n2 * sizeof(int));
    MPI_Status st2;
    MPI_CHK(MPI_Mrecv(rbig, n2, MPI_INT, &msg, &st2));
    CHECK(msg == MPI_MESSAGE_NULL, "Mrecv did not set the message to MPI_MESSAGE_NULL");
    CHECK_EQ(st2.MPI_SOURCE, left, "Mrecv source");
    CHECK_EQ(st2.MPI_TAG, 2, "Mrecv tag");
    for (int i = 0; i < n2; i++)
        if (rbig[i] != left + i)
            FAIL("Mrecv payload[%d]: expected %d, got %d", i, left + i, rbig[i]);

    /* Improbe tag 1 (bounded loop), Imrecv it. */
    {
        double t0 = MPI_Wtime();
        flag = 0;
        while (!flag) {
            MPI_CHK(MPI_Improbe(left, 1, MPI_COMM_WORLD, &flag, &msg, &st));
            if (!flag && MPI_Wtime() - t0 > 20.0)
                FAIL("Improbe found no message within 20 s");
        }
        int got[5] = {0};
        MPI_Request rr;
        MPI_CHK(MPI_Imrecv(got, 5, MPI_INT, &msg, &rr));
        CHECK(msg == MPI_MESSAGE_NULL, "Imrecv did not set the message to MPI_MESSAGE_NULL");
        t_wait_bounded(&rr, &st, 20.0, "Imrecv");
        CHECK_EQ(got[0], left, "Imrecv payload[0]");
        CHECK_EQ(got[4], 4, "Imrecv payload[4]");
        CHECK_EQ(st.MPI_TAG, 1, "Imrecv status tag");
    }

    /* Zero-byte message: probe and receive with ANY_SOURCE/ANY_TAG. */
    MPI_CHK(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st));
    CHECK_EQ(st.MPI_TAG, 3, "Mprobe of the zero-length message: tag");
    MPI_CHK(MPI_Get_count(&st, MPI_INT, &c));
    CHECK_EQ(c, 0, "zero-length message count");
    MPI_CHK(MPI_Mrecv(NULL, 0, MPI_INT, &msg, &st));
    CHECK_EQ(st.MPI_SOURCE, left, "zero-length Mrecv source");
    MPI_CHK(MPI_Waitall(3, sr, MPI_STATUSES_IGNORE));

    /* Improbe with nothing pending: flag 0. */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    flag = 1;
    MPI_CHK(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, MPI_STATUS_IGNORE));
    CHECK_EQ(flag, 0, "Improbe with nothing pending");

    /* Probes on MPI_PROC_NULL: immediate, source PROC_NULL, tag ANY_TAG, count 0;
     * Mprobe gives MPI_MESSAGE_NO_PROC, and Mrecv of it completes at once. */
    MPI_CHK(MPI_Probe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st));
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL, "Probe(PROC_NULL) source");
    CHECK_EQ(st.MPI_TAG, MPI_ANY_TAG, "Probe(PROC_NULL) tag");
    MPI_CHK(MPI_Get_count(&st, MPI_INT, &c));
    CHECK_EQ(c, 0, "Probe(PROC_NULL) count");
    flag = 0;
    MPI_CHK(MPI_Iprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &flag, &st));
    CHECK_EQ(flag, 1, "Iprobe(PROC_NULL) flag");
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL, "Iprobe(PROC_NULL) source");
    MPI_CHK(MPI_Mprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NO_PROC, "Mprobe(PROC_NULL) message: expected MPI_MESSAGE_NO_PROC (%#x), got %#x",
          (unsigned)MPI_MESSAGE_NO_PROC, (unsigned)msg);
    int dummy = 77;
    MPI_CHK(MPI_Mrecv(&dummy, 1, MPI_INT, &msg, &st));
    CHECK_EQ(dummy, 77, "Mrecv(MESSAGE_NO_PROC) changed the buffer");
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL, "Mrecv(MESSAGE_NO_PROC) source");
    CHECK(msg == MPI_MESSAGE_NULL, "Mrecv(MESSAGE_NO_PROC) did not null the message");
    flag = 0;
    MPI_CHK(MPI_Improbe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &flag, &msg, &st));
    CHECK(flag == 1 && msg == MPI_MESSAGE_NO_PROC, "Improbe(PROC_NULL): flag %d, message %#x", flag, (unsigned)msg);
    MPI_Request rr;
    MPI_CHK(MPI_Imrecv(&dummy, 1, MPI_INT, &msg, &rr));
    t_wait_bounded(&rr, MPI_STATUS_IGNORE, 5.0, "Imrecv(MESSAGE_NO_PROC)");

    /* Probe on a duplicated communicator does not see messages of the parent. */
    {
        MPI_Comm dup;
        MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
        int v = 5, w = 0;
        MPI_Request s1;
        MPI_CHK(MPI_Isend(&v, 1, MPI_INT, right, 11, MPI_COMM_WORLD, &s1));
        MPI_CHK(MPI_Probe(left, 11, MPI_COMM_WORLD, &st)); /* arrived */
        flag = 1;
        MPI_CHK(MPI_Iprobe(left, 11, dup, &flag, &st));
        CHECK_EQ(flag, 0, "Iprobe on a dup sees a message of the parent");
        MPI_CHK(MPI_Recv(&w, 1, MPI_INT, left, 11, MPI_COMM_WORLD, &st));
        MPI_CHK(MPI_Wait(&s1, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Comm_free(&dup));
    }

    free(big);
    free(rbig);
    return t_finish();
}
