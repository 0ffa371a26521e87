/* User data representations (MPI_Register_datarep, MPI 4.0 section 14.5.3) that change sizes:
 * "bbwide" keeps each MPI_INT in the file as 8 bytes, the big-endian int64 of the value plus
 * the registration's extra_state (1000). Every rank writes 6 ints collectively through a view
 * of its own 2-int blocks, round-robin after a 16-byte header; the view is laid out in the
 * file's sizes (16-byte blocks every N * 16 bytes), which the raw bytes (read with pread) and
 * MPI_File_get_byte_offset, the file size, the pointer and MPI_File_get_type_extent show; then
 * the ints come back through "bbwide" (collective and independent reads, a read past the end).
 * A size-changing representation with MPI_CONVERSION_FN_NULL is refused at set_view with
 * MPI_ERR_UNSUPPORTED_DATAREP; a second registration of a name is MPI_ERR_DUP_DATAREP.
 * Then the nonblocking forms: MPI_File_iwrite_at, MPI_File_iread_at_all, MPI_File_iread across
 * the end, a split collective write, each converting through "bbwide" (raw bytes checked again).
 * With argument "cb" the file is opened with romio_cb_write/romio_cb_read "enable", so the
 * collective accesses go through the aggregators (two-phase I/O), as they do by themselves
 * when the ranks span hosts (tests/tests/io_hosts.rs runs it so).
 * MPICH 4.0.2 converts no data: its MPI_Register_datarep fails with MPI_ERR_CONVERSION, which
 * is all this checks there. Any N >= 1. */
#include "common.h"

#include <fcntl.h>
#include <stdint.h>

enum { INTS = 6, BLOCK = 2, HEADER = 16, WIDE = 8, ADD = 1000 };

struct calls {
    long add;
    int reads, writes, extents, bad;
};
static struct calls calls = {ADD, 0, 0, 0, 0};

static void put_be64(unsigned char *p, int64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)((uint64_t)v >> (56 - 8 * i));
}

static int64_t get_be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return (int64_t)v;
}

/* Whether a conversion got the view's etype and the registration's extra_state. */
static int expected(MPI_Datatype datatype, const struct calls *c)
{
    if (datatype == MPI_INT && c == &calls)
        return 1;
    calls.bad++;
    return 0;
}

static int write_wide(void *userbuf, MPI_Datatype datatype, int count, void *filebuf, MPI_Offset position,
                      void *extra_state)
{
    struct calls *c = extra_state;
    if (!expected(datatype, c))
        return MPI_ERR_TYPE;
    const int *user = (const int *)userbuf + position;
    for (int i = 0; i < count; i++)
        put_be64((unsigned char *)filebuf + WIDE * i, (int64_t)user[i] + c->add);
    c->writes++;
    return MPI_SUCCESS;
}

static int read_wide(void *userbuf, MPI_Datatype datatype, int count, void *filebuf, MPI_Offset position,
                     void *extra_state)
{
    struct calls *c = extra_state;
    if (!expected(datatype, c))
        return MPI_ERR_TYPE;
    int *user = (int *)userbuf + position;
    for (int i = 0; i < count; i++)
        user[i] = (int)(get_be64((const unsigned char *)filebuf + WIDE * i) - c->add);
    c->reads++;
    return MPI_SUCCESS;
}

static int extent_wide(MPI_Datatype datatype, MPI_Aint *extent, void *extra_state)
{
    int size = 0;
    MPI_Type_size(datatype, &size);
    *extent = 2 * (MPI_Aint)size;
    ((struct calls *)extra_state)->extents++;
    return MPI_SUCCESS;
}

static int err_class(int rc)
{
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

/* Byte offset in the file of int i of rank r's data. */
static long wide_at(int r, int i) { return HEADER + (long)(i / BLOCK) * t_size * BLOCK * WIDE + (long)(r * BLOCK + i % BLOCK) * WIDE; }

/* Every rank's ints in the file's own bytes, after all ranks wrote value(r, i) + ADD. */
static void check_raw(const char *name, MPI_File fh, int (*value)(int r, int i), const char *what)
{
    MPI_CHK(MPI_File_sync(fh));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_File_sync(fh));
    int fd = open(name, O_RDONLY);
    CHECK(fd >= 0, "cannot open %s to read it raw", name);
    for (int r = 0; r < t_size; r++)
        for (int i = 0; i < INTS; i++) {
            unsigned char raw[WIDE];
            CHECK_EQ(pread(fd, raw, WIDE, wide_at(r, i)), WIDE, "raw bytes read");
            CHECK(get_be64(raw) == (int64_t)value(r, i) + ADD, "raw file value of rank %d's int %d after %s: %lld, expected %d",
                  r, i, what, (long long)get_be64(raw), value(r, i) + ADD);
        }
    close(fd);
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
}

