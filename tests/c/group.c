/* Groups: size, rank, incl, excl, range_incl, range_excl, union, intersection, difference,
 * translate_ranks, compare, free; MPI_GROUP_EMPTY and MPI_UNDEFINED ranks. Any N >= 1
 * (most meaningful at N >= 4). */
#include "common.h"

static void expect_members(MPI_Group world, MPI_Group g, const int *want, int n, const char *what)
{
    int sz = -1;
    MPI_CHK(MPI_Group_size(g, &sz));
    CHECK(sz == n, "%s: size expected %d, got %d", what, n, sz);
    int *idx = malloc(sizeof(int) * (size_t)(n + 1)), *out = malloc(sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        idx[i] = i;
    if (n > 0)
        MPI_CHK(MPI_Group_translate_ranks(g, n, idx, world, out));
    for (int i = 0; i < n; i++)
        CHECK(out[i] == want[i], "%s: member %d is world rank %d, expected %d", what, i, out[i], want[i]);
    /* My rank in g: position of me, or MPI_UNDEFINED. */
    int me = -5, pos = MPI_UNDEFINED;
    MPI_CHK(MPI_Group_rank(g, &me));
    for (int i = 0; i < n; i++)
        if (want[i] == t_rank)
            pos = i;
    CHECK(me == pos, "%s: Group_rank expected %d, got %d", what, pos, me);
    free(idx);
    free(out);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "group", 1);
    const int n = t_size;
    int res = -1;
    MPI_Group world;
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int *all = malloc(sizeof(int) * (size_t)n), *w = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        all[i] = i;
    expect_members(world, world, all, n, "world group");

    /* Empty group. */
    int sz = -1;
    MPI_CHK(MPI_Group_size(MPI_GROUP_EMPTY, &sz));
    CHECK_EQ(sz, 0, "size of MPI_GROUP_EMPTY");
    MPI_CHK(MPI_Group_rank(MPI_GROUP_EMPTY, &sz));
    CHECK_EQ(sz, MPI_UNDEFINED, "rank in MPI_GROUP_EMPTY");

    /* incl: reversed order. */
    for (int i = 0; i < n; i++)
        w[i] = n - 1 - i;
    MPI_Group rev;
    MPI_CHK(MPI_Group_incl(world, n, w, &rev));
    expect_members(world, rev, w, n, "incl(reversed)");
    MPI_CHK(MPI_Group_compare(world, rev, &res));
    CHECK_EQ(res, n == 1 ? MPI_IDENT : MPI_SIMILAR, "compare(world, reversed)");
    MPI_CHK(MPI_Group_compare(world, world, &res));
    CHECK_EQ(res, MPI_IDENT, "compare(world, world)");

    /* incl of zero ranks is MPI_GROUP_EMPTY-like. */
    MPI_Group none;
    MPI_CHK(MPI_Group_incl(world, 0, all, &none));
    MPI_CHK(MPI_Group_size(none, &sz));
    CHECK_EQ(sz, 0, "incl of 0 ranks");
    MPI_CHK(MPI_Group_compare(none, MPI_GROUP_EMPTY, &res));
    CHECK_EQ(res, MPI_IDENT, "compare(incl 0, GROUP_EMPTY)");

    /* excl rank 0. */
    MPI_Group no0;
    int zero = 0;
    MPI_CHK(MPI_Group_excl(world, 1, &zero, &no0));
    expect_members(world, no0, all + 1, n - 1, "excl(0)");
    MPI_CHK(MPI_Group_compare(world, no0, &res));
    CHECK_EQ(res, MPI_UNEQUAL, "compare(world, excl 0)");

    /* range_incl: evens (0..n-1 step 2) and the odds descending. */
    MPI_Group evens, odds;
    int r1[1][3] = {{0, n - 1, 2}};
    MPI_CHK(MPI_Group_range_incl(world, 1, r1, &evens));
    int ne = 0;
    for (int i = 0; i < n; i += 2)
        w[ne++] = i;
    expect_members(world, evens, w, ne, "range_incl(evens)");
    int no = 0;
    int top_odd = (n - 1) % 2 == 1 ? n - 1 : n - 2;
    if (top_odd >= 1) {
        int r2[1][3] = {{top_odd, 1, -2}};
        MPI_CHK(MPI_Group_range_incl(world, 1, r2, &odds));
        for (int i = top_odd; i >= 1; i -= 2)
            w[no++] = i;
        expect_members(world, odds, w, no, "range_incl(odds, descending)");
    } else {
        odds = MPI_GROUP_EMPTY;
    }

    /* range_excl of the evens leaves the odds ascending. */
    MPI_Group odds_up;
    MPI_CHK(MPI_Group_range_excl(world, 1, r1, &odds_up));
    no = 0;
    for (int i = 1; i < n; i += 2)
        w[no++] = i;
    expect_members(world, odds_up, w, no, "range_excl(evens)");
    if (odds != MPI_GROUP_EMPTY) {
        MPI_CHK(MPI_Group_compare(odds, odds_up, &res));
        CHECK_EQ(res, no == 1 ? MPI_IDENT : MPI_SIMILAR, "compare(odds desc, odds asc)");
    }

    /* Several ranges at once: {0} and {n-1} (n >= 2). */
    if (n >= 2) {
        int rr[2][3] = {{0, 0, 1}, {n - 1, n - 1, 1}};
        MPI_Group ends;
        MPI_CHK(MPI_Group_range_incl(world, 2, rr, &ends));
        int want[2] = {0, n - 1};
        expect_members(world, ends, want, 2, "range_incl(two ranges)");
        MPI_Group mid;
        MPI_CHK(MPI_Group_range_excl(world, 2, rr, &mid));
        expect_members(world, mid, all + 1, n - 2, "range_excl(two ranges)");
        MPI_CHK(MPI_Group_free(&ends));
        MPI_CHK(MPI_Group_free(&mid));
    }

    /* union: evens then odds (order: first group, then new members of the second). */
    MPI_Group un;
    MPI_CHK(MPI_Group_union(evens, odds_up, &un));
    int k = 0;
    for (int i = 0; i < n; i += 2)
        w[k++] = i;
    for (int i = 1; i < n; i += 2)
        w[k++] = i;
    expect_members(world, un, w, n, "union(evens, odds)");
    MPI_CHK(MPI_Group_compare(un, world, &res));
    CHECK_EQ(res, n <= 2 ? MPI_IDENT : MPI_SIMILAR, "compare(union, world)");
    MPI_Group un2;
    MPI_CHK(MPI_Group_union(world, evens, &un2));
    expect_members(world, un2, all, n, "union(world, evens)");

    /* intersection: order of the first group. */
    MPI_Group is;
    MPI_CHK(MPI_Group_intersection(rev, evens, &is));
    k = 0;
    for (int i = n - 1; i >= 0; i--)
        if (i % 2 == 0)
            w[k++] = i;
    expect_members(world, is, w, k, "intersection(reversed, evens)");
    MPI_Group is0;
    MPI_CHK(MPI_Group_intersection(evens, odds_up, &is0));
    MPI_CHK(MPI_Group_size(is0, &sz));
    CHECK_EQ(sz, 0, "intersection(evens, odds)");

    /* difference */
    MPI_Group df;
    MPI_CHK(MPI_Group_difference(world, evens, &df));
    no = 0;
    for (int i = 1; i < n; i += 2)
        w[no++] = i;
    expect_members(world, df, w, no, "difference(world, evens)");
    MPI_CHK(MPI_Group_compare(df, odds_up, &res));
    CHECK_EQ(res, MPI_IDENT, "compare(difference, range_excl)");
    MPI_Group df0;
    MPI_CHK(MPI_Group_difference(evens, world, &df0));
    MPI_CHK(MPI_Group_size(df0, &sz));
    CHECK_EQ(sz, 0, "difference(evens, world)");

    /* translate_ranks: non-members map to MPI_UNDEFINED, PROC_NULL to PROC_NULL. */
    {
        int in[2] = {0, MPI_PROC_NULL}, out[2] = {-5, -5};
        MPI_CHK(MPI_Group_translate_ranks(world, 1, in, odds_up, out));
        CHECK_EQ(out[0], MPI_UNDEFINED, "translate world rank 0 into odds");
        /* (into a non-empty group: MPICH 4.0.2 gives MPI_UNDEFINED for PROC_NULL into an empty one) */
        MPI_CHK(MPI_Group_translate_ranks(world, 2, in, rev, out));
        CHECK_EQ(out[0], n - 1, "translate world rank 0 into reversed");
        CHECK_EQ(out[1], MPI_PROC_NULL, "translate MPI_PROC_NULL");
    }

    /* A group of a communicator built from a group compares IDENT to it. */
    {
        MPI_Comm c;
        MPI_CHK(MPI_Comm_create(MPI_COMM_WORLD, rev, &c));
        MPI_Group cg;
        MPI_CHK(MPI_Comm_group(c, &cg));
        MPI_CHK(MPI_Group_compare(cg, rev, &res));
        CHECK_EQ(res, MPI_IDENT, "group of Comm_create(reversed)");
        int cr;
        MPI_CHK(MPI_Comm_rank(c, &cr));
        CHECK_EQ(cr, n - 1 - t_rank, "rank in Comm_create(reversed)");
        MPI_CHK(MPI_Group_free(&cg));
        MPI_CHK(MPI_Comm_free(&c));
    }

    /* Every constructor that yields no member returns MPI_GROUP_EMPTY itself (MPICH does;
     * programs compare against it), and freeing it is allowed. */
    {
        int rall[1][3] = {{0, n - 1, 1}};
        MPI_Group e[7];
        const char *what[7] = {"excl(all)", "incl(0 ranks)", "range_excl(all)", "range_incl(0 ranges)",
                               "difference(world, world)", "intersection(world, EMPTY)", "union(EMPTY, EMPTY)"};
        MPI_CHK(MPI_Group_excl(world, n, all, &e[0]));
        MPI_CHK(MPI_Group_incl(world, 0, all, &e[1]));
        MPI_CHK(MPI_Group_range_excl(world, 1, rall, &e[2]));
        MPI_CHK(MPI_Group_range_incl(world, 0, rall, &e[3]));
        MPI_CHK(MPI_Group_difference(world, world, &e[4]));
        MPI_CHK(MPI_Group_intersection(world, MPI_GROUP_EMPTY, &e[5]));
        MPI_CHK(MPI_Group_union(MPI_GROUP_EMPTY, MPI_GROUP_EMPTY, &e[6]));
        for (int i = 0; i < 7; i++) {
            CHECK(e[i] == MPI_GROUP_EMPTY, "%s is %#x, expected MPI_GROUP_EMPTY %#x", what[i], (unsigned)e[i],
                  (unsigned)MPI_GROUP_EMPTY);
            MPI_CHK(MPI_Group_free(&e[i]));
            CHECK(e[i] == MPI_GROUP_NULL, "Group_free(%s) did not set MPI_GROUP_NULL", what[i]);
        }
    }

    MPI_Group *gs[] = {&rev, &none, &no0, &evens, &odds_up, &un, &un2, &is, &is0, &df, &df0};
    for (unsigned i = 0; i < sizeof gs / sizeof *gs; i++) {
        MPI_CHK(MPI_Group_free(gs[i]));
        CHECK(*gs[i] == MPI_GROUP_NULL, "Group_free did not set MPI_GROUP_NULL (%u)", i);
    }
    if (odds != MPI_GROUP_EMPTY)
        MPI_CHK(MPI_Group_free(&odds));
    MPI_CHK(MPI_Group_free(&world));
    free(all);
    free(w);
    return t_finish();
}
