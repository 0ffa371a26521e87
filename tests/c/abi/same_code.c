/* A program touching the parts of <mpi.h> that end up in object code: handles, sentinel
 * pointers, callback constants (MPI_COMM_DUP_FN -> MPIR_Dup_fn), exported objects
 * (MPI_UNWEIGHTED), the status layout and a range of prototypes, MPI-IO's among them. crates/mpi/tests/abi.rs
 * compiles it against our header and MPICH's, as C and as C++, and requires the disassembly
 * with relocations to be identical: the contract of mpi.h, checked directly. Compiled only. */
#include <mpi.h>
#include <stdio.h>

/* A user callback: in C++ its mangled name involves MPI_Comm, so the typedefs must agree. */
static int copy_attr(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag) {
    (void)comm, (void)keyval, (void)extra;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    int rank, size, provided, keyval, found, *tag_ub;
    double x = 1.0, y;
    MPI_Status status;
    MPI_Request request;
    MPI_Comm dup, graph;
    MPI_Datatype type;
    MPI_Message message;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
    MPI_Comm_create_keyval(copy_attr, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
    MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &keyval, NULL);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_SUM, dup);
    MPI_Reduce(&x, &y, 1, MPI_DOUBLE_INT, MPI_MAXLOC, 0, MPI_COMM_WORLD);
    MPI_Sendrecv(&x, 1, MPI_DOUBLE, (rank + 1) % size, 0, &y, 1, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                 MPI_COMM_WORLD, &status);
    MPI_Irecv(&y, 1, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    MPI_Improbe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &found, &message, &status);
    if (message == MPI_MESSAGE_NO_PROC)
        printf("no-proc message\n");
    MPI_Type_contiguous(3, MPI_LONG_DOUBLE_INT, &type);
    MPI_Type_commit(&type);
    MPI_Type_free(&type);
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_UNWEIGHTED, 0, NULL, MPI_WEIGHTS_EMPTY,
                                   MPI_INFO_NULL, 0, &graph);
    printf("%d %d %d %lu\n", status.MPI_SOURCE, status.MPI_TAG, status.MPI_ERROR, (unsigned long)sizeof status);
    if (graph != MPI_COMM_NULL)
        MPI_Comm_free(&graph);
    /* MPI-IO: a pointer handle, MPI_Offset arguments, large-count twins, c2f. */
    MPI_File fh;
    MPI_Offset end;
    MPI_File_open(MPI_COMM_WORLD, "f", MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    MPI_File_write_at_all(fh, (MPI_Offset)rank, &rank, 1, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_read_at_c(fh, 0, &size, (MPI_Count)1, MPI_INT, &status);
    MPI_File_iread_shared(fh, &size, 1, MPI_INT, &request);
    MPI_Wait(&request, &status);
    MPI_File_get_size(fh, &end);
    MPI_File_seek(fh, end, MPI_SEEK_END);
    printf("%d\n", MPI_File_c2f(fh));
    MPI_File_close(&fh);
    if (fh == MPI_FILE_NULL)
        MPI_File_delete("f", MPI_INFO_NULL);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
