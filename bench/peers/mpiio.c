/* MPI-IO bandwidth of a collective write and read of one large file (bench/peers/mpiio.sh runs
 * it on Billboard and on MPICH, the same binary).
 *
 *   mpiio FILE [--size 1G] [--chunk 16M] [--pattern blocks|interleaved] [--cb automatic|enable|disable]
 *
 * blocks: rank r owns bytes [r*S/n, (r+1)*S/n) and writes them chunk by chunk with
 * MPI_File_write_at_all. interleaved: a file view of CHUNK/n-byte blocks round-robin over the
 * ranks (a vector filetype), so every collective call covers one contiguous CHUNK-sized stretch
 * of the file made of every rank's pieces, the case ROMIO's two-phase I/O aggregates. --cb sets
 * the hints romio_cb_write and romio_cb_read (collective buffering: two-phase I/O) for both.
 * Timed from a barrier to the end of each phase on the slowest rank: the write (into the page
 * cache), MPI_File_sync (to the disk), the read (MPI_File_read_at_all, the same pattern) of the
 * just-written file, which the page cache usually still holds. Rank 0 prints one line:
 *   pattern/cb size_bytes write_MBps sync_MBps read_MBps
 * (MB = 10^6 bytes; write+sync as one rate). The file is removed at the end. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long long parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'G': case 'g': v *= 1 << 30; break;
    case 'M': case 'm': v *= 1 << 20; break;
    case 'K': case 'k': v *= 1 << 10; break;
    }
    return (long long)v;
}

static double slowest(double t0)
{
    double mine = MPI_Wtime() - t0, max = 0;
    MPI_Allreduce(&mine, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return max;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiio FILE [--size 1G] [--chunk 16M] [--pattern blocks|interleaved] [--cb MODE]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *name = argv[1], *pattern = "blocks", *cb = "automatic";
    long long size = 1LL << 30, chunk = 16 << 20;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--size"))
            size = parse_size(argv[i + 1]);
        else if (!strcmp(argv[i], "--chunk"))
            chunk = parse_size(argv[i + 1]);
        else if (!strcmp(argv[i], "--pattern"))
            pattern = argv[i + 1];
        else if (!strcmp(argv[i], "--cb"))
            cb = argv[i + 1];
    }
    int interleaved = !strcmp(pattern, "interleaved");
    long long per_rank = size / n, piece = interleaved ? chunk / n : chunk;
    long long calls = per_rank / piece;
    char *buf = malloc((size_t)piece);
    for (long long i = 0; i < piece; i++)
        buf[i] = (char)(i * 7 + rank);
    MPI_File fh;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_cb_write", cb);
    MPI_Info_set(info, "romio_cb_read", cb);
    MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
    MPI_Info_free(&info);
    MPI_Datatype filetype = MPI_BYTE;
    if (interleaved) {
        MPI_Datatype block;
        MPI_Type_contiguous((int)piece, MPI_BYTE, &block);
        MPI_Type_create_resized(block, 0, piece * n, &filetype);
        MPI_Type_commit(&filetype);
        MPI_Type_free(&block);
        MPI_File_set_view(fh, piece * rank, MPI_BYTE, filetype, "native", MPI_INFO_NULL);
    }
    /* Explicit offsets in the view's etypes (bytes): blocks go to the rank's own region. */
    MPI_Offset base = interleaved ? 0 : per_rank * rank;
    MPI_Status st;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long long c = 0; c < calls; c++)
        MPI_File_write_at_all(fh, base + c * piece, buf, (int)piece, MPI_BYTE, &st);
    double write = slowest(t0);
    t0 = MPI_Wtime();
    MPI_File_sync(fh);
    double sync = slowest(t0);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (long long c = 0; c < calls; c++)
        MPI_File_read_at_all(fh, base + c * piece, buf, (int)piece, MPI_BYTE, &st);
    double read = slowest(t0);
    int ok = buf[1] == (char)(7 + rank), all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    MPI_File_close(&fh);
    if (interleaved)
        MPI_Type_free(&filetype);
    long long total = calls * piece * n;
    if (rank == 0) {
        MPI_File_delete(name, MPI_INFO_NULL);
        if (!all)
            fprintf(stderr, "mpiio: the data read back differs\n");
        printf("%s/%s %lld %.0f %.0f %.0f\n", pattern, cb, total, total / write / 1e6, total / (write + sync) / 1e6,
               total / read / 1e6);
    }
    free(buf);
    MPI_Finalize();
    return all ? 0 : 1;
}
