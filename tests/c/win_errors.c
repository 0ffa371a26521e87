/* Window error handlers: a new window has MPI_ERRORS_ARE_FATAL; MPI_Win_create_errhandler,
 * MPI_Win_set_errhandler, MPI_Win_get_errhandler, MPI_Win_call_errhandler (the handler gets the
 * window and the code, a user class too), the handler called by a bad RMA call with the window
 * and the call's error code, which the call then returns; MPI_ERRORS_RETURN returning each
 * class (bad target rank, negative displacement, and on Billboard: data outside the target
 * window with a message naming rank, displacement and size, an RMA call outside an epoch, a
 * datatype size mismatch); a freed handler still attached keeps working. Any N >= 1. */
#include "common.h"

static int calls, last_code;
static MPI_Win last_win = MPI_WIN_NULL;
static void on_error(MPI_Win *win, int *code, ...)
{
    calls++;
    last_win = *win;
    last_code = *code;
}

static int eclass(int code)
{
    int c = -1;
    MPI_CHK(MPI_Error_class(code, &c));
    return c;
}

/* The call must fail with `cls`, its message must mention every non-NULL needle. */
#define EXPECT_ERR(call, cls, n1, n2, n3)                                                                              \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        CHECK(rc_ != MPI_SUCCESS, "%s succeeded, expected %s", #call, #cls);                                           \
        CHECK(eclass(rc_) == (cls), "%s: class %d (%s), expected %s", #call, eclass(rc_), t_errstr(rc_), #cls);       \
        const char *ns_[3] = {(n1), (n2), (n3)};                                                                       \
        for (int k_ = 0; k_ < 3; k_++)                                                                                 \
            CHECK(!ns_[k_] || strstr(t_errstr(rc_), ns_[k_]), "%s: message '%s' does not mention '%s'", #call,         \
                  t_errstr(rc_), ns_[k_]);                                                                             \
    } while (0)

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_errors", 1);
    const int me = t_rank, n = t_size;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int liblen = 0;
    MPI_Get_library_version(lib, &liblen);
    const int billboard = strstr(lib, "Billboard") != NULL;

    int mem[8] = {0};
    MPI_Win win;
    MPI_CHK(MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    MPI_CHK(MPI_Win_get_errhandler(win, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "a new window's handler is %#x, expected MPI_ERRORS_ARE_FATAL", (unsigned)eh);

    /* ---- MPI_ERRORS_RETURN: the class comes back. */
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_CHK(MPI_Win_get_errhandler(win, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "handler %#x after set, expected MPI_ERRORS_RETURN", (unsigned)eh);
    int v = 1;
    if (billboard)
        EXPECT_ERR(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC, "MPI_Win_fence", NULL, NULL);
    MPI_CHK(MPI_Win_fence(0, win));
    EXPECT_ERR(MPI_Put(&v, 1, MPI_INT, n, 0, 1, MPI_INT, win), MPI_ERR_RANK, NULL, NULL, NULL);
    EXPECT_ERR(MPI_Get(&v, 1, MPI_INT, 0, -1, 1, MPI_INT, win), MPI_ERR_DISP, NULL, NULL, NULL);
    if (billboard) {
        /* Ints 6..9 of an 8-int window: bytes [24, 40) of 32. */
        int four[4] = {0};
        EXPECT_ERR(MPI_Put(four, 4, MPI_INT, 0, 6, 4, MPI_INT, win), MPI_ERR_RMA_RANGE, "rank 0", "displacement 6",
                   "32 bytes");
        EXPECT_ERR(MPI_Accumulate(four, 3, MPI_INT, 0, 0, 4, MPI_INT, MPI_SUM, win), MPI_ERR_TYPE, "12 bytes",
                   "16", NULL);
        EXPECT_ERR(MPI_Accumulate(four, 2, MPI_INT, 0, 0, 2, MPI_INT, MPI_MAXLOC, win), MPI_ERR_OP, NULL, NULL, NULL);
        EXPECT_ERR(MPI_Win_fence(12345, win), MPI_ERR_ASSERT, "12345", NULL, NULL);
    }
    MPI_CHK(MPI_Win_fence(0, win));

    /* ---- A user handler: set, get, called by MPI_Win_call_errhandler. */
    MPI_Errhandler mine;
    MPI_CHK(MPI_Win_create_errhandler(on_error, &mine));
    MPI_CHK(MPI_Win_set_errhandler(win, mine));
    MPI_CHK(MPI_Win_get_errhandler(win, &eh));
    CHECK(eh == mine, "MPI_Win_get_errhandler gave %#x, expected %#x", (unsigned)eh, (unsigned)mine);
    MPI_CHK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(calls == 1 && last_win == win && last_code == MPI_ERR_OTHER,
          "after MPI_Win_call_errhandler: %d calls, window %#x (expected %#x), code %d (expected %d)", calls,
          (unsigned)last_win, (unsigned)win, last_code, MPI_ERR_OTHER);
    int myclass = -1;
    MPI_CHK(MPI_Add_error_class(&myclass));
    MPI_CHK(MPI_Win_call_errhandler(win, myclass));
    CHECK(calls == 2 && last_code == myclass, "user class: %d calls, code %d, expected %d", calls, last_code, myclass);

    /* ---- A bad RMA call runs the handler with the window and its code, then returns it. */
    int rc = MPI_Put(&v, 1, MPI_INT, n + 3, 0, 1, MPI_INT, win);
    CHECK(rc != MPI_SUCCESS, "MPI_Put to rank %d succeeded", n + 3);
    CHECK(calls == 3 && last_win == win, "bad MPI_Put: %d handler calls (expected 3), window %#x (expected %#x)",
          calls, (unsigned)last_win, (unsigned)win);
    CHECK(last_code == rc && eclass(rc) == MPI_ERR_RANK, "bad MPI_Put: handler code %d, returned %d, class %d",
          last_code, rc, eclass(rc));
    /* Good calls do not call it. */
    MPI_CHK(MPI_Put(&v, 1, MPI_INT, me, 0, 1, MPI_INT, win));
    MPI_CHK(MPI_Win_fence(0, win));
    CHECK_EQ(calls, 3, "handler calls after good calls");
    CHECK_EQ(mem[0], 1, "the good Put");

    /* ---- A freed handler stays with the window that has it. */
    MPI_CHK(MPI_Errhandler_free(&mine));
    CHECK(mine == MPI_ERRHANDLER_NULL, "MPI_Errhandler_free did not reset the handle");
    MPI_CHK(MPI_Win_call_errhandler(win, MPI_ERR_WIN));
    CHECK(calls == 4 && last_code == MPI_ERR_WIN, "freed handler: %d calls, code %d", calls, last_code);

    /* ---- Two windows keep their own handlers. */
    MPI_Win other;
    MPI_CHK(MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &other));
    MPI_CHK(MPI_Win_get_errhandler(other, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "the second window's handler is %#x", (unsigned)eh);
    MPI_CHK(MPI_Win_set_errhandler(other, MPI_ERRORS_RETURN));
    MPI_CHK(MPI_Win_fence(0, other));
    EXPECT_ERR(MPI_Get(&v, 1, MPI_INT, -5, 0, 1, MPI_INT, other), MPI_ERR_RANK, NULL, NULL, NULL);
    CHECK_EQ(calls, 4, "another window's error does not reach this handler");
    MPI_CHK(MPI_Win_fence(0, other));
    MPI_CHK(MPI_Win_free(&other));

    MPI_CHK(MPI_Win_fence(0, win));
    MPI_CHK(MPI_Win_free(&win));
    return t_finish();
}
