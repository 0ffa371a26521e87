/* Errors: Error_class/Error_string on every predefined class; MPI_ERRORS_RETURN returning each
 * argument error class (rank, tag, count, type, comm, root, op, buffer, truncate) with a message
 * naming the bad value; user error handlers (Comm_create_errhandler, set, get, free,
 * Comm_call_errhandler); Add_error_class/code/string and MPI_LASTUSEDCODE. Any N >= 1. */
#include "common.h"

static int eclass(int code)
{
    int c = -1;
    if (MPI_Error_class(code, &c) != MPI_SUCCESS)
        FAIL("MPI_Error_class(%d) failed", code);
    return c;
}

/* The call must fail with `cls`, and its message must contain `needle` (if not NULL). */
#define EXPECT_ERR(call, cls, needle)                                                                                 \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        CHECK(rc_ != MPI_SUCCESS, "%s succeeded, expected error class %s", #call, #cls);                               \
        CHECK(eclass(rc_) == (cls), "%s: error class %d (%s), expected %s = %d", #call, eclass(rc_), t_errstr(rc_),    \
              #cls, (cls));                                                                                            \
        const char *n_ = (needle);                                                                                     \
        if (n_)                                                                                                        \
            CHECK(strstr(t_errstr(rc_), n_) != NULL, "%s: message '%s' does not mention '%s'", #call, t_errstr(rc_),   \
                  n_);                                                                                                 \
    } while (0)

static int handler_calls, handler_last_code;
static MPI_Comm handler_last_comm;
static void my_handler(MPI_Comm *comm, int *code, ...)
{
    handler_calls++;
    handler_last_comm = *comm;
    handler_last_code = *code;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "errors", 1);
    const int size = t_size;
    char num[32];

    /* ---- Predefined classes: Error_class is the identity, Error_string is non-empty; on
     * Billboard it names the class (MPI_ERR_SPAWN, MPI_ERR_PORT, MPI_ERR_SERVICE, MPI_ERR_NAME,
     * the MPI 4.0 classes and the tool interface's read "MPI_ERR_UNKNOWN: unknown error"). */
#define C(x) {x, #x}
    struct {
        int code;
        const char *name;
    } classes[] = {C(MPI_SUCCESS), C(MPI_ERR_BUFFER), C(MPI_ERR_COUNT), C(MPI_ERR_TYPE), C(MPI_ERR_TAG),
                   C(MPI_ERR_COMM), C(MPI_ERR_RANK), C(MPI_ERR_REQUEST), C(MPI_ERR_ROOT), C(MPI_ERR_GROUP),
                   C(MPI_ERR_OP), C(MPI_ERR_TOPOLOGY), C(MPI_ERR_DIMS), C(MPI_ERR_ARG), C(MPI_ERR_UNKNOWN),
                   C(MPI_ERR_TRUNCATE), C(MPI_ERR_OTHER), C(MPI_ERR_INTERN), C(MPI_ERR_IN_STATUS), C(MPI_ERR_PENDING),
                   C(MPI_ERR_KEYVAL), C(MPI_ERR_NO_MEM), C(MPI_ERR_BASE), C(MPI_ERR_INFO_KEY), C(MPI_ERR_INFO_VALUE),
                   C(MPI_ERR_INFO_NOKEY), C(MPI_ERR_SPAWN), C(MPI_ERR_PORT), C(MPI_ERR_SERVICE), C(MPI_ERR_NAME),
                   C(MPI_ERR_WIN), C(MPI_ERR_SIZE), C(MPI_ERR_DISP), C(MPI_ERR_INFO), C(MPI_ERR_LOCKTYPE),
                   C(MPI_ERR_ASSERT), C(MPI_ERR_RMA_CONFLICT), C(MPI_ERR_RMA_SYNC), C(MPI_ERR_FILE), C(MPI_ERR_NOT_SAME),
                   C(MPI_ERR_AMODE), C(MPI_ERR_UNSUPPORTED_DATAREP), C(MPI_ERR_UNSUPPORTED_OPERATION),
                   C(MPI_ERR_NO_SUCH_FILE), C(MPI_ERR_FILE_EXISTS), C(MPI_ERR_BAD_FILE), C(MPI_ERR_ACCESS),
                   C(MPI_ERR_NO_SPACE), C(MPI_ERR_QUOTA), C(MPI_ERR_READ_ONLY), C(MPI_ERR_FILE_IN_USE),
                   C(MPI_ERR_DUP_DATAREP), C(MPI_ERR_CONVERSION), C(MPI_ERR_IO), C(MPI_ERR_RMA_RANGE),
                   C(MPI_ERR_RMA_ATTACH), C(MPI_ERR_RMA_SHARED), C(MPI_ERR_RMA_FLAVOR), C(MPI_ERR_SESSION),
                   C(MPI_ERR_PROC_ABORTED), C(MPI_ERR_VALUE_TOO_LARGE), C(MPI_T_ERR_MEMORY),
                   C(MPI_T_ERR_NOT_INITIALIZED), C(MPI_T_ERR_CANNOT_INIT), C(MPI_T_ERR_INVALID_INDEX),
                   C(MPI_T_ERR_INVALID_ITEM), C(MPI_T_ERR_INVALID_HANDLE), C(MPI_T_ERR_OUT_OF_HANDLES),
                   C(MPI_T_ERR_OUT_OF_SESSIONS), C(MPI_T_ERR_INVALID_SESSION), C(MPI_T_ERR_CVAR_SET_NOT_NOW),
                   C(MPI_T_ERR_CVAR_SET_NEVER), C(MPI_T_ERR_PVAR_NO_STARTSTOP), C(MPI_T_ERR_PVAR_NO_WRITE),
                   C(MPI_T_ERR_PVAR_NO_ATOMIC), C(MPI_T_ERR_INVALID_NAME), C(MPI_T_ERR_INVALID),
                   C(MPI_T_ERR_NOT_SUPPORTED), C(MPIX_ERR_PROC_FAILED), C(MPIX_ERR_PROC_FAILED_PENDING),
                   C(MPIX_ERR_REVOKED), C(MPIX_ERR_EAGAIN), C(MPIX_ERR_NOREQ)};
