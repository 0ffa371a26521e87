/* Errors of nonblocking file accesses go to the file's error handler, not to the communicator's
 * of the call that completes the request (MPI 4.0 section 14.7; a file's default handler is
 * MPI_ERRORS_RETURN). Each rank's nonblocking write past a file-size limit (RLIMIT_FSIZE, with
 * SIGXFSZ ignored: the write fails with EFBIG on the I/O thread) fails at MPI_Wait, MPI_Test and
 * MPI_Waitall with the file's handler: MPI_ERRORS_RETURN returns the class, a handler of the
 * program's is called with the file; MPI_COMM_WORLD's handler (one that counts its calls) is
 * never called, and the job goes on: the same write within the limit succeeds and reads back.
 * MPICH 4.0.2 hangs in MPI_Wait of such a request (tried): the nonblocking checks run on
 * Billboard only. Any N >= 1. */
#include "common.h"

#include <sys/resource.h>

static char path[512];
static int world_calls, file_calls, file_class;
static MPI_File handled_file;

static void count_world(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
    world_calls++;
}

static void count_file(MPI_File *fh, int *code, ...)
{
    file_calls++;
    handled_file = *fh;
    MPI_Error_class(*code, &file_class);
}

static int class_of(int rc)
{
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

enum { LIMIT = 1 << 16, PAST = 1 << 20, PIECE = 64 };

static struct rlimit saved;

/* Writes past LIMIT bytes fail (EFBIG) until `unlimit`. */
static void limit(void)
{
    CHECK(getrlimit(RLIMIT_FSIZE, &saved) == 0, "getrlimit");
    struct rlimit low = {LIMIT, saved.rlim_max};
    CHECK(setrlimit(RLIMIT_FSIZE, &low) == 0, "setrlimit RLIMIT_FSIZE %d", LIMIT);
}

static void unlimit(void)
{
    CHECK(setrlimit(RLIMIT_FSIZE, &saved) == 0, "setrlimit back");
}

/* The error class a failed write past the limit has (ROMIO's and ours for EFBIG may differ:
 * any I/O class will do, as long as it is the write's). */
static int write_class(int cls)
{
    return cls == MPI_ERR_NO_SPACE || cls == MPI_ERR_IO || cls == MPI_ERR_FILE;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "file_ierrors", 1);
    signal(SIGXFSZ, SIG_IGN);
    MPI_Errhandler world_eh, file_eh;
    MPI_CHK(MPI_Comm_create_errhandler(count_world, &world_eh));
    MPI_CHK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, world_eh));
    if (t_rank == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/bb_file_ierrors_%d", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    }
    MPI_CHK(MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD));
    MPI_File fh;
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                          MPI_INFO_NULL, &fh));
    char data[PIECE], back[PIECE];
    memset(data, 'a' + t_rank, sizeof data);
    MPI_Offset past = PAST + (MPI_Offset)t_rank * PIECE, within = (MPI_Offset)t_rank * PIECE;
    MPI_Status st;

    /* Blocking: the call's own error, to the file's handler (MPI_ERRORS_RETURN). */
    limit();
    int rc = MPI_File_write_at(fh, past, data, PIECE, MPI_CHAR, &st);
    unlimit();
    CHECK(write_class(class_of(rc)), "a blocking write past the limit: class %d (%s)", class_of(rc), t_errstr(rc));

    if (t_on_billboard()) {
        /* MPI_Wait, the file's default handler: the class comes back. */
        MPI_Request r;
        limit();
        MPI_CHK(MPI_File_iwrite_at(fh, past, data, PIECE, MPI_CHAR, &r));
        rc = MPI_Wait(&r, &st);
        unlimit();
        CHECK(write_class(class_of(rc)), "MPI_Wait of a failed write: class %d (%s)", class_of(rc), t_errstr(rc));
        CHECK(r == MPI_REQUEST_NULL, "the failed request is freed");
        CHECK(strstr(t_errstr(rc), path) != NULL, "the error names the file: %s", t_errstr(rc));

        /* MPI_Test, a handler of the program's on the file: called with the file and the class. */
        MPI_CHK(MPI_File_create_errhandler(count_file, &file_eh));
        MPI_CHK(MPI_File_set_errhandler(fh, file_eh));
        limit();
        MPI_CHK(MPI_File_iwrite_at(fh, past, data, PIECE, MPI_CHAR, &r));
        int flag = 0;
        do
            rc = MPI_Test(&r, &flag, &st);
        while (rc == MPI_SUCCESS && !flag);
        unlimit();
        CHECK(write_class(class_of(rc)), "MPI_Test of a failed write: class %d (%s)", class_of(rc), t_errstr(rc));
        CHECK_EQ(file_calls, 1, "calls of the file's handler by MPI_Test");
        CHECK(handled_file == fh, "the file's handler got the file");
        CHECK(write_class(file_class), "the class the file's handler got: %d", file_class);

        /* MPI_Waitall, beside a write that succeeds: MPI_ERR_IN_STATUS, to the file's handler. */
        MPI_Request two[2];
        MPI_Status sts[2];
        limit();
        MPI_CHK(MPI_File_iwrite_at(fh, within, data, PIECE, MPI_CHAR, &two[0]));
        MPI_CHK(MPI_File_iwrite_at(fh, past, data, PIECE, MPI_CHAR, &two[1]));
        rc = MPI_Waitall(2, two, sts);
        unlimit();
        CHECK_EQ(class_of(rc), MPI_ERR_IN_STATUS, "MPI_Waitall with a failed write");
        CHECK_EQ(sts[0].MPI_ERROR, MPI_SUCCESS, "the write within the limit");
        CHECK(write_class(class_of(sts[1].MPI_ERROR)), "the write past it: %d", sts[1].MPI_ERROR);
        CHECK_EQ(file_calls, 2, "calls of the file's handler by MPI_Waitall");
        CHECK_EQ(file_class, MPI_ERR_IN_STATUS, "the class the file's handler got from MPI_Waitall");
        MPI_CHK(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));
        MPI_CHK(MPI_Errhandler_free(&file_eh));
    }
    CHECK_EQ(world_calls, 0, "calls of MPI_COMM_WORLD's handler for the file's errors");

    /* The job goes on: a nonblocking write within the limit succeeds and reads back. */
    MPI_Request r;
    memset(data, 'A' + t_rank, sizeof data);
    MPI_CHK(MPI_File_iwrite_at(fh, within, data, PIECE, MPI_CHAR, &r));
    MPI_CHK(MPI_Wait(&r, &st));
    int n = -1;
    MPI_CHK(MPI_Get_count(&st, MPI_CHAR, &n));
    CHECK_EQ(n, PIECE, "bytes of the write within the limit");
    MPI_CHK(MPI_File_read_at(fh, within, back, PIECE, MPI_CHAR, &st));
    CHECK(memcmp(back, data, PIECE) == 0, "the write within the limit reads back");
    MPI_CHK(MPI_File_close(&fh));
    MPI_CHK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_CHK(MPI_Errhandler_free(&world_eh));
    return t_finish();
}
