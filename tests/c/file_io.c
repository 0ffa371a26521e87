/* MPI-IO on POSIX files: every access mode read back and compared with the file's own bytes
 * (read with pread here, not through MPI): explicit offsets, individual and shared pointers,
 * ordered modes, collective and split collective forms, nonblocking forms; a strided
 * collective write equal to a serial write of the same data (also through two-phase I/O); views
 * (byte offsets, a subarray, external32); sizes, hints, modes (APPEND, EXCL, DELETE_ON_CLOSE,
 * SEQUENTIAL); errors, their classes' strings, and file error handlers. Any N >= 1. Files live
 * in a temporary directory rank 0 makes and removes. */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include "common.h"

#include <dirent.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

static char dir[256];

/* A file of the test's directory. */
static const char *path(const char *name)
{
    static char p[2][512];
    static int which;
    which ^= 1;
    snprintf(p[which], sizeof p[which], "%s/%s", dir, name);
    return p[which];
}

/* The file's bytes [off, off + len), read with POSIX calls; returns how many there were. */
static long file_bytes(const char *name, long off, void *buf, long len)
{
    int fd = open(path(name), O_RDONLY);
    CHECK(fd >= 0, "cannot open %s with open(2)", name);
    long got = pread(fd, buf, (size_t)len, off);
    close(fd);
    return got;
}

static long file_size(const char *name)
{
    struct stat st;
    CHECK(stat(path(name), &st) == 0, "stat %s", name);
    return (long)st.st_size;
}

/* How many names in the test's directory contain `part`. */
static int names_with(const char *part)
{
    int n = 0;
    DIR *d = opendir(dir);
    CHECK(d != NULL, "opendir %s", dir);
    struct dirent *e;
    while ((e = readdir(d)))
        n += strstr(e->d_name, part) != NULL;
    closedir(d);
    return n;
}

static int error_class(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

#define CHECK_CLASS(call, want)                                                                                       \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        CHECK(error_class(rc_) == (want), "%s: error class %d (%s), expected %s (%d)", #call, error_class(rc_),        \
              t_errstr(rc_), #want, (want));                                                                           \
    } while (0)

static void check_count(MPI_Status *st, MPI_Datatype t, int want, const char *what)
{
    int n = -1;
    MPI_CHK(MPI_Get_count(st, t, &n));
    CHECK_EQ(n, want, what);
}

enum { N = 64 };

/* Explicit offsets: rank r's N ints at r*N; blocking, nonblocking and collective forms. */
static void explicit_offsets(void)
{
    MPI_File fh;
    int mine[N], back[N];
    for (int i = 0; i < N; i++)
        mine[i] = t_rank * 1000 + i;
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, path("at"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_Status st;
    MPI_Offset at = (MPI_Offset)t_rank * N * 4;
    MPI_CHK(MPI_File_write_at(fh, at, mine, N / 2, MPI_INT, &st));
    check_count(&st, MPI_INT, N / 2, "write_at count");
    MPI_Request rq;
    MPI_CHK(MPI_File_iwrite_at(fh, at + N / 2 * 4, mine + N / 2, N / 2, MPI_INT, &rq));
    MPI_CHK(MPI_Wait(&rq, &st));
    check_count(&st, MPI_INT, N / 2, "iwrite_at count");
    MPI_CHK(MPI_File_sync(fh));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_File_sync(fh));
    /* The file holds every rank's ints where they were written. */
    int *all = malloc((size_t)t_size * N * 4);
    CHECK_EQ(file_bytes("at", 0, all, (long)t_size * N * 4), (long)t_size * N * 4, "file size after write_at");
    for (int i = 0; i < t_size * N; i++)
        CHECK_EQ(all[i], (i / N) * 1000 + i % N, "file int after write_at");
    free(all);
    /* Read back the next rank's part, every way. */
    int peer = (t_rank + 1) % t_size;
    MPI_Offset peer_at = (MPI_Offset)peer * N * 4;
    memset(back, 0, sizeof back);
    MPI_CHK(MPI_File_read_at(fh, peer_at, back, N, MPI_INT, &st));
    check_count(&st, MPI_INT, N, "read_at count");
    for (int i = 0; i < N; i++)
        CHECK_EQ(back[i], peer * 1000 + i, "read_at");
    memset(back, 0, sizeof back);
    MPI_CHK(MPI_File_read_at_all(fh, peer_at, back, N, MPI_INT, &st));
    for (int i = 0; i < N; i++)
        CHECK_EQ(back[i], peer * 1000 + i, "read_at_all");
    memset(back, 0, sizeof back);
    MPI_CHK(MPI_File_iread_at(fh, peer_at, back, N, MPI_INT, &rq));
    t_wait_bounded(&rq, &st, 10, "iread_at");
    check_count(&st, MPI_INT, N, "iread_at count");
    CHECK_EQ(back[N - 1], peer * 1000 + N - 1, "iread_at last");
    /* Reading past the end returns what there is: the count says how much. */
    MPI_Offset end = (MPI_Offset)t_size * N * 4;
    MPI_CHK(MPI_File_read_at(fh, end - 8, back, N, MPI_INT, &st));
    check_count(&st, MPI_INT, 2, "read_at across the end");
    /* Split collective at explicit offsets. */
    MPI_CHK(MPI_File_write_at_all_begin(fh, at, mine, N, MPI_INT));
    MPI_CHK(MPI_File_write_at_all_end(fh, mine, &st));
    check_count(&st, MPI_INT, N, "write_at_all_end count");
    MPI_CHK(MPI_File_read_at_all_begin(fh, peer_at, back, N, MPI_INT));
    MPI_CHK(MPI_File_read_at_all_end(fh, back, &st));
    CHECK_EQ(back[3], peer * 1000 + 3, "read_at_all_end");
    MPI_CHK(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL, "close did not set MPI_FILE_NULL");
}