static int first_value(int r, int i) { return r * 100 + i - 3; }
static int second_value(int r, int i) { return r * 100 + i - 3 + 50; }
static int third_value(int r, int i) { return -(r * 100 + i); }

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "datarep", 1);
    int rc = MPI_Register_datarep("bbwide", read_wide, write_wide, extent_wide, &calls);
    if (!t_on_billboard()) {
        CHECK_EQ(err_class(rc), MPI_ERR_CONVERSION, "class of MPICH's MPI_Register_datarep with conversions");
        return t_finish();
    }
    MPI_CHK(rc);
    rc = MPI_Register_datarep("bbwide", read_wide, write_wide, extent_wide, &calls);
    CHECK_EQ(err_class(rc), MPI_ERR_DUP_DATAREP, "class of a second \"bbwide\" registration");
    MPI_CHK(MPI_Register_datarep("bbwide_null", MPI_CONVERSION_FN_NULL, write_wide, extent_wide, &calls));

    char name[256];
    if (t_rank == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(name, sizeof name, "%s/bb_datarep_%d", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    }
    MPI_CHK(MPI_Bcast(name, sizeof name, MPI_CHAR, 0, MPI_COMM_WORLD));
    MPI_Info info = MPI_INFO_NULL;
    if (argc > 1 && strcmp(argv[1], "cb") == 0) {
        MPI_CHK(MPI_Info_create(&info));
        MPI_CHK(MPI_Info_set(info, "romio_cb_write", "enable"));
        MPI_CHK(MPI_Info_set(info, "romio_cb_read", "enable"));
    }
    MPI_File fh;
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    if (info != MPI_INFO_NULL)
        MPI_CHK(MPI_Info_free(&info));

    /* Rank r's blocks of 2 ints, every N blocks. */
    MPI_Datatype block, filetype;
    int disp = t_rank * BLOCK;
    MPI_CHK(MPI_Type_create_indexed_block(1, BLOCK, &disp, MPI_INT, &block));
    MPI_CHK(MPI_Type_create_resized(block, 0, (MPI_Aint)t_size * BLOCK * sizeof(int), &filetype));
    MPI_CHK(MPI_Type_commit(&filetype));

    rc = MPI_File_set_view(fh, HEADER, MPI_INT, filetype, "bbwide_null", MPI_INFO_NULL);
    CHECK_EQ(err_class(rc), MPI_ERR_UNSUPPORTED_DATAREP, "class of a size-changing view with a null conversion");

    MPI_CHK(MPI_File_set_view(fh, HEADER, MPI_INT, filetype, "bbwide", MPI_INFO_NULL));
    char rep[MPI_MAX_DATAREP_STRING];
    MPI_Offset got_disp = -1;
    MPI_Datatype et, ft;
    MPI_CHK(MPI_File_get_view(fh, &got_disp, &et, &ft, rep));
    CHECK(strcmp(rep, "bbwide") == 0, "MPI_File_get_view's datarep \"%s\"", rep);
    CHECK_EQ(got_disp, HEADER, "MPI_File_get_view's disp");
    MPI_CHK(MPI_Type_free(&ft));
    MPI_Aint ext = 0;
    MPI_CHK(MPI_File_get_type_extent(fh, MPI_INT, &ext));
    CHECK_EQ(ext, WIDE, "MPI_File_get_type_extent of MPI_INT in \"bbwide\"");

    int vals[INTS], back[INTS];
    for (int i = 0; i < INTS; i++)
        vals[i] = first_value(t_rank, i);
    calls.writes = calls.reads = 0;
    MPI_Status st;
    MPI_CHK(MPI_File_write_all(fh, vals, INTS, MPI_INT, &st));
    int count = -1;
    MPI_CHK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, INTS, "ints written, by the status");
    CHECK(calls.writes >= 1, "the write function was not called");
    CHECK_EQ(calls.bad, 0, "conversions called with the wrong datatype or extra_state");
    MPI_Offset pos = -1, byte = -1;
    MPI_CHK(MPI_File_get_position(fh, &pos));
    CHECK_EQ(pos, INTS, "individual pointer after the write, in etypes");
    MPI_CHK(MPI_File_get_byte_offset(fh, 3, &byte));
    CHECK_EQ(byte, wide_at(t_rank, 3), "MPI_File_get_byte_offset(3)");
    MPI_CHK(MPI_File_sync(fh));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_File_sync(fh));

    /* The file's own bytes: 8 per int, big-endian, plus 1000, in the scaled layout. */
    MPI_Offset size = -1;
    MPI_CHK(MPI_File_get_size(fh, &size));
    CHECK_EQ(size, HEADER + (long)t_size * INTS * WIDE, "file size");
    check_raw(name, fh, first_value, "MPI_File_write_all");
    int fd = open(name, O_RDONLY);
    CHECK(fd >= 0, "cannot open %s to read it raw", name);
    unsigned char head[HEADER];
    CHECK_EQ(pread(fd, head, HEADER, 0), HEADER, "header bytes read");
    for (int i = 0; i < HEADER; i++)
        CHECK_EQ(head[i], 0, "header byte (never written)");
    close(fd);

    /* Back through the representation: collective from 0, independent from 3, past the end. */
    memset(back, 0x55, sizeof back);
    MPI_CHK(MPI_File_read_at_all(fh, 0, back, INTS, MPI_INT, &st));
    MPI_CHK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, INTS, "ints read, by the status");
    for (int i = 0; i < INTS; i++)
        CHECK_EQ(back[i], vals[i], "int read back through \"bbwide\"");
    CHECK(calls.reads >= 1, "the read function was not called");
    memset(back, 0x55, sizeof back);
    MPI_CHK(MPI_File_seek(fh, 3, MPI_SEEK_SET));
    MPI_CHK(MPI_File_read(fh, back, 2, MPI_INT, &st));
    CHECK_EQ(back[0], vals[3], "independent read of int 3");
    CHECK_EQ(back[1], vals[4], "independent read of int 4");
    MPI_CHK(MPI_File_get_position(fh, &pos));
    CHECK_EQ(pos, 5, "individual pointer after reading 2 from 3");
    MPI_CHK(MPI_File_read(fh, back, 4, MPI_INT, &st));
    MPI_CHK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, 1, "ints read across the end of the file (only int 5 is there)");
    CHECK_EQ(back[0], vals[5], "last int read across the end");
    CHECK_EQ(calls.bad, 0, "conversions called with the wrong datatype or extra_state");

    /* Nonblocking: each rank rewrites its ints (+50), reads them back collectively and from
     * its pointer across the end; the conversions run and the statuses count memory's ints. */
    int vals2[INTS], vals3[INTS];
    for (int i = 0; i < INTS; i++) {
        vals2[i] = second_value(t_rank, i);
        vals3[i] = third_value(t_rank, i);
    }
    MPI_Request req;
    calls.writes = calls.reads = 0;
    MPI_CHK(MPI_File_iwrite_at(fh, 0, vals2, INTS, MPI_INT, &req));
    MPI_CHK(MPI_Wait(&req, &st));
    MPI_CHK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, INTS, "ints written by MPI_File_iwrite_at, by the status");
    CHECK(calls.writes >= 1, "the write function was not called by MPI_File_iwrite_at");
    check_raw(name, fh, second_value, "MPI_File_iwrite_at");
    memset(back, 0x55, sizeof back);
    MPI_CHK(MPI_File_iread_at_all(fh, 0, back, INTS, MPI_INT, &req));
    MPI_CHK(MPI_Wait(&req, &st));
    MPI_CHK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, INTS, "ints read by MPI_File_iread_at_all, by the status");
    for (int i = 0; i < INTS; i++)
        CHECK_EQ(back[i], vals2[i], "int read back by MPI_File_iread_at_all");
    CHECK(calls.reads >= 1, "the read function was not called by MPI_File_iread_at_all");
    memset(back, 0x55, sizeof back);
    MPI_CHK(MPI_File_seek(fh, 4, MPI_SEEK_SET));
    MPI_CHK(MPI_File_iread(fh, back, 4, MPI_INT, &req));
    MPI_CHK(MPI_Wait(&req, &st));
    MPI_CHK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, 2, "ints MPI_File_iread read across the end (ints 4 and 5 are there)");
    CHECK_EQ(back[0], vals2[4], "MPI_File_iread's int 4");
    CHECK_EQ(back[1], vals2[5], "MPI_File_iread's int 5");
    /* A split collective write from the pointer, then the pointer's own nonblocking write. */
    MPI_CHK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    MPI_CHK(MPI_File_write_all_begin(fh, vals3, 3, MPI_INT));
    MPI_CHK(MPI_File_write_all_end(fh, vals3, &st));
    MPI_CHK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, 3, "ints written by the split collective, by the status");
    MPI_CHK(MPI_File_iwrite(fh, vals3 + 3, 3, MPI_INT, &req));
    MPI_CHK(MPI_Wait(&req, &st));
    MPI_CHK(MPI_File_get_position(fh, &pos));
    CHECK_EQ(pos, INTS, "individual pointer after the split and the nonblocking write");
    check_raw(name, fh, third_value, "the split collective and MPI_File_iwrite");
    CHECK_EQ(calls.bad, 0, "conversions called with the wrong datatype or extra_state");

    MPI_CHK(MPI_File_close(&fh));
    MPI_CHK(MPI_Type_free(&filetype));
    MPI_CHK(MPI_Type_free(&block));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (t_rank == 0)
        unlink(name);
    return t_finish();
}
