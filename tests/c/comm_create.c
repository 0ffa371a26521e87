/* Communicators made from groups and colors, where each process passes its own argument:
 * MPI_Comm_create with a different (disjoint) group per process (MPI 2.2), MPI_Comm_create_group
 * by several disjoint groups at once, MPI_Comm_split into many colors, and
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) on communicators whose ranks are not the world's
 * (MPI_COMM_SELF, a reversed and a shrunk communicator). Any N >= 1 (most meaningful at N >= 3). */
#include "common.h"

/* `c` has `n` members, the world ranks `want` in rank order. */
static void expect_world_ranks(MPI_Comm c, const int *want, int n, const char *what)
{
    CHECK(c != MPI_COMM_NULL, "%s: got MPI_COMM_NULL", what);
    int s = -1, r = -1;
    MPI_CHK(MPI_Comm_size(c, &s));
    CHECK(s == n, "%s: size %d, expected %d", what, s, n);
    MPI_Group g, world;
    MPI_CHK(MPI_Comm_group(c, &g));
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int *idx = malloc(sizeof(int) * (size_t)n), *got = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        idx[i] = i;
    MPI_CHK(MPI_Group_translate_ranks(g, n, idx, world, got));
    for (int i = 0; i < n; i++)
        CHECK(got[i] == want[i], "%s: rank %d is world rank %d, expected %d", what, i, got[i], want[i]);
    MPI_CHK(MPI_Comm_rank(c, &r));
    CHECK(r >= 0 && r < n && want[r] == t_rank, "%s: my rank %d does not name me (world rank %d)", what, r, t_rank);
    /* It works: the ranks add up. */
    int sum = -1;
    MPI_CHK(MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == n * (n - 1) / 2, "%s: sum of ranks %d, expected %d", what, sum, n * (n - 1) / 2);
    MPI_CHK(MPI_Group_free(&g));
    MPI_CHK(MPI_Group_free(&world));
    free(idx);
    free(got);
}

/* The world ranks of color `color` (rank % ncolors) in descending order. */
static int members_desc(int color, int ncolors, int *out)
{
    int n = 0;
    for (int r = t_size - 1; r >= 0; r--)
        if (r % ncolors == color)
            out[n++] = r;
    return n;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "comm_create", 1);
    const int rank = t_rank, size = t_size;
    int *want = malloc(sizeof(int) * (size_t)size);
    MPI_Group world;
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));

    /* Comm_create, each process with the group of its own color (rank % 3), members listed in
     * descending order: one communicator per group, ranked in group order. */
    for (int ncolors = 1; ncolors <= 3; ncolors++) {
        int n = members_desc(rank % ncolors, ncolors, want);
        MPI_Group g;
        MPI_CHK(MPI_Group_incl(world, n, want, &g));
        MPI_Comm c;
        MPI_CHK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
        char what[64];
        snprintf(what, sizeof what, "Comm_create by %d disjoint groups", ncolors);
        expect_world_ranks(c, want, n, what);
        MPI_CHK(MPI_Comm_free(&c));
        /* The same on a reversed communicator (its ranks are not the world's). */
        MPI_Comm rev;
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev));
        MPI_CHK(MPI_Comm_create(rev, g, &c));
        snprintf(what, sizeof what, "Comm_create on a reversed communicator by %d groups", ncolors);
        expect_world_ranks(c, want, n, what);
        MPI_CHK(MPI_Comm_free(&c));
        MPI_CHK(MPI_Comm_free(&rev));
        /* Comm_create_group: every group at once, with the same tag. */
        MPI_CHK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 5, &c));
        snprintf(what, sizeof what, "Comm_create_group by %d disjoint groups", ncolors);
        expect_world_ranks(c, want, n, what);
        MPI_CHK(MPI_Comm_free(&c));
        MPI_CHK(MPI_Group_free(&g));
    }

    /* Comm_create where only some processes are in a group: the others pass MPI_GROUP_EMPTY or a
     * group they are not in, and get MPI_COMM_NULL. Here ranks 0 and 1 make a group of one each. */
    {
        MPI_Group g = MPI_GROUP_EMPTY;
        int self = rank;
        if (rank < 2)
            MPI_CHK(MPI_Group_incl(world, 1, &self, &g));
        MPI_Comm c;
        MPI_CHK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
        if (rank < 2) {
            expect_world_ranks(c, &self, 1, "Comm_create by groups of one");
            MPI_CHK(MPI_Comm_free(&c));
            MPI_CHK(MPI_Group_free(&g));
        } else {
            CHECK(c == MPI_COMM_NULL, "Comm_create with MPI_GROUP_EMPTY gave a communicator");
        }
    }

    /* Split into many colors: one per rank, then rank % 3 with keys reversing the order. */
    {
        MPI_Comm c;
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &c));
        expect_world_ranks(c, &rank, 1, "Comm_split, one color per rank");
        MPI_CHK(MPI_Comm_free(&c));
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, 1000 + rank % 3, -rank, &c));
        int n = members_desc(rank % 3, 3, want);
        expect_world_ranks(c, want, n, "Comm_split, three colors, reversed keys");
        MPI_CHK(MPI_Comm_free(&c));
    }

    /* Split_type SHARED on communicators whose ranks are not the world's: MPI_COMM_SELF (my rank
     * there is 0), a reversed communicator and one without world rank 0 (all ranks of this suite
     * share one host). */
    {
        MPI_Comm c;
        MPI_CHK(MPI_Comm_split_type(MPI_COMM_SELF, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c));
        expect_world_ranks(c, &rank, 1, "Comm_split_type(MPI_COMM_SELF, SHARED)");
        MPI_CHK(MPI_Comm_free(&c));
        MPI_Comm rev;
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev));
        MPI_CHK(MPI_Comm_split_type(rev, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c));
        for (int i = 0; i < size; i++)
            want[i] = size - 1 - i;
        expect_world_ranks(c, want, size, "Comm_split_type(reversed, SHARED)");
        MPI_CHK(MPI_Comm_free(&c));
        MPI_CHK(MPI_Comm_free(&rev));
        MPI_Comm rest;
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 0, 0, &rest));
        if (rank != 0) {
            MPI_CHK(MPI_Comm_split_type(rest, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c));
            for (int i = 0; i < size - 1; i++)
                want[i] = i + 1;
            expect_world_ranks(c, want, size - 1, "Comm_split_type(without rank 0, SHARED)");
            MPI_CHK(MPI_Comm_free(&c));
            MPI_CHK(MPI_Comm_free(&rest));
        }
    }

    MPI_CHK(MPI_Group_free(&world));
    free(want);
    return t_finish();
}