/* Individual pointers: seek, write, position; a view makes offsets count ints. */
/* Nonblocking accesses move their data while the program goes on. Deterministically: in atomic
 * mode a write waits for its range lock, so with the range locked here (an open-file-description
 * lock, which conflicts with the library's own) MPI_File_iwrite_at must return, and MPI_Test
 * must say "not yet", until this rank unlocks. Then the data is in the file at MPI_Wait, and a
 * blocking read issued right after an iwrite sees the iwrite's data. Billboard only: ROMIO
 * takes its lock inside MPI_File_iwrite_at and would wait here for good. */
static void nonblocking_overlap(void)
{
    if (!t_on_billboard())
        return;
    char name[32];
    snprintf(name, sizeof name, "overlap%d", t_rank);
    MPI_File fh;
    MPI_CHK(MPI_File_open(MPI_COMM_SELF, path(name), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_CHK(MPI_File_set_atomicity(fh, 1));
    int fd = open(path(name), O_RDWR);
    CHECK(fd >= 0, "open %s", name);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    CHECK(fcntl(fd, F_OFD_SETLK, &fl) == 0, "F_OFD_SETLK on %s", name);
    int mine[N], back[N];
    for (int i = 0; i < N; i++)
        mine[i] = t_rank * 100 + i;
    MPI_Request rq;
    MPI_Status st;
    MPI_CHK(MPI_File_iwrite_at(fh, 0, mine, N, MPI_INT, &rq));
    int flag = 1;
    MPI_CHK(MPI_Test(&rq, &flag, &st));
    CHECK_EQ(flag, 0, "MPI_Test of an iwrite_at whose range is locked");
    fl.l_type = F_UNLCK;
    CHECK(fcntl(fd, F_OFD_SETLK, &fl) == 0, "unlock %s", name);
    MPI_CHK(MPI_Wait(&rq, &st));
    check_count(&st, MPI_INT, N, "iwrite_at count after the lock");
    CHECK_EQ(file_bytes(name, 0, back, sizeof back), (long)sizeof back, "bytes after MPI_Wait");
    CHECK(memcmp(back, mine, sizeof back) == 0, "the file holds the iwrite's data");
    close(fd);
    MPI_CHK(MPI_File_set_atomicity(fh, 0));
    /* In issue order: a blocking read after an iwrite of the same range reads the new data; the
     * individual pointer moved past the iwrite's data at the call. */
    for (int i = 0; i < N; i++)
        mine[i] = -mine[i];
    MPI_CHK(MPI_File_iwrite(fh, mine, N, MPI_INT, &rq));
    MPI_Offset pos = -1;
    MPI_CHK(MPI_File_get_position(fh, &pos));
    CHECK_EQ(pos, (long)N * 4, "individual pointer after iwrite (bytes: the default view)");
    MPI_CHK(MPI_File_read_at(fh, 0, back, N, MPI_INT, &st));
    CHECK(memcmp(back, mine, sizeof back) == 0, "a read after an iwrite sees its data");
    MPI_CHK(MPI_Wait(&rq, &st));
    check_count(&st, MPI_INT, N, "iwrite count");
    MPI_CHK(MPI_File_close(&fh));
}

static int lock_fd;
static volatile int unlocked;

/* Lets the range go after half a second, saying so first. */
static void *unlock_later(void *arg)
{
    (void)arg;
    usleep(500000);
    unlocked = 1;
    __sync_synchronize();
    struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    fcntl(lock_fd, F_OFD_SETLK, &fl);
    return NULL;
}

/* Atomic mode on the two-phase path: a collective write through the aggregators takes the same
 * range locks as an independent one, so with the file locked here by rank 0 (the aggregator:
 * one per host) the collective cannot end on rank 0 before a helper thread unlocks it. Before,
 * the aggregator wrote straight through the lock. Two ranks or more (one has no two-phase).
 * Billboard only: under MPICH 4.0.2 the same collective write does not wait for the lock (tried). */
static void atomic_two_phase(void)
{
    if (t_size < 2 || !t_on_billboard())
        return;
    MPI_Info info;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "romio_cb_write", "enable"));
    MPI_CHK(MPI_Info_set(info, "cb_nodes", "1"));
    MPI_File fh;
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, path("atomic2"), MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    MPI_CHK(MPI_Info_free(&info));
    MPI_CHK(MPI_File_set_atomicity(fh, 1));
    pthread_t helper;
    if (t_rank == 0) {
        lock_fd = open(path("atomic2"), O_RDWR);
        CHECK(lock_fd >= 0, "open atomic2");
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
        CHECK(fcntl(lock_fd, F_OFD_SETLK, &fl) == 0, "F_OFD_SETLK on atomic2");
        unlocked = 0;
        CHECK(pthread_create(&helper, NULL, unlock_later, NULL) == 0, "pthread_create");
    }
    /* Interleaved: int i of rank r at i * size + r. */
    int mine[N], back[N];
    for (int i = 0; i < N; i++)
        mine[i] = t_rank * 1000 + i;
    MPI_Datatype strided;
    MPI_CHK(MPI_Type_vector(N, 1, t_size, MPI_INT, &strided));
    MPI_CHK(MPI_Type_commit(&strided));
    MPI_CHK(MPI_File_set_view(fh, (MPI_Offset)t_rank * 4, MPI_INT, strided, "native", MPI_INFO_NULL));
    MPI_Status st;
    MPI_CHK(MPI_File_write_at_all(fh, 0, mine, N, MPI_INT, &st));
    if (t_rank == 0) {
        __sync_synchronize();
        CHECK_EQ(unlocked, 1, "the aggregator waited for the range lock in atomic mode");
        pthread_join(helper, NULL);
        close(lock_fd);
    }
    MPI_CHK(MPI_File_read_at_all(fh, 0, back, N, MPI_INT, &st));
    CHECK(memcmp(back, mine, sizeof back) == 0, "atomic two-phase write read back");
    MPI_CHK(MPI_File_close(&fh));
    MPI_CHK(MPI_Type_free(&strided));
}

