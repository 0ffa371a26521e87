/* MPI 4.0's hardware split types. MPI_COMM_TYPE_HW_GUIDED: no info, an info without
 * "mpi_hw_resource_type" or with a type the library does not know give MPI_COMM_NULL;
 * "mpi_shared_memory" gives the MPI_COMM_TYPE_SHARED communicator; ranks that pass MPI_UNDEFINED
 * beside it get MPI_COMM_NULL and leave the others a smaller group. MPI_COMM_TYPE_HW_UNGUIDED:
 * repeated splits give ever smaller communicators, each naming its resource type in the info,
 * until MPI_COMM_NULL (the properties mpi4py's test checks). Any N >= 1. */
#include "common.h"

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "split_type_hw", 1);
    MPI_Comm c;
    MPI_CHK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, MPI_INFO_NULL, &c));
    CHECK(c == MPI_COMM_NULL, "MPI_COMM_TYPE_HW_GUIDED without info");
    MPI_Info info;
    MPI_CHK(MPI_Info_create(&info));
    MPI_CHK(MPI_Info_set(info, "foo", "bar"));
    MPI_CHK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &c));
    CHECK(c == MPI_COMM_NULL, "MPI_COMM_TYPE_HW_GUIDED without a resource type");
    MPI_CHK(MPI_Info_set(info, "mpi_hw_resource_type", "@no-such-resource@"));
    MPI_CHK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &c));
    CHECK(c == MPI_COMM_NULL, "MPI_COMM_TYPE_HW_GUIDED with an unknown resource type");

    MPI_CHK(MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory"));
    MPI_Comm shared;
    MPI_CHK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &c));
    MPI_CHK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
    CHECK(c != MPI_COMM_NULL, "MPI_COMM_TYPE_HW_GUIDED with mpi_shared_memory gave MPI_COMM_NULL");
    int result = -1;
    MPI_CHK(MPI_Comm_compare(c, shared, &result));
    CHECK_EQ(result, MPI_CONGRUENT, "HW_GUIDED mpi_shared_memory against MPI_COMM_TYPE_SHARED");
    MPI_CHK(MPI_Comm_free(&c));
    MPI_CHK(MPI_Comm_free(&shared));
    /* One rank at a time asks, the others pass MPI_UNDEFINED. */
    for (int root = 0; root < t_size; root++) {
        MPI_CHK(MPI_Comm_split_type(MPI_COMM_WORLD, t_rank == root ? MPI_COMM_TYPE_HW_GUIDED : MPI_UNDEFINED, 0, info,
                                    &c));
        if (t_rank == root) {
            int size = -1;
            CHECK(c != MPI_COMM_NULL, "the asking rank got MPI_COMM_NULL");
            MPI_CHK(MPI_Comm_size(c, &size));
            CHECK_EQ(size, 1, "size of the asking rank's communicator");
            MPI_CHK(MPI_Comm_free(&c));
        } else {
            CHECK(c == MPI_COMM_NULL, "a rank passing MPI_UNDEFINED got a communicator");
        }
    }
    MPI_CHK(MPI_Info_free(&info));

    /* Unguided: smaller each time, until none. */
    MPI_Comm parent = MPI_COMM_WORLD;
    for (int level = 0; level < 32; level++) {
        MPI_Info out;
        MPI_CHK(MPI_Info_create(&out));
        int prank, psize;
        MPI_CHK(MPI_Comm_rank(parent, &prank));
        MPI_CHK(MPI_Comm_size(parent, &psize));
        MPI_CHK(MPI_Comm_split_type(parent, MPI_COMM_TYPE_HW_UNGUIDED, prank, out, &c));
        if (c != MPI_COMM_NULL) {
            char v[MPI_MAX_INFO_VAL];
            int flag = 0, size = -1;
            MPI_CHK(MPI_Info_get(out, "mpi_hw_resource_type", MPI_MAX_INFO_VAL - 1, v, &flag));
            CHECK(flag, "HW_UNGUIDED: no mpi_hw_resource_type in the info");
            MPI_CHK(MPI_Comm_size(c, &size));
            CHECK(size < psize, "HW_UNGUIDED: size %d not smaller than %d", size, psize);
        }
        MPI_CHK(MPI_Info_free(&out));
        if (parent != MPI_COMM_WORLD)
            MPI_CHK(MPI_Comm_free(&parent));
        if (c == MPI_COMM_NULL)
            break;
        parent = c;
    }
    return t_finish();
}