#undef C
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int vlen = 0;
    MPI_CHK(MPI_Get_library_version(version, &vlen));
    const int billboard = strstr(version, "Billboard") != NULL;
    for (unsigned i = 0; i < sizeof classes / sizeof *classes; i++) {
        int c = classes[i].code;
        CHECK(c >= 0 && c <= MPI_ERR_LASTCODE, "class %d out of [0, MPI_ERR_LASTCODE=%d]", c, MPI_ERR_LASTCODE);
        CHECK_EQ(eclass(c), c, "Error_class of a predefined class");
        char s[MPI_MAX_ERROR_STRING];
        int len = -1;
        MPI_CHK(MPI_Error_string(c, s, &len));
        CHECK(len > 0 && len < MPI_MAX_ERROR_STRING && (int)strlen(s) == len, "Error_string(%d): len %d '%s'", c, len,
              s);
        CHECK(!billboard || strncmp(s, classes[i].name, strlen(classes[i].name)) == 0,
              "Error_string(%s = %d) names another class: '%s'", classes[i].name, c, s);
    }
    CHECK_EQ(MPI_SUCCESS, 0, "MPI_SUCCESS");

    /* ---- Argument errors under MPI_ERRORS_RETURN (set on WORLD and SELF by t_init). */
    int v[16] = {0};
    snprintf(num, sizeof num, "%d", size);
    EXPECT_ERR(MPI_Send(v, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK, num);
    EXPECT_ERR(MPI_Send(v, 1, MPI_INT, -7, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "-7");
    EXPECT_ERR(MPI_Recv(v, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_RANK, NULL);
    EXPECT_ERR(MPI_Send(v, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG, "-5");
    {
        int *ub, flag;
        MPI_CHK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
        if (*ub < 2147483647)
            EXPECT_ERR(MPI_Send(v, 1, MPI_INT, 0, *ub + 1, MPI_COMM_WORLD), MPI_ERR_TAG, NULL);
    }
    EXPECT_ERR(MPI_Send(v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "-1");
    EXPECT_ERR(MPI_Send(v, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, NULL);
    {
        MPI_Datatype unc; /* not committed */
        MPI_CHK(MPI_Type_contiguous(2, MPI_INT, &unc));
        EXPECT_ERR(MPI_Send(v, 1, unc, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, NULL);
        MPI_CHK(MPI_Type_free(&unc));
    }
    EXPECT_ERR(MPI_Send(v, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM, NULL);
    EXPECT_ERR(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM, NULL);
    snprintf(num, sizeof num, "%d", size + 2);
    EXPECT_ERR(MPI_Bcast(v, 1, MPI_INT, size + 2, MPI_COMM_WORLD), MPI_ERR_ROOT, num);
    EXPECT_ERR(MPI_Reduce(v, v + 4, 1, MPI_INT, MPI_SUM, -3, MPI_COMM_WORLD), MPI_ERR_ROOT, NULL);
    EXPECT_ERR(MPI_Allreduce(v, v + 4, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP, NULL);
    EXPECT_ERR(MPI_Send(NULL, 4, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER, NULL);
    EXPECT_ERR(MPI_Allreduce(v, v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER, NULL); /* aliased */
    EXPECT_ERR(MPI_Bsend(v, 4, MPI_INT, t_rank, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER, NULL);

    /* Truncation: 10 ints into a 5-int buffer (to self). */
    {
        int ten[10], five[5];
        for (int i = 0; i < 10; i++)
            ten[i] = i;
        MPI_Request r;
        MPI_Status st;
        MPI_CHK(MPI_Isend(ten, 10, MPI_INT, t_rank, 3, MPI_COMM_WORLD, &r));
        EXPECT_ERR(MPI_Recv(five, 5, MPI_INT, t_rank, 3, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE, NULL);
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        /* Nonblocking: the error is returned by Wait. */
        MPI_Request rr;
        MPI_CHK(MPI_Isend(ten, 10, MPI_INT, t_rank, 4, MPI_COMM_WORLD, &r));
        MPI_CHK(MPI_Irecv(five, 5, MPI_INT, t_rank, 4, MPI_COMM_WORLD, &rr));
        EXPECT_ERR(MPI_Wait(&rr, &st), MPI_ERR_TRUNCATE, NULL);
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        /* In a Waitall the call returns MPI_ERR_IN_STATUS and the status carries the class. */
        MPI_Request two[2];
        MPI_Status sts[2];
        MPI_CHK(MPI_Isend(ten, 10, MPI_INT, t_rank, 5, MPI_COMM_WORLD, &two[0]));
        MPI_CHK(MPI_Irecv(five, 5, MPI_INT, t_rank, 5, MPI_COMM_WORLD, &two[1]));
        int rc = MPI_Waitall(2, two, sts);
        CHECK_EQ(eclass(rc), MPI_ERR_IN_STATUS, "Waitall with a truncated receive");
        CHECK_EQ(eclass(sts[1].MPI_ERROR), MPI_ERR_TRUNCATE, "status.MPI_ERROR of the truncated receive");
        CHECK(sts[0].MPI_ERROR == MPI_SUCCESS || sts[0].MPI_ERROR == MPI_ERR_PENDING,
              "status.MPI_ERROR of the good send: %d", sts[0].MPI_ERROR);
    }
    /* Other classes commonly hit. */
    EXPECT_ERR(MPI_Wait(NULL, MPI_STATUS_IGNORE), MPI_ERR_ARG, NULL); /* MPICH: null pointer = MPI_ERR_ARG */
    {
        int dims[2] = {0, 0};
        EXPECT_ERR(MPI_Dims_create(-1, 2, dims), MPI_ERR_ARG, NULL);
        MPI_Group g;
        EXPECT_ERR(MPI_Group_incl(MPI_GROUP_NULL, 0, NULL, &g), MPI_ERR_GROUP, NULL);
    }
    /* The job is still fine after all those errors. */
    {
        int s = -1;
        MPI_CHK(MPI_Allreduce(&t_rank, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK_EQ(s, size * (size - 1) / 2, "Allreduce after errors");
    }

    /* ---- User error handler on a dup. */
    MPI_Comm dup;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    MPI_CHK(MPI_Comm_create_errhandler(my_handler, &eh));
    CHECK(eh != MPI_ERRHANDLER_NULL, "Comm_create_errhandler gave MPI_ERRHANDLER_NULL");
    MPI_CHK(MPI_Comm_set_errhandler(dup, eh));
    {
        MPI_Errhandler got;
        MPI_CHK(MPI_Comm_get_errhandler(dup, &got));
        CHECK(got == eh, "Comm_get_errhandler: %#x, expected %#x", (unsigned)got, (unsigned)eh);
        MPI_CHK(MPI_Errhandler_free(&got));
    }
    int rc = MPI_Send(v, 1, MPI_INT, size, 0, dup);
    CHECK_EQ(handler_calls, 1, "user handler calls after an invalid rank");
    CHECK(handler_last_comm == dup, "handler got comm %#x, expected the dup %#x", (unsigned)handler_last_comm,
          (unsigned)dup);
    CHECK_EQ(eclass(handler_last_code), MPI_ERR_RANK, "class of the code passed to the handler");
    CHECK_EQ(eclass(rc), MPI_ERR_RANK, "class returned after the user handler returned");
    /* Comm_call_errhandler */
    MPI_CHK(MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER));
    CHECK_EQ(handler_calls, 2, "user handler calls after Comm_call_errhandler");
    CHECK_EQ(handler_last_code, MPI_ERR_OTHER, "code given by Comm_call_errhandler");
    /* The handler is inherited by a dup of the dup. */
    {
        MPI_Comm d2;
        MPI_CHK(MPI_Comm_dup(dup, &d2));
        MPI_Send(v, 1, MPI_INT, size, 0, d2);
        CHECK_EQ(handler_calls, 3, "handler inherited by a dup");
        CHECK(handler_last_comm == d2, "inherited handler got the wrong communicator");
        MPI_CHK(MPI_Comm_free(&d2));
    }
    /* Freeing the handle keeps it alive while attached. */
    MPI_CHK(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL, "Errhandler_free did not set MPI_ERRHANDLER_NULL");
    MPI_Send(v, 1, MPI_INT, -9, 0, dup);
    CHECK_EQ(handler_calls, 4, "handler still attached after Errhandler_free");
    /* Back to ERRORS_RETURN: no more calls. */
    MPI_CHK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    rc = MPI_Send(v, 1, MPI_INT, size, 0, dup);
    CHECK_EQ(handler_calls, 4, "handler calls after switching to MPI_ERRORS_RETURN");
    CHECK_EQ(eclass(rc), MPI_ERR_RANK, "class under MPI_ERRORS_RETURN");
    /* Calling MPI_ERRORS_RETURN via call_errhandler just returns. */
    MPI_CHK(MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER));

    /* ---- User-defined classes, codes, strings. */
    {
        int cls = -1, code = -1, code2 = -1, *last, flag = 0;
        /* Before any class is added, MPI_LASTUSEDCODE is MPI_ERR_LASTCODE (MPICH); then the last
         * class added (MPICH moves it for classes only). */
        MPI_CHK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
        CHECK(flag && *last == MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE %d before any class is added, expected %d",
              flag ? *last : -1, MPI_ERR_LASTCODE);
        MPI_CHK(MPI_Add_error_class(&cls));
        CHECK(cls > MPI_ERR_LASTCODE, "new class %d is not above MPI_ERR_LASTCODE %d", cls, MPI_ERR_LASTCODE);
        MPI_CHK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
        CHECK(flag && *last == cls, "MPI_LASTUSEDCODE %d after adding class %d", flag ? *last : -1, cls);
        MPI_CHK(MPI_Add_error_code(cls, &code));
        MPI_CHK(MPI_Add_error_code(cls, &code2));
        CHECK(code != code2 && code != cls, "codes %d %d for class %d", code, code2, cls);
        CHECK(code > MPI_ERR_LASTCODE && code2 > MPI_ERR_LASTCODE, "codes %d %d of class %d not above %d", code,
              code2, cls, MPI_ERR_LASTCODE);
        /* A code of a predefined class. */
        int code3 = -1;
        MPI_CHK(MPI_Add_error_code(MPI_ERR_ARG, &code3));
        CHECK(code3 != MPI_ERR_ARG && code3 != code && code3 != code2, "code %d for MPI_ERR_ARG", code3);
        CHECK_EQ(eclass(code3), MPI_ERR_ARG, "Error_class of a user code of MPI_ERR_ARG");
        CHECK_EQ(eclass(code), cls, "Error_class of a user code");
        CHECK_EQ(eclass(code2), cls, "Error_class of a second user code");
        CHECK_EQ(eclass(cls), cls, "Error_class of a user class");
        MPI_CHK(MPI_Add_error_string(code, "billboard test error"));
        MPI_CHK(MPI_Add_error_string(cls, "billboard test class"));
        char s[MPI_MAX_ERROR_STRING];
        int len;
        MPI_CHK(MPI_Error_string(code, s, &len));
        CHECK(!strcmp(s, "billboard test error") && len == 20, "Error_string(user code) = '%s' (%d)", s, len);
        MPI_CHK(MPI_Error_string(cls, s, &len));
        CHECK(!strcmp(s, "billboard test class"), "Error_string(user class) = '%s'", s);
        MPI_CHK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
        /* MPI: LASTUSEDCODE >= every code; MPICH 4.0.2 encodes codes as class | index << 8 and
         * reports the last class, so only >= the class is checked. */
        CHECK(flag && *last >= cls, "MPI_LASTUSEDCODE %d < user class %d", flag ? *last : -1, cls);
        /* A user code through a user handler. */
        MPI_Errhandler h2;
        MPI_CHK(MPI_Comm_create_errhandler(my_handler, &h2));
        MPI_CHK(MPI_Comm_set_errhandler(dup, h2));
        MPI_CHK(MPI_Errhandler_free(&h2));
        MPI_Comm_call_errhandler(dup, code2);
        CHECK_EQ(handler_last_code, code2, "user code passed through Comm_call_errhandler");
    }
    MPI_CHK(MPI_Comm_free(&dup));
    return t_finish();
}