static void individual_pointer(void)
{
    MPI_File fh;
    int mine[N], back[N];
    for (int i = 0; i < N; i++)
        mine[i] = -(t_rank * 1000 + i);
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, path("ind"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_CHK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    MPI_CHK(MPI_File_seek(fh, (MPI_Offset)t_rank * N, MPI_SEEK_SET));
    MPI_Status st;
    MPI_CHK(MPI_File_write(fh, mine, N / 4, MPI_INT, &st));
    MPI_CHK(MPI_File_write_all(fh, mine + N / 4, N / 4, MPI_INT, &st));
    MPI_Request rq;
    MPI_CHK(MPI_File_iwrite(fh, mine + N / 2, N / 4, MPI_INT, &rq));
    MPI_CHK(MPI_Wait(&rq, &st));
    MPI_CHK(MPI_File_write_all_begin(fh, mine + 3 * N / 4, N / 4, MPI_INT));
    MPI_CHK(MPI_File_write_all_end(fh, mine + 3 * N / 4, &st));
    MPI_Offset pos = -1, byte = -1;
    MPI_CHK(MPI_File_get_position(fh, &pos));
    CHECK_EQ(pos, (long)t_rank * N + N, "position after writes (ints)");
    MPI_CHK(MPI_File_get_byte_offset(fh, pos, &byte));
    CHECK_EQ(byte, ((long)t_rank * N + N) * 4, "byte offset of the position");
    MPI_CHK(MPI_File_sync(fh));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_File_sync(fh));
    CHECK_EQ(file_bytes("ind", (long)t_rank * N * 4, back, N * 4), N * 4, "bytes in the file");
    CHECK(memcmp(back, mine, sizeof mine) == 0, "the file holds what the individual pointer wrote");
    MPI_CHK(MPI_File_seek(fh, -N, MPI_SEEK_CUR));
    memset(back, 0, sizeof back);
    MPI_CHK(MPI_File_read(fh, back, N / 2, MPI_INT, &st));
    check_count(&st, MPI_INT, N / 2, "read count");
    MPI_CHK(MPI_File_iread_all(fh, back + N / 2, N / 4, MPI_INT, &rq));
    MPI_CHK(MPI_Wait(&rq, &st));
    MPI_CHK(MPI_File_read_all_begin(fh, back + 3 * N / 4, N / 4, MPI_INT));
    MPI_CHK(MPI_File_read_all_end(fh, back + 3 * N / 4, &st));
    CHECK(memcmp(back, mine, sizeof mine) == 0, "read back through the individual pointer");
    /* MPI_SEEK_END: the view's end is the file's last int. */
    MPI_CHK(MPI_File_seek(fh, -1, MPI_SEEK_END));
    MPI_CHK(MPI_File_read(fh, back, 1, MPI_INT, &st));
    CHECK_EQ(back[0], -((t_size - 1) * 1000 + N - 1), "last int via MPI_SEEK_END");
    MPI_CHK(MPI_File_close(&fh));
}

/* 4 ints of every 4*size, round-robin: rank r's k-th block at (k*size + r)*4 ints. */
enum { B = 4, K = 16 };

static int strided_value(int owner, int j) { return owner * 100000 + j; }

