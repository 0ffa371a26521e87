/* MPI_Comm_create_from_group and MPI_Intercomm_create_from_groups without sessions, as mpi4py's
 * testCreateFromGroup calls them: from the group of MPI_COMM_WORLD and of MPI_COMM_SELF with the
 * string tag "org.mpi4py" (the results are congruent with them). Several creations at once, told
 * apart only by their string tags: two threads per rank each make a communicator from an
 * overlapping group (the world's, and the world's in reverse order) with its own tag, in
 * whatever order the threads run; the even and the odd ranks make theirs at the same time; the
 * same tag is used again once the first communicator is freed. Each result carries its own
 * traffic (an allreduce and a ring that must not mix). Any N >= 1 (1 to 4 in the suite). */
#include "common.h"
#include <pthread.h>

static MPI_Group world_group;
static int wsize, wrank;

/* A communicator from `group` with `tag`, checked: `rank_of` is this rank's expected rank in it. */
static MPI_Comm make(MPI_Group group, const char *tag, int size, int rank_of)
{
    MPI_Comm c = MPI_COMM_NULL;
    MPI_CHK(MPI_Comm_create_from_group(group, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    int r = -1, s = -1;
    MPI_CHK(MPI_Comm_rank(c, &r));
    MPI_CHK(MPI_Comm_size(c, &s));
    CHECK(s == size && r == rank_of, "%s: rank %d of %d, not %d of %d", tag, r, s, rank_of, size);
    return c;
}

/* Traffic on `c` only: an allreduce of `salt + rank` and a ring of `salt`. */
static void exercise(MPI_Comm c, int salt, const char *what)
{
    int r, s, sum = -1, got = -1;
    MPI_CHK(MPI_Comm_rank(c, &r));
    MPI_CHK(MPI_Comm_size(c, &s));
    int mine = salt + r;
    MPI_CHK(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == s * salt + s * (s - 1) / 2, "%s: allreduce %d", what, sum);
    MPI_CHK(MPI_Sendrecv(&salt, 1, MPI_INT, (r + 1) % s, 7, &got, 1, MPI_INT, (r + s - 1) % s, 7, c,
                         MPI_STATUS_IGNORE));
    CHECK(got == salt, "%s: ring carried %d, not %d", what, got, salt);
}

struct job {
    int reversed;
    const char *tag;
    int salt;
};

static void *creator(void *arg)
{
    struct job *j = arg;
    MPI_Group g = world_group;
    if (j->reversed) {
        int range[1][3] = {{wsize - 1, 0, -1}};
        MPI_CHK(MPI_Group_range_incl(world_group, 1, range, &g));
    }
    MPI_Comm c = make(g, j->tag, wsize, j->reversed ? wsize - 1 - wrank : wrank);
    for (int k = 0; k < 20; k++)
        exercise(c, j->salt + k, j->tag);
    MPI_CHK(MPI_Comm_free(&c));
    if (j->reversed)
        MPI_CHK(MPI_Group_free(&g));
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    t_name = "comm_from_group";
    t_watchdog();
    MPI_CHK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    t_setup("comm_from_group", 1);
    CHECK(provided == MPI_THREAD_MULTIPLE, "thread level %d", provided);
    MPI_CHK(MPI_Comm_size(MPI_COMM_WORLD, &wsize));
    MPI_CHK(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
    MPI_CHK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));

    /* mpi4py's testCreateFromGroup, on MPI_COMM_WORLD and MPI_COMM_SELF. */
    MPI_Group self_group;
    MPI_CHK(MPI_Comm_group(MPI_COMM_SELF, &self_group));
    MPI_Comm w = make(world_group, "org.mpi4py", wsize, wrank), s = make(self_group, "org.mpi4py", 1, 0);
    int cmp = -1;
    MPI_CHK(MPI_Comm_compare(MPI_COMM_WORLD, w, &cmp));
    CHECK_EQ(cmp, MPI_CONGRUENT, "compare with MPI_COMM_WORLD");
    MPI_CHK(MPI_Comm_compare(MPI_COMM_SELF, s, &cmp));
    CHECK_EQ(cmp, MPI_CONGRUENT, "compare with MPI_COMM_SELF");
    exercise(w, 100, "org.mpi4py world");
    MPI_CHK(MPI_Comm_free(&w));
    MPI_CHK(MPI_Comm_free(&s));
    /* The same tag again, once the first is freed. */
    w = make(world_group, "org.mpi4py", wsize, wrank);
    exercise(w, 200, "org.mpi4py world again");

    /* Two overlapping creations at once in two threads, by tag alone. */
    struct job jobs[2] = {{0, "alpha", 1000}, {1, "beta", 5000}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, creator, &jobs[i]) == 0, "pthread_create");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);

    /* The even and the odd ranks at once, each group with its own tag; then an
     * intercommunicator between them. */
    int ne = (wsize + 1) / 2, no = wsize / 2, evens[64], odds[64];
    for (int i = 0; i < ne; i++)
        evens[i] = 2 * i;
    for (int i = 0; i < no; i++)
        odds[i] = 2 * i + 1;
    MPI_Group eg, og;
    MPI_CHK(MPI_Group_incl(world_group, ne, evens, &eg));
    MPI_CHK(MPI_Group_incl(world_group, no, odds, &og));
    int even = wrank % 2 == 0;
    MPI_Comm half = make(even ? eg : og, even ? "evens" : "odds", even ? ne : no, wrank / 2);
    exercise(half, even ? 300 : 400, even ? "evens" : "odds");
    if (wsize >= 2) {
        MPI_Comm inter;
        MPI_CHK(MPI_Intercomm_create_from_groups(even ? eg : og, 0, even ? og : eg, 0, "evens-odds", MPI_INFO_NULL,
                                                 MPI_ERRORS_RETURN, &inter));
        int rsize = -1, lr = -1;
        MPI_CHK(MPI_Comm_remote_size(inter, &rsize));
        MPI_CHK(MPI_Comm_rank(inter, &lr));
        CHECK_EQ(rsize, even ? no : ne, "remote size of the intercommunicator");
        if (lr < no) {
            int theirs = -1;
            MPI_CHK(MPI_Sendrecv(&wrank, 1, MPI_INT, lr, 9, &theirs, 1, MPI_INT, lr, 9, inter, MPI_STATUS_IGNORE));
            CHECK_EQ(theirs, even ? wrank + 1 : wrank - 1, "partner across the intercommunicator");
        }
        MPI_CHK(MPI_Comm_free(&inter));
    }
    /* The halves and the world communicator made before them still carry their own traffic. */
    exercise(half, 600, "a half after the intercommunicator");
    exercise(w, 700, "org.mpi4py world after the rest");
    MPI_CHK(MPI_Comm_free(&half));
    MPI_CHK(MPI_Comm_free(&w));
    MPI_CHK(MPI_Group_free(&eg));
    MPI_CHK(MPI_Group_free(&og));
    MPI_CHK(MPI_Group_free(&self_group));
    MPI_CHK(MPI_Group_free(&world_group));
    return t_finish();
}
