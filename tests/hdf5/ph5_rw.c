/* A parallel HDF5 program as any MPICH user builds it (Debian's h5pcc.mpich): it creates a file
 * through the MPI-IO driver (H5Pset_fapl_mpio), writes two 2-D datasets collectively
 * (H5FD_MPIO_COLLECTIVE), each rank one hyperslab (a block of rows of one, a block of columns
 * of the other: strided in the file), and a chunked one (a rank's columns across chunks), with
 * collective metadata operations, closes it, opens it again and reads both back whole on
 * every rank, collectively and independently, and checks every value. Rank 0 prints
 * "PASS ph5_rw" at the end; any check that fails prints FAIL and ends the job non-zero.
 *
 *   ph5_rw FILE [two-phase] the test (any number of ranks that divides ROWS and COLS); with
 *                           "two-phase", hints ask for collective buffering (ROMIO's
 *                           romio_cb_write/read "enable", 2 aggregators, 512-byte rounds)
 *   ph5_rw --expect         prints the values h5dump should show for each dataset
 *
 * The file is checked from outside with h5dump (tests/tests/hdf5.rs).
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROWS = 16, COLS = 24 };

static int value(int r, int c) { return r * 1000 + c; }

static int rank;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            printf("FAIL ph5_rw: ");                                                                                   \
            printf(__VA_ARGS__);                                                                                       \
            printf(" (rank %d, line %d)\n", rank, __LINE__);                                                           \
            fflush(stdout);                                                                                            \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                              \
        }                                                                                                              \
    } while (0)

/* Writes this rank's block of `name`: rows [r0, r0 + nr) x columns [c0, c0 + nc); in chunks of
 * 4 x 6 if `chunked` (each rank's block then spans several chunks, each chunk several ranks). */
static void write_block(hid_t file, const char *name, int r0, int nr, int c0, int nc, int chunked)
{
    hsize_t dims[2] = {ROWS, COLS}, chunk[2] = {4, 6};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (chunked)
        H5Pset_chunk(dcpl, 2, chunk);
    hid_t dset = H5Dcreate2(file, name, H5T_NATIVE_INT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    CHECK(dset >= 0, "H5Dcreate2 %s", name);
    hsize_t start[2] = {(hsize_t)r0, (hsize_t)c0}, count[2] = {(hsize_t)nr, (hsize_t)nc};
    CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL) >= 0, "select %s", name);
    hid_t mem = H5Screate_simple(2, count, NULL);
    int *buf = malloc(sizeof(int) * nr * nc);
    for (int r = 0; r < nr; r++)
        for (int c = 0; c < nc; c++)
            buf[r * nc + c] = value(r0 + r, c0 + c);
    hid_t xfer = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(xfer, H5FD_MPIO_COLLECTIVE);
    CHECK(H5Dwrite(dset, H5T_NATIVE_INT, mem, space, xfer, buf) >= 0, "H5Dwrite %s", name);
    /* An attribute too: metadata written by the library's own rules. */
    hid_t aspace = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(dset, "ranks", H5T_NATIVE_INT, aspace, H5P_DEFAULT, H5P_DEFAULT);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(H5Awrite(attr, H5T_NATIVE_INT, &size) >= 0, "H5Awrite");
    H5Aclose(attr);
    H5Sclose(aspace);
    free(buf);
    H5Pclose(xfer);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(dset);
}

/* Reads `name` whole and checks it. */
static void read_all(hid_t file, const char *name, H5FD_mpio_xfer_t mode)
{
    hid_t dset = H5Dopen2(file, name, H5P_DEFAULT);
    CHECK(dset >= 0, "H5Dopen2 %s", name);
    static int buf[ROWS * COLS];
    memset(buf, 0xff, sizeof buf);
    hid_t xfer = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(xfer, mode);
    CHECK(H5Dread(dset, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, xfer, buf) >= 0, "H5Dread %s", name);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            CHECK(buf[r * COLS + c] == value(r, c), "%s[%d][%d] = %d, expected %d", name, r, c, buf[r * COLS + c],
                  value(r, c));
    H5Pclose(xfer);
    H5Dclose(dset);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--expect")) {
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < COLS; c++)
                printf("%d\n", value(r, c));
        return 0;
    }
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1, "usage: ph5_rw FILE");
    CHECK(ROWS % size == 0 && COLS % size == 0, "%d ranks do not divide %dx%d", size, ROWS, COLS);
    const char *name = argv[1];

    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_buffer_size", "1048576");
    if (argc > 2 && !strcmp(argv[2], "two-phase")) {
        MPI_Info_set(info, "romio_cb_write", "enable");
        MPI_Info_set(info, "romio_cb_read", "enable");
        MPI_Info_set(info, "cb_nodes", "2");
        MPI_Info_set(info, "cb_buffer_size", "512");
    }
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, info);
    /* Metadata read by one rank and broadcast, written collectively: more of MPI in use. */
    H5Pset_all_coll_metadata_ops(fapl, 1);
    H5Pset_coll_metadata_write(fapl, 1);
    hid_t file = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(file >= 0, "H5Fcreate %s", name);
    int nr = ROWS / size, nc = COLS / size;
    write_block(file, "rows", rank * nr, nr, 0, COLS, 0);
    write_block(file, "cols", 0, ROWS, rank * nc, nc, 0);
    write_block(file, "chunked", 0, ROWS, rank * nc, nc, 1);
    CHECK(H5Fclose(file) >= 0, "H5Fclose");

    file = H5Fopen(name, H5F_ACC_RDONLY, fapl);
    CHECK(file >= 0, "H5Fopen %s", name);
    read_all(file, "rows", H5FD_MPIO_COLLECTIVE);
    read_all(file, "cols", H5FD_MPIO_COLLECTIVE);
    read_all(file, "cols", H5FD_MPIO_INDEPENDENT);
    read_all(file, "chunked", H5FD_MPIO_COLLECTIVE);
    CHECK(H5Fclose(file) >= 0, "H5Fclose after reading");
    H5Pclose(fapl);
    MPI_Info_free(&info);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("PASS ph5_rw\n");
    MPI_Finalize();
    return 0;
}