/* Independent writes of many small pieces, interleaved with the other ranks' and at the same
 * time, 8 rounds (each a new value): write data sieving reads and writes back whole blocks
 * around a rank's pieces, so without its lock a rank would put stale bytes over another's. The
 * file must hold every rank's last round exactly, also with a 100-byte sieve buffer (blocks
 * that cut pieces' runs) and with sieving forced. */
static void sieved_writes(const char *buffer, const char *mode)
{
    enum { PIECES = 512, B = 12 };
    MPI_Info info;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "ind_wr_buffer_size", buffer));
    MPI_CHK(MPI_Info_set(info, "romio_ds_write", mode));
    MPI_File fh;
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, path("sieved"), MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    MPI_CHK(MPI_Info_free(&info));
    MPI_Datatype piece, strided;
    MPI_CHK(MPI_Type_contiguous(B, MPI_BYTE, &piece));
    MPI_CHK(MPI_Type_vector(PIECES, 1, t_size, piece, &strided));
    MPI_CHK(MPI_Type_commit(&strided));
    MPI_CHK(MPI_File_set_view(fh, (MPI_Offset)t_rank * B, MPI_BYTE, strided, "native", MPI_INFO_NULL));
    static char mine[PIECES * B];
    for (int round = 0; round < 8; round++) {
        memset(mine, 'A' + round * 4 + t_rank % 4, sizeof mine);
        MPI_Status st;
        MPI_CHK(MPI_File_write_at(fh, 0, mine, sizeof mine, MPI_BYTE, &st));
        check_count(&st, MPI_BYTE, sizeof mine, "sieved write count");
    }
    MPI_CHK(MPI_File_close(&fh));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (t_rank == 0) {
        long len = (long)PIECES * B * t_size;
        char *all = malloc((size_t)len);
        CHECK_EQ(file_bytes("sieved", 0, all, len), len, "sieved file size");
        for (long i = 0; i < len; i++) {
            int owner = (int)((i / B) % t_size);
            CHECK(all[i] == 'A' + 7 * 4 + owner % 4, "byte %ld of the sieved file: '%c', rank %d wrote '%c' (buffer %s, %s)",
                  i, all[i], owner, 'A' + 7 * 4 + owner % 4, buffer, mode);
        }
        free(all);
        unlink(path("sieved"));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Type_free(&piece));
    MPI_CHK(MPI_Type_free(&strided));
}

/* A strided collective write by all ranks equals rank 0's serial write of the same data; read
 * back into a strided memory type. `info` may ask for two-phase I/O. */
