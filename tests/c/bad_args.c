/* Bad arguments are errors, never crashes: under MPI_ERRORS_RETURN each call below returns the
 * class MPI 4.0 (and MPICH 4.0.2) gives it. NULL output pointers (rank, size, new communicator,
 * request, flag, index, status where not MPI_STATUS_IGNORE...) are MPI_ERR_ARG; negative
 * counts MPI_ERR_COUNT; MPI_IN_PLACE where an argument cannot take it MPI_ERR_BUFFER; null
 * handles their own class. On Billboard the messages also name the handle and the valid ranks
 * as a program writes them. Collectives are called on MPI_COMM_SELF, where an error of one
 * rank leaves no other waiting. Any N >= 1. */
#include "common.h"

static int eclass(int rc)
{
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

#define EXPECT(call, cls)                                                                                              \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        if (eclass(rc_) != (cls))                                                                                      \
            FAIL("%s: expected class %d (%s), got %d (%s)", #call, (cls), #cls, eclass(rc_),                           \
                 rc_ == MPI_SUCCESS ? "MPI_SUCCESS" : t_errstr(rc_));                                                  \
    } while (0)

/* On Billboard, the message of `rc` must contain `text`. */
static void expect_message(int rc, const char *text, const char *what)
{
    if (!t_on_billboard())
        return;
    const char *s = t_errstr(rc);
    CHECK(strstr(s, text) != NULL, "%s: message \"%s\" does not contain \"%s\"", what, s, text);
}

