/* Communicators: Comm_size/rank/group, dup, dup_with_info, idup, split (incl. MPI_UNDEFINED and key
 * order), split_type(MPI_COMM_TYPE_SHARED), create, create_group, free, compare, set_name/get_name,
 * test_inter; message isolation between a communicator and its dup. Any N >= 1. */
#include "common.h"

/* Allreduce of ranks must give size*(size-1)/2 and rank/size must be consistent. */
static void sanity(MPI_Comm c, int want_size, const char *what)
{
    int r = -1, s = -1;
    MPI_CHK(MPI_Comm_rank(c, &r));
    MPI_CHK(MPI_Comm_size(c, &s));
    if (want_size >= 0)
        CHECK(s == want_size, "%s: size expected %d, got %d", what, want_size, s);
    CHECK(r >= 0 && r < s, "%s: rank %d of %d", what, r, s);
    int sum = -1;
    MPI_CHK(MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == s * (s - 1) / 2, "%s: sum of ranks expected %d, got %d", what, s * (s - 1) / 2, sum);
    int flag = 1;
    MPI_CHK(MPI_Comm_test_inter(c, &flag));
    CHECK(flag == 0, "%s: Comm_test_inter of an intracommunicator gave %d", what, flag);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "comm", 1);
    const int rank = t_rank, size = t_size;
    int res = -1;

    sanity(MPI_COMM_WORLD, size, "MPI_COMM_WORLD");
    sanity(MPI_COMM_SELF, 1, "MPI_COMM_SELF");
    MPI_CHK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &res));
    CHECK_EQ(res, MPI_IDENT, "compare(world, world)");
    MPI_CHK(MPI_Comm_compare(MPI_COMM_SELF, MPI_COMM_WORLD, &res));
    CHECK_EQ(res, size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL, "compare(self, world)");

    /* Names. */
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MPI_CHK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK(!strcmp(name, "MPI_COMM_WORLD") && len == 14, "world name '%s' len %d", name, len);
    MPI_CHK(MPI_Comm_get_name(MPI_COMM_SELF, name, &len));
    CHECK(!strcmp(name, "MPI_COMM_SELF") && len == 13, "self name '%s' len %d", name, len);

    /* Dup: congruent, own context, empty name, settable name. */
    MPI_Comm dup;
    MPI_CHK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    sanity(dup, size, "dup");
    MPI_CHK(MPI_Comm_compare(MPI_COMM_WORLD, dup, &res));
    CHECK_EQ(res, MPI_CONGRUENT, "compare(world, dup)");
    {
        int dr;
        MPI_Comm_rank(dup, &dr);
        CHECK_EQ(dr, rank, "rank in dup");
    }
    MPI_CHK(MPI_Comm_set_name(dup, "billboard dup"));
    MPI_CHK(MPI_Comm_get_name(dup, name, &len));
    CHECK(!strcmp(name, "billboard dup") && len == 13, "dup name after set: '%s' len %d", name, len);
    /* The dup inherits the error handler of its parent (MPI_ERRORS_RETURN, set by t_init). */
    {
        MPI_Errhandler eh;
        MPI_CHK(MPI_Comm_get_errhandler(dup, &eh));
        CHECK(eh == MPI_ERRORS_RETURN, "dup errhandler: expected MPI_ERRORS_RETURN, got %#x", (unsigned)eh);
        MPI_CHK(MPI_Errhandler_free(&eh));
    }

    /* Isolation: a message on dup is not visible on world, and vice versa. */
    {
        const int right = (rank + 1) % size, left = (rank + size - 1) % size;
        int a = 100 + rank, b = 200 + rank, ga = -1, gb = -1;
        MPI_Request s[2];
        MPI_CHK(MPI_Isend(&a, 1, MPI_INT, right, 5, dup, &s[0]));
        MPI_CHK(MPI_Isend(&b, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &s[1]));
        MPI_CHK(MPI_Recv(&gb, 1, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Recv(&ga, 1, MPI_INT, left, 5, dup, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Waitall(2, s, MPI_STATUSES_IGNORE));
        CHECK_EQ(ga, 100 + left, "message on dup");
        CHECK_EQ(gb, 200 + left, "message on world");
    }

    /* Dup_with_info and Idup. */
    {
        MPI_Info info;
        MPI_CHK(MPI_Info_create(&info));
        MPI_CHK(MPI_Info_set(info, "billboard_hint", "1"));
        MPI_Comm d2;
        MPI_CHK(MPI_Comm_dup_with_info(dup, info, &d2));
        MPI_CHK(MPI_Info_free(&info));
        sanity(d2, size, "dup_with_info");
        MPI_CHK(MPI_Comm_compare(dup, d2, &res));
        CHECK_EQ(res, MPI_CONGRUENT, "compare(dup, dup_with_info)");
        MPI_Comm d3 = MPI_COMM_NULL;
        MPI_Request r;
        MPI_CHK(MPI_Comm_idup(d2, &d3, &r));
        t_wait_bounded(&r, MPI_STATUS_IGNORE, 20.0, "Comm_idup");
        CHECK(d3 != MPI_COMM_NULL, "Comm_idup gave MPI_COMM_NULL");
        sanity(d3, size, "idup");
        MPI_CHK(MPI_Comm_compare(d3, MPI_COMM_WORLD, &res));
        CHECK_EQ(res, MPI_CONGRUENT, "compare(idup, world)");
        MPI_CHK(MPI_Comm_free(&d3));
        MPI_CHK(MPI_Comm_free(&d2));
        CHECK(d2 == MPI_COMM_NULL, "Comm_free did not set MPI_COMM_NULL");
    }

    /* Split: parity colors, reversed keys. */
    {
        MPI_Comm half;
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half));
        int want = (size + 1 - rank % 2) / 2;
        sanity(half, want, "split by parity");
        int hr;
        MPI_Comm_rank(half, &hr);
        /* Keys reversed: the highest world rank of my color is rank 0. */
        int members_after = 0;
        for (int r = rank + 2; r < size; r += 2)
            members_after++;
        CHECK_EQ(hr, members_after, "rank in split with reversed keys");
        MPI_CHK(MPI_Comm_compare(half, MPI_COMM_WORLD, &res));
        CHECK_EQ(res, size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL, "compare(split half, world)");
        MPI_CHK(MPI_Comm_free(&half));

        /* Same color, reversed keys: similar (same group, different order) when size > 1. */
        MPI_Comm rev;
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, 7, -rank, &rev));
        sanity(rev, size, "split reversed");
        int rr;
        MPI_Comm_rank(rev, &rr);
        CHECK_EQ(rr, size - 1 - rank, "rank in reversed split");
        MPI_CHK(MPI_Comm_compare(rev, MPI_COMM_WORLD, &res));
        CHECK_EQ(res, size == 1 ? MPI_CONGRUENT : MPI_SIMILAR, "compare(reversed split, world)");
        MPI_CHK(MPI_Comm_free(&rev));

        /* Equal keys keep the parent order. */
        MPI_Comm same;
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, 0, 0, &same));
        int sr;
        MPI_Comm_rank(same, &sr);
        CHECK_EQ(sr, rank, "rank in split with equal keys");
        MPI_CHK(MPI_Comm_free(&same));

        /* MPI_UNDEFINED gives MPI_COMM_NULL (rank 0 only). */
        MPI_Comm u;
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 0, &u));
        if (rank == 0)
            CHECK(u == MPI_COMM_NULL, "split with MPI_UNDEFINED did not give MPI_COMM_NULL");
        else {
            sanity(u, size - 1, "split without rank 0");
            MPI_CHK(MPI_Comm_free(&u));
        }
    }

    /* Split_type SHARED: members are exactly the ranks with my processor name. */
    {
        MPI_Comm node;
        MPI_CHK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
        CHECK(node != MPI_COMM_NULL, "split_type SHARED gave MPI_COMM_NULL");
        char me[MPI_MAX_PROCESSOR_NAME] = {0};
        int l;
        MPI_CHK(MPI_Get_processor_name(me, &l));
        char *all = calloc((size_t)size, MPI_MAX_PROCESSOR_NAME);
        MPI_CHK(MPI_Allgather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                              MPI_COMM_WORLD));
        int same = 0;
        for (int r = 0; r < size; r++)
            same += !strcmp(all + (size_t)r * MPI_MAX_PROCESSOR_NAME, me);
        free(all);
        sanity(node, same, "split_type SHARED");
        MPI_CHK(MPI_Comm_free(&node));
        MPI_CHK(MPI_Comm_split_type(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, 0,
                                    MPI_INFO_NULL, &node));
        if (rank == 0)
            CHECK(node == MPI_COMM_NULL, "split_type MPI_UNDEFINED did not give MPI_COMM_NULL");
        else
            MPI_CHK(MPI_Comm_free(&node));
    }

    /* Comm_create from the group of even ranks; odd ranks get MPI_COMM_NULL. */
    MPI_Group world_group, even_group;
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    int neven = (size + 1) / 2;
    int *evens = malloc(sizeof(int) * (size_t)neven);
    for (int i = 0; i < neven; i++)
        evens[i] = 2 * i;
    MPI_CHK(MPI_Group_incl(world_group, neven, evens, &even_group));
    {
        MPI_Comm ec;
        MPI_CHK(MPI_Comm_create(MPI_COMM_WORLD, even_group, &ec));
        if (rank % 2 == 0) {
            CHECK(ec != MPI_COMM_NULL, "Comm_create: member got MPI_COMM_NULL");
            sanity(ec, neven, "Comm_create(evens)");
            int er;
            MPI_Comm_rank(ec, &er);
            CHECK_EQ(er, rank / 2, "rank in Comm_create(evens)");
            MPI_Group g;
            MPI_CHK(MPI_Comm_group(ec, &g));
            MPI_CHK(MPI_Group_compare(g, even_group, &res));
            CHECK_EQ(res, MPI_IDENT, "group of created comm vs its group");
            MPI_CHK(MPI_Group_free(&g));
            MPI_CHK(MPI_Comm_free(&ec));
        } else {
            CHECK(ec == MPI_COMM_NULL, "Comm_create: non-member got a communicator");
        }
        /* Create_group: collective over the group only. */
        if (rank % 2 == 0) {
            MPI_Comm cg;
            MPI_CHK(MPI_Comm_create_group(MPI_COMM_WORLD, even_group, 17, &cg));
            CHECK(cg != MPI_COMM_NULL, "Comm_create_group: member got MPI_COMM_NULL");
            sanity(cg, neven, "Comm_create_group(evens)");
            MPI_CHK(MPI_Comm_free(&cg));
        }
        /* Comm_create with MPI_GROUP_EMPTY: everyone gets MPI_COMM_NULL. */
        MPI_Comm none;
        MPI_CHK(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &none));
        CHECK(none == MPI_COMM_NULL, "Comm_create(GROUP_EMPTY) did not give MPI_COMM_NULL");
    }
    MPI_CHK(MPI_Group_free(&even_group));
    MPI_CHK(MPI_Group_free(&world_group));
    free(evens);

    /* Many dups and frees in a row (context ids are recycled). */
    for (int i = 0; i < 50; i++) {
        MPI_Comm c;
        MPI_CHK(MPI_Comm_dup(dup, &c));
        if (i % 10 == 0)
            sanity(c, size, "dup in a loop");
        MPI_CHK(MPI_Comm_free(&c));
    }
    /* A nested dup survives its parent's free. */
    {
        MPI_Comm child;
        MPI_CHK(MPI_Comm_dup(dup, &child));
        MPI_CHK(MPI_Comm_free(&dup));
        sanity(child, size, "dup after its parent was freed");
        MPI_CHK(MPI_Comm_free(&child));
    }
    return t_finish();
}