static void strided_collective(MPI_Info info)
{
    MPI_Datatype vec, filetype, memtype;
    MPI_CHK(MPI_Type_vector(K, B, B * t_size, MPI_INT, &vec));
    MPI_CHK(MPI_Type_create_resized(vec, 0, (MPI_Aint)K * B * t_size * 4, &filetype));
    MPI_CHK(MPI_Type_commit(&filetype));
    MPI_CHK(MPI_Type_vector(K * B, 1, 2, MPI_INT, &memtype));
    MPI_CHK(MPI_Type_commit(&memtype));
    int data[K * B], spread[2 * K * B];
    for (int j = 0; j < K * B; j++)
        data[j] = strided_value(t_rank, j);
    MPI_File fh;
    if (t_rank == 0) /* a fresh file each time: what is in it was written now */
        unlink(path("strided"));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, path("strided"), MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    MPI_CHK(MPI_File_set_view(fh, (MPI_Offset)t_rank * B * 4, MPI_INT, filetype, "native", MPI_INFO_NULL));
    MPI_Status st;
    MPI_CHK(MPI_File_write_all(fh, data, K * B, MPI_INT, &st));
    check_count(&st, MPI_INT, K * B, "write_all count");
    MPI_Offset byte = -1;
    MPI_CHK(MPI_File_get_byte_offset(fh, B + 1, &byte));
    CHECK_EQ(byte, ((long)t_size * B + t_rank * B + 1) * 4, "byte offset in a strided view");
    MPI_CHK(MPI_File_sync(fh));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_File_sync(fh));
    /* Read back into every other int of `spread`. */
    MPI_CHK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    memset(spread, 0, sizeof spread);
    MPI_CHK(MPI_File_read_all(fh, spread, 1, memtype, &st));
    for (int j = 0; j < K * B; j++) {
        CHECK_EQ(spread[2 * j], data[j], "strided read into a strided memory type");
        CHECK_EQ(spread[2 * j + 1], 0, "hole of the memory type untouched");
    }
    MPI_Datatype etype, ftype;
    MPI_Offset disp;
    char rep[MPI_MAX_DATAREP_STRING];
    MPI_CHK(MPI_File_get_view(fh, &disp, &etype, &ftype, rep));
    CHECK(disp == (MPI_Offset)t_rank * B * 4 && etype == MPI_INT && !strcmp(rep, "native"), "get_view: %lld %s",
          (long long)disp, rep);
    MPI_CHK(MPI_Type_free(&ftype));
    /* Collective reads that cross the end of the file return what there is: the last 6 ints of
     * the view (in 2 pieces), then the end. (The count: MPI says 6; MPICH 4.0.2's ROMIO reports
     * the whole request, 8, for collective reads.) */
    memset(spread, 0, sizeof spread);
    MPI_CHK(MPI_File_read_at_all(fh, K * B - 6, spread, 8, MPI_INT, &st));
    int n_read = -1;
    MPI_CHK(MPI_Get_count(&st, MPI_INT, &n_read));
    CHECK(n_read == 6 || n_read == 8, "read_at_all across the end: count %d, expected 6", n_read);
    for (int j = 0; j < 6; j++)
        CHECK_EQ(spread[j], data[K * B - 6 + j], "last ints read collectively");
    MPI_CHK(MPI_File_close(&fh));
    if (t_rank == 0) {
        /* The same data, written serially in file order. */
        int total = K * B * t_size, *serial = malloc((size_t)total * 4), *got = malloc((size_t)total * 4);
        for (int g = 0; g < total; g++) {
            int block = g / B;
            serial[g] = strided_value(block % t_size, (block / t_size) * B + g % B);
        }
        MPI_CHK(MPI_File_open(MPI_COMM_SELF, path("serial"), MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
        MPI_CHK(MPI_File_write_at(fh, 0, serial, total, MPI_INT, &st));
        MPI_CHK(MPI_File_close(&fh));
        CHECK_EQ(file_bytes("strided", 0, got, (long)total * 4), (long)total * 4, "strided file size");
        CHECK(memcmp(got, serial, (size_t)total * 4) == 0, "the strided collective write differs from the serial one");
        CHECK_EQ(file_bytes("serial", 0, serial, (long)total * 4), (long)total * 4, "serial file size");
        CHECK(memcmp(got, serial, (size_t)total * 4) == 0, "the two files differ");
        free(serial);
        free(got);
    }
    MPI_CHK(MPI_Type_free(&vec));
    MPI_CHK(MPI_Type_free(&filetype));
    MPI_CHK(MPI_Type_free(&memtype));
}

/* A 2-D array of ROWS x (COLS * size) ints, each rank a block of columns: a subarray
 * filetype, written collectively, checked against the file's bytes in row-major order. */
static void subarray_view(void)
{
    enum { ROWS = 6, COLS = 5 };
    int sizes[2] = {ROWS, COLS * t_size}, subsizes[2] = {ROWS, COLS}, starts[2] = {0, COLS * t_rank};
    MPI_Datatype filetype;
    MPI_CHK(MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &filetype));
    MPI_CHK(MPI_Type_commit(&filetype));
    int block[ROWS * COLS];
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++)
            block[i * COLS + j] = i * 1000 + COLS * t_rank + j;
    MPI_File fh;
    MPI_Status st;
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, path("subarray"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_CHK(MPI_File_set_view(fh, 0, MPI_INT, filetype, "native", MPI_INFO_NULL));
    MPI_CHK(MPI_File_write_all(fh, block, ROWS * COLS, MPI_INT, &st));
    MPI_CHK(MPI_File_close(&fh));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    int total = ROWS * COLS * t_size, *all = malloc((size_t)total * 4);
    CHECK_EQ(file_bytes("subarray", 0, all, (long)total * 4), (long)total * 4, "subarray file size");
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS * t_size; j++)
            CHECK_EQ(all[i * COLS * t_size + j], i * 1000 + j, "array element in the file");
    free(all);
    MPI_CHK(MPI_Type_free(&filetype));
}