static void null_outputs(void)
{
    int x = 0, flag, idx, out, ind[1];
    MPI_Comm c;
    MPI_Group g;
    MPI_Datatype t;
    MPI_Errhandler eh;
    MPI_Request r = MPI_REQUEST_NULL, rs[1] = {MPI_REQUEST_NULL};
    MPI_Status st, sts[1];

    EXPECT(MPI_Comm_rank(MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    expect_message(MPI_Comm_rank(MPI_COMM_WORLD, NULL), "rank", "MPI_Comm_rank(NULL)");
    EXPECT(MPI_Comm_size(MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Comm_dup(MPI_COMM_SELF, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Comm_split(MPI_COMM_SELF, 0, 0, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Comm_group(MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Comm_get_errhandler(MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Type_size(MPI_INT, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Type_contiguous(2, MPI_INT, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Isend(&x, 1, MPI_INT, t_rank, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Irecv(&x, 1, MPI_INT, t_rank, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    expect_message(MPI_Irecv(&x, 1, MPI_INT, t_rank, 0, MPI_COMM_WORLD, NULL), "request", "MPI_Irecv(NULL)");
    EXPECT(MPI_Send_init(&x, 1, MPI_INT, t_rank, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Wait(NULL, &st), MPI_ERR_ARG);
    EXPECT(MPI_Wait(&r, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Test(&r, NULL, &st), MPI_ERR_ARG);
    EXPECT(MPI_Test(&r, &flag, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Request_get_status(r, NULL, &st), MPI_ERR_ARG);
    EXPECT(MPI_Waitall(1, NULL, sts), MPI_ERR_ARG);
    EXPECT(MPI_Waitall(1, rs, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Testall(1, rs, NULL, sts), MPI_ERR_ARG);
    EXPECT(MPI_Waitany(1, rs, NULL, &st), MPI_ERR_ARG);
    EXPECT(MPI_Testany(1, rs, &idx, NULL, &st), MPI_ERR_ARG);
    EXPECT(MPI_Waitsome(1, rs, NULL, ind, sts), MPI_ERR_ARG);
    EXPECT(MPI_Waitsome(1, rs, &out, NULL, sts), MPI_ERR_ARG);
    EXPECT(MPI_Testsome(1, rs, NULL, ind, sts), MPI_ERR_ARG);
    EXPECT(MPI_Iprobe(MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, NULL, MPI_STATUS_IGNORE), MPI_ERR_ARG);
    EXPECT(MPI_Get_count(&st, MPI_INT, NULL), MPI_ERR_ARG);

    /* A receive with a NULL status fails before it matches: the message is still there. */
    MPI_Request sr;
    x = 42;
    MPI_CHK(MPI_Isend(&x, 1, MPI_INT, t_rank, 7, MPI_COMM_WORLD, &sr));
    int y = 0;
    EXPECT(MPI_Recv(&y, 1, MPI_INT, t_rank, 7, MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    MPI_CHK(MPI_Recv(&y, 1, MPI_INT, t_rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_EQ(y, 42, "receive after a refused MPI_Recv(status NULL)");
    MPI_CHK(MPI_Wait(&sr, MPI_STATUS_IGNORE));

    /* Nothing was made by the failed calls. */
    (void)c;
    (void)g;
    (void)t;
    (void)eh;
}

static void negative_counts(void)
{
    int x = 0, idx;
    MPI_Request rs[1] = {MPI_REQUEST_NULL};
    MPI_Status st;
    EXPECT(MPI_Waitall(-1, rs, MPI_STATUSES_IGNORE), MPI_ERR_COUNT);
    EXPECT(MPI_Waitany(-1, rs, &idx, &st), MPI_ERR_COUNT);
    EXPECT(MPI_Startall(-1, rs), MPI_ERR_COUNT);
    EXPECT(MPI_Send(&x, -1, MPI_INT, t_rank, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
}

static void in_place_misuse(void)
{
    int x = 1, y = 0;
    MPI_Comm self = MPI_COMM_SELF;
    EXPECT(MPI_Allreduce(MPI_IN_PLACE, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, self), MPI_ERR_BUFFER);
    EXPECT(MPI_Allreduce(&x, &x, 1, MPI_INT, MPI_SUM, self), MPI_ERR_BUFFER);
    EXPECT(MPI_Reduce(&x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, 0, self), MPI_ERR_BUFFER);
    EXPECT(MPI_Allgather(&x, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, self), MPI_ERR_BUFFER);
    EXPECT(MPI_Gather(&x, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, 0, self), MPI_ERR_BUFFER);
    EXPECT(MPI_Scatter(MPI_IN_PLACE, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, 0, self), MPI_ERR_BUFFER);
    EXPECT(MPI_Alltoall(&x, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, self), MPI_ERR_BUFFER);
    EXPECT(MPI_Scan(&x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, self), MPI_ERR_BUFFER);
    EXPECT(MPI_Reduce_scatter_block(&x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, self), MPI_ERR_BUFFER);
    /* The forms MPI allows still work. */
    MPI_CHK(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, self));
    MPI_CHK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, self));
    CHECK_EQ(y, 1, "MPI_Allreduce on MPI_COMM_SELF");
}

static void null_handles(void)
{
    int x = 0;
    int rc = MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_NULL);
    CHECK_EQ(eclass(rc), MPI_ERR_COMM, "MPI_Send on MPI_COMM_NULL");
    expect_message(rc, "MPI_COMM_NULL", "MPI_Send on MPI_COMM_NULL");
    rc = MPI_Comm_rank(MPI_COMM_NULL, &x);
    CHECK_EQ(eclass(rc), MPI_ERR_COMM, "MPI_Comm_rank on MPI_COMM_NULL");
    expect_message(rc, "MPI_COMM_NULL", "MPI_Comm_rank on MPI_COMM_NULL");
    rc = MPI_Send(&x, 1, MPI_DATATYPE_NULL, t_rank, 0, MPI_COMM_WORLD);
    CHECK_EQ(eclass(rc), MPI_ERR_TYPE, "MPI_Send of MPI_DATATYPE_NULL");
    expect_message(rc, "MPI_DATATYPE_NULL", "MPI_Send of MPI_DATATYPE_NULL");
    MPI_Request r = MPI_REQUEST_NULL;
    rc = MPI_Start(&r);
    CHECK_EQ(eclass(rc), MPI_ERR_REQUEST, "MPI_Start of MPI_REQUEST_NULL");
    expect_message(rc, "MPI_REQUEST_NULL", "MPI_Start of MPI_REQUEST_NULL");
    /* A rank out of range names the valid ones as a program writes them. */
    rc = MPI_Send(&x, 1, MPI_INT, t_size, 0, MPI_COMM_WORLD);
    CHECK_EQ(eclass(rc), MPI_ERR_RANK, "MPI_Send to rank size");
    char want[64];
    if (t_size > 1)
        snprintf(want, sizeof want, "valid ranks 0 to %d", t_size - 1);
    else
        snprintf(want, sizeof want, "the only valid rank is 0");
    expect_message(rc, want, "MPI_Send to rank size");
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "bad_args", 1);
    null_outputs();
    negative_counts();
    in_place_misuse();
    null_handles();
    return t_finish();
}
