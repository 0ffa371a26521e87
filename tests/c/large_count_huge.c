/* A message of more than 2^31 elements: rank 0 sends 2^31 + 5 MPI_CHARs with MPI_Send_c,
 * rank 1 receives them with MPI_Recv_c into a larger buffer, checks sampled bytes across the
 * whole message and the 2^31 boundary, and MPI_Get_count_c / MPI_Get_elements_c give the full
 * count (MPI_Get_count gives MPI_UNDEFINED). Needs about 2 GiB per rank; 2 ranks. */
#include <limits.h>
#include <stdlib.h>

#include "common.h"

#define COUNT (((MPI_Count)1 << 31) + 5)

static unsigned char byte_at(MPI_Count i)
{
    return (unsigned char)((i * 7 + (i >> 20)) & 0xff);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "large_count_huge", 2);
    if (t_rank == 0) {
        unsigned char *buf = malloc(COUNT);
        CHECK(buf != NULL, "malloc of %lld bytes", (long long)COUNT);
        for (MPI_Count i = 0; i < COUNT; i++)
            buf[i] = byte_at(i);
        MPI_CHK(MPI_Send_c(buf, COUNT, MPI_CHAR, 1, 3, MPI_COMM_WORLD));
        free(buf);
    } else if (t_rank == 1) {
        MPI_Count room = COUNT + 16;
        unsigned char *buf = malloc(room);
        CHECK(buf != NULL, "malloc of %lld bytes", (long long)room);
        for (MPI_Count i = COUNT; i < room; i++)
            buf[i] = 0xA5;
        MPI_Status st;
        MPI_CHK(MPI_Recv_c(buf, room, MPI_CHAR, 0, 3, MPI_COMM_WORLD, &st));
        for (MPI_Count i = 0; i < COUNT; i += 4093)
            CHECK(buf[i] == byte_at(i), "byte %lld: expected %d, got %d", (long long)i, byte_at(i), buf[i]);
        for (MPI_Count i = ((MPI_Count)1 << 31) - 8; i < COUNT; i++)
            CHECK(buf[i] == byte_at(i), "byte %lld: expected %d, got %d", (long long)i, byte_at(i), buf[i]);
        CHECK(buf[COUNT] == 0xA5, "the byte after the message is untouched");
        MPI_Count n = -1;
        MPI_CHK(MPI_Get_count_c(&st, MPI_CHAR, &n));
        CHECK_EQ(n, COUNT, "MPI_Get_count_c of the message");
        MPI_CHK(MPI_Get_elements_c(&st, MPI_CHAR, &n));
        CHECK_EQ(n, COUNT, "MPI_Get_elements_c of the message");
        int in = 0;
        MPI_CHK(MPI_Get_count(&st, MPI_CHAR, &in));
        CHECK_EQ(in, MPI_UNDEFINED, "MPI_Get_count of the message");
        free(buf);
    }
    return t_finish();
}