/* Shared and ordered pointers: rank r writes r + 1 ints of value r. */
static void shared_and_ordered(void)
{
    MPI_File fh;
    int mine[64], back[64];
    int n = t_rank + 1, total = t_size * (t_size + 1) / 2;
    for (int i = 0; i < n; i++)
        mine[i] = t_rank;
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, path("shared"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_CHK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    MPI_Status st;
    MPI_CHK(MPI_File_write_shared(fh, mine, n, MPI_INT, &st));
    check_count(&st, MPI_INT, n, "write_shared count");
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    /* The shared pointer in use leaves no name in the directory: a job killed now leaves nothing
     * (MPICH 4.0.2 keeps ".shared.shfp.*" until the close, and after if the job dies). */
    if (t_on_billboard())
        CHECK_EQ(names_with(".shfp."), 0, "side files of the shared pointer while in use");
    MPI_Offset pos = -1;
    MPI_CHK(MPI_File_get_position_shared(fh, &pos));
    CHECK_EQ(pos, total, "shared position after every rank wrote");
    MPI_CHK(MPI_File_sync(fh));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_File_sync(fh));
    /* In some order, each rank's ints together: value r appears r + 1 times in a row. */
    int *all = malloc((size_t)total * 4);
    CHECK_EQ(file_bytes("shared", 0, all, (long)total * 4), (long)total * 4, "shared file size");
    for (int i = 0; i < total;) {
        int v = all[i];
        CHECK(v >= 0 && v < t_size, "value %d in the shared file", v);
        for (int k = 0; k <= v; k++)
            CHECK_EQ(all[i + k], v, "a rank's ints are together");
        i += v + 1;
    }
    /* Ordered: rank order exactly, after the shared pointer's current place. */
    MPI_CHK(MPI_File_write_ordered(fh, mine, n, MPI_INT, &st));
    check_count(&st, MPI_INT, n, "write_ordered count");
    MPI_CHK(MPI_File_write_ordered_begin(fh, mine, n, MPI_INT));
    MPI_CHK(MPI_File_write_ordered_end(fh, mine, &st));
    MPI_CHK(MPI_File_get_position_shared(fh, &pos));
    CHECK_EQ(pos, 3 * total, "shared position after two ordered writes");
    MPI_CHK(MPI_File_sync(fh));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_File_sync(fh));
    all = realloc(all, (size_t)total * 2 * 4);
    CHECK_EQ(file_bytes("shared", (long)total * 4, all, (long)total * 2 * 4), (long)total * 2 * 4, "ordered bytes");
    for (int rep = 0, i = 0; rep < 2; rep++)
        for (int r = 0; r < t_size; r++)
            for (int k = 0; k <= r; k++, i++)
                CHECK_EQ(all[i], r, "ordered writes in rank order");
    free(all);
    /* Read back: ordered from the ordered part, shared in any order from the start. */
    MPI_CHK(MPI_File_seek_shared(fh, total, MPI_SEEK_SET));
    MPI_CHK(MPI_File_read_ordered(fh, back, n, MPI_INT, &st));
    check_count(&st, MPI_INT, n, "read_ordered count");
    for (int i = 0; i < n; i++)
        CHECK_EQ(back[i], t_rank, "read_ordered");
    MPI_CHK(MPI_File_read_ordered_begin(fh, back, n, MPI_INT));
    MPI_CHK(MPI_File_read_ordered_end(fh, back, &st));
    CHECK_EQ(back[n - 1], t_rank, "read_ordered_end");
    MPI_CHK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    MPI_Request rq;
    MPI_CHK(MPI_File_iread_shared(fh, back, 1, MPI_INT, &rq));
    MPI_CHK(MPI_Wait(&rq, &st));
    check_count(&st, MPI_INT, 1, "iread_shared count");
    MPI_CHK(MPI_File_read_shared(fh, back + 1, 1, MPI_INT, &st));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_File_get_position_shared(fh, &pos));
    CHECK_EQ(pos, 2 * t_size, "shared position after 2 reads of one int by each rank");
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_File_iwrite_shared(fh, mine, 1, MPI_INT, &rq));
    MPI_CHK(MPI_Wait(&rq, &st));
    check_count(&st, MPI_INT, 1, "iwrite_shared count");
    MPI_CHK(MPI_File_close(&fh));
}

static int handler_calls, handler_class;
static void count_errors(MPI_File *fh, int *code, ...)
{
    (void)fh;
    handler_calls++;
    handler_class = error_class(*code);
}

/* Modes, sizes, hints, errors and handlers. */
static void modes_and_errors(void)
{
    MPI_File fh;
    MPI_Status st;
    int x[4] = {1, 2, 3, 4};
    MPI_Errhandler eh;
    MPI_CHK(MPI_File_get_errhandler(MPI_FILE_NULL, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "the default file error handler is MPI_ERRORS_RETURN");
    int rc = MPI_File_open(MPI_COMM_WORLD, path("missing"), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK_EQ(error_class(rc), MPI_ERR_NO_SUCH_FILE, "class of opening a missing file");
    CHECK(strstr(t_errstr(rc), "missing") != NULL, "the error string names the file: %s", t_errstr(rc));
    CHECK_CLASS(MPI_File_open(MPI_COMM_WORLD, path("x"), MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh),
                MPI_ERR_AMODE);
    CHECK_CLASS(MPI_File_open(MPI_COMM_WORLD, path("at"), MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY,
                              MPI_INFO_NULL, &fh),
                MPI_ERR_FILE_EXISTS);
    if (t_rank == 0)
        CHECK_CLASS(MPI_File_delete(path("missing"), MPI_INFO_NULL), MPI_ERR_NO_SUCH_FILE);

    /* Read-only: writing fails; a file error handler sees it. */
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, path("at"), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    MPI_CHK(MPI_File_get_errhandler(fh, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "an opened file's error handler is MPI_ERRORS_RETURN");
    CHECK_CLASS(MPI_File_write_at(fh, 0, x, 4, MPI_INT, &st), MPI_ERR_READ_ONLY);
    MPI_CHK(MPI_File_create_errhandler(count_errors, &eh));
    MPI_CHK(MPI_File_set_errhandler(fh, eh));
    MPI_Errhandler got;
    MPI_CHK(MPI_File_get_errhandler(fh, &got));
    CHECK(got == eh, "get_errhandler returns the handler set");
    CHECK(MPI_File_write(fh, x, 1, MPI_INT, &st) != MPI_SUCCESS, "write on a read-only file succeeded");
    CHECK_EQ(handler_calls, 1, "file error handler calls");
    CHECK_EQ(handler_class, MPI_ERR_READ_ONLY, "class the handler saw");
    MPI_CHK(MPI_File_call_errhandler(fh, MPI_ERR_IO));
    CHECK_EQ(handler_calls, 2, "handler calls after MPI_File_call_errhandler");
    CHECK_EQ(handler_class, MPI_ERR_IO, "class from MPI_File_call_errhandler");
    MPI_CHK(MPI_Errhandler_free(&eh));
    int amode = 0;
    MPI_CHK(MPI_File_get_amode(fh, &amode));
    CHECK_EQ(amode, MPI_MODE_RDONLY, "amode");
    MPI_Group g1, g2;
    int cmp = -1;
    MPI_CHK(MPI_File_get_group(fh, &g1));
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &g2));
    MPI_CHK(MPI_Group_compare(g1, g2, &cmp));
    CHECK_EQ(cmp, MPI_IDENT, "file group vs communicator group");
    MPI_CHK(MPI_Group_free(&g1));
    MPI_CHK(MPI_Group_free(&g2));
    MPI_Fint f = MPI_File_c2f(fh);
    CHECK(MPI_File_f2c(f) == fh, "File_f2c(File_c2f(fh)) == fh");
    MPI_CHK(MPI_File_close(&fh));

    /* Sizes and hints. */
    MPI_Info info;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "cb_buffer_size", "8388608"));
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, path("sized"), MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                          info, &fh));
    MPI_CHK(MPI_Info_free(&info));
    MPI_CHK(MPI_File_get_info(fh, &info));
    char val[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    MPI_CHK(MPI_Info_get(info, "cb_buffer_size", MPI_MAX_INFO_VAL, val, &flag));
    CHECK(flag && !strcmp(val, "8388608"), "cb_buffer_size hint reported: flag %d '%s'", flag, val);
    MPI_CHK(MPI_Info_get(info, "cb_nodes", MPI_MAX_INFO_VAL, val, &flag));
    CHECK(flag && atoi(val) >= 1, "cb_nodes hint reported: flag %d '%s'", flag, val);
    MPI_CHK(MPI_Info_free(&info));
    MPI_CHK(MPI_File_set_size(fh, 1000));
    MPI_Offset size = -1;
    MPI_CHK(MPI_File_get_size(fh, &size));
    CHECK_EQ(size, 1000, "size after set_size");
    MPI_CHK(MPI_File_preallocate(fh, 500));
    MPI_CHK(MPI_File_get_size(fh, &size));
    CHECK_EQ(size, 1000, "preallocate never shrinks");
    MPI_CHK(MPI_File_preallocate(fh, 4096));
    MPI_CHK(MPI_File_get_size(fh, &size));
    CHECK_EQ(size, 4096, "size after preallocate");
    MPI_CHK(MPI_File_set_size(fh, 10));
    MPI_CHK(MPI_File_get_size(fh, &size));
    CHECK_EQ(size, 10, "size after shrinking");
    CHECK_EQ(file_size("sized"), 10, "stat size");
    MPI_CHK(MPI_File_set_atomicity(fh, 1));
    MPI_CHK(MPI_File_get_atomicity(fh, &flag));
    CHECK_EQ(flag, 1, "atomicity");
    MPI_CHK(MPI_File_write_at_all(fh, (MPI_Offset)t_rank * 16, x, 4, MPI_INT, &st));
    MPI_Aint extent = 0;
    MPI_CHK(MPI_File_get_type_extent(fh, MPI_DOUBLE, &extent));
    CHECK_EQ(extent, 8, "type extent of MPI_DOUBLE");
    MPI_CHK(MPI_File_close(&fh));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(access(path("sized"), F_OK) != 0, "MPI_MODE_DELETE_ON_CLOSE left the file");

    /* Append: both pointers start at the end. */
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, path("at"), MPI_MODE_WRONLY | MPI_MODE_APPEND, MPI_INFO_NULL, &fh));
    MPI_Offset pos = -1;
    MPI_CHK(MPI_File_get_position(fh, &pos));
    CHECK_EQ(pos, (long)t_size * N * 4, "MPI_MODE_APPEND individual pointer");
    MPI_CHK(MPI_File_get_position_shared(fh, &pos));
    CHECK_EQ(pos, (long)t_size * N * 4, "MPI_MODE_APPEND shared pointer");
    CHECK_CLASS(MPI_File_read_at(fh, 0, x, 1, MPI_INT, &st), MPI_ERR_ACCESS);
    MPI_CHK(MPI_File_close(&fh));

    /* Sequential: only the shared pointer. */
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, path("seq"), MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL,
                          MPI_INFO_NULL, &fh));
    CHECK_CLASS(MPI_File_write_at(fh, 0, x, 1, MPI_INT, &st), MPI_ERR_UNSUPPORTED_OPERATION);
    MPI_CHK(MPI_File_write_ordered(fh, x, 2, MPI_INT, &st));
    MPI_CHK(MPI_File_close(&fh));
    CHECK_EQ(file_size("seq"), (long)t_size * 8, "sequential file size");

    /* external32: big-endian ints in the file. */
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, path("ext"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_CHK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
    int word = 0x01020304 + t_rank, back = 0;
    MPI_CHK(MPI_File_write_at_all(fh, t_rank, &word, 1, MPI_INT, &st));
    MPI_CHK(MPI_File_read_at_all(fh, t_rank, &back, 1, MPI_INT, &st));
    CHECK_EQ(back, word, "external32 read back");
    MPI_CHK(MPI_File_close(&fh));
    unsigned char be[4];
    CHECK_EQ(file_bytes("ext", (long)t_rank * 4, be, 4), 4, "external32 bytes");
    CHECK(be[0] == 1 && be[1] == 2 && be[2] == 3 && be[3] == 4 + t_rank, "external32 is big-endian: %02x%02x%02x%02x",
          be[0], be[1], be[2], be[3]);
}

/* Each MPI-IO error class has a string of its own (not the one of MPI_ERR_UNKNOWN). Before any
 * error happens: the library may add the last error's details to its class's string. */
static void class_strings(void)
{
    int classes[] = {MPI_ERR_FILE, MPI_ERR_NO_SUCH_FILE, MPI_ERR_AMODE, MPI_ERR_ACCESS, MPI_ERR_FILE_EXISTS,
                     MPI_ERR_READ_ONLY, MPI_ERR_NO_SPACE, MPI_ERR_IO, MPI_ERR_DUP_DATAREP,
                     MPI_ERR_UNSUPPORTED_DATAREP, MPI_ERR_UNSUPPORTED_OPERATION, MPI_ERR_FILE_IN_USE,
                     MPI_ERR_CONVERSION, MPI_ERR_QUOTA, MPI_ERR_BAD_FILE, MPI_ERR_NOT_SAME};
    char unknown[MPI_MAX_ERROR_STRING], s[MPI_MAX_ERROR_STRING];
    int len;
    MPI_CHK(MPI_Error_string(MPI_ERR_UNKNOWN, unknown, &len));
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
        MPI_CHK(MPI_Error_string(classes[i], s, &len));
        CHECK(len > 0 && strcmp(s, unknown) != 0, "error class %d reads as MPI_ERR_UNKNOWN: %s", classes[i], s);
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "file_io", 1);
    class_strings();
    if (t_rank == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/bb_file_io_XXXXXX", tmp && *tmp ? tmp : "/tmp");
        CHECK(mkdtemp(dir) != NULL, "mkdtemp %s", dir);
    }
    MPI_CHK(MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD));
    explicit_offsets();
    individual_pointer();
    nonblocking_overlap();
    atomic_two_phase();
    sieved_writes("524288", "automatic");
    sieved_writes("100", "enable");
    strided_collective(MPI_INFO_NULL);
    {
        /* The same through ROMIO's two-phase I/O: two aggregators, 256-byte rounds. */
        MPI_Info info;
        MPI_CHK(MPI_Info_create(&info));
        MPI_CHK(MPI_Info_set(info, "romio_cb_write", "enable"));
        MPI_CHK(MPI_Info_set(info, "romio_cb_read", "enable"));
        MPI_CHK(MPI_Info_set(info, "cb_nodes", "2"));
        MPI_CHK(MPI_Info_set(info, "cb_buffer_size", "256"));
        strided_collective(info);
        MPI_CHK(MPI_Info_free(&info));
    }
    subarray_view();
    shared_and_ordered();
    modes_and_errors();
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    /* A file left open at MPI_Finalize (erroneous, but nothing of the job's may outlive it): its
     * shared pointer used, MPI_MODE_DELETE_ON_CLOSE. On Billboard the directory is empty after
     * MPI_Finalize; MPICH 4.0.2 leaves both the file and the side file. */
    MPI_File left;
    MPI_CHK(MPI_File_open(MPI_COMM_WORLD, path("left_open"),
                          MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &left));
    MPI_CHK(MPI_File_write_shared(left, &t_rank, 1, MPI_INT, MPI_STATUS_IGNORE));
    int ours = t_on_billboard(), rank = t_rank;
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    int rc = MPI_Finalize();
    if (rc != MPI_SUCCESS) {
        printf("FAIL file_io: MPI_Finalize returned %d (rank %d)\n", rc, rank);
        _exit(1);
    }
    if (rank != 0)
        return 0;
    /* Everything the test made (and, on MPICH, what it left). */
    int left_behind = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            if (strstr(e->d_name, "left_open") || strstr(e->d_name, ".shfp.")) {
                if (ours)
                    printf("FAIL file_io: %s outlived MPI_Finalize (rank 0, %s:%d)\n", e->d_name, __FILE__, __LINE__);
                left_behind++;
            }
            unlink(path(e->d_name));
        }
    if (d)
        closedir(d);
    if (rmdir(dir) != 0) {
        printf("FAIL file_io: rmdir %s (rank 0)\n", dir);
        _exit(1);
    }
    if (ours && left_behind) {
        fflush(stdout);
        _exit(1);
    }
    printf("PASS file_io\n");
    fflush(stdout);
    return 0;
}
