/* MPI_Comm_idup is nonblocking: the caller communicates while the new communicator is made.
 *
 *  - Overlap: rank 0 starts an idup, then receives a message that rank 1 sends synchronously
 *    *before* starting its own idup. An idup that blocked until every member joined would
 *    deadlock here (the watchdog turns that into a FAIL).
 *  - The handle is written by the call and is the one the completed communicator has.
 *  - Several idups in flight (of the world and of a Cartesian dup), a blocking Comm_dup of the
 *    same parent while they run, completed by one MPI_Waitall in reverse order: all congruent
 *    with their parent, pairwise distinct (a message sent on each is received on that one only),
 *    with the parent's error handler, Cartesian topology and (through MPI_COMM_DUP_FN) attribute.
 *  - An idup completed by polling MPI_Test.
 *  - The new handle serves local calls at once, before the idup completes (MPICH allows them;
 *    mpi4py relies on it): size, rank, group, compare, test_inter, topo_test, error handler,
 *    attributes (copied at the call), name, info; what they set is kept at completion. Rank 0
 *    makes them while rank 1 has not even started its idup (it waits for rank 0's message).
 */
#include "common.h"

#define IN_FLIGHT 4

/* Everyone sends its rank and `k` to its right neighbour on each communicator, then receives
 * on each with MPI_ANY_TAG: a message that arrives on the wrong communicator shows as a wrong k. */
static void distinct(MPI_Comm *comms, int n, const char *what)
{
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    MPI_Request reqs[2 * (IN_FLIGHT + 2)];
    int out[IN_FLIGHT + 2][2], in[IN_FLIGHT + 2][2];
    for (int k = 0; k < n; k++) {
        out[k][0] = t_rank;
        out[k][1] = k;
        MPI_CHK(MPI_Irecv(in[k], 2, MPI_INT, left, MPI_ANY_TAG, comms[k], &reqs[k]));
    }
    for (int k = 0; k < n; k++)
        MPI_CHK(MPI_Isend(out[k], 2, MPI_INT, right, 5, comms[k], &reqs[n + k]));
    MPI_CHK(MPI_Waitall(2 * n, reqs, MPI_STATUSES_IGNORE));
    for (int k = 0; k < n; k++) {
        CHECK(in[k][0] == left && in[k][1] == k, "%s: communicator %d got (%d, %d), want (%d, %d)", what, k, in[k][0],
              in[k][1], left, k);
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "comm_idup", 1);
    int res;

    /* Overlap with point-to-point traffic that the other member needs first. */
    {
        MPI_Comm made = MPI_COMM_NULL;
        MPI_Request r;
        int token = 0;
        if (t_rank == 0) {
            MPI_CHK(MPI_Comm_idup(MPI_COMM_WORLD, &made, &r));
            if (t_size > 1)
                MPI_CHK(MPI_Recv(&token, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        } else {
            if (t_rank == 1) {
                token = 42;
                MPI_CHK(MPI_Ssend(&token, 1, MPI_INT, 0, 7, MPI_COMM_WORLD));
            }
            MPI_CHK(MPI_Comm_idup(MPI_COMM_WORLD, &made, &r));
        }
        MPI_Comm at_call = made;
        CHECK(made != MPI_COMM_NULL, "Comm_idup left newcomm MPI_COMM_NULL");
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(r == MPI_REQUEST_NULL, "Wait did not free the idup request");
        CHECK(made == at_call, "the handle changed between the call (%#x) and completion (%#x)", (unsigned)at_call,
              (unsigned)made);
        if (t_rank == 0 && t_size > 1)
            CHECK_EQ(token, 42, "token");
        MPI_CHK(MPI_Comm_compare(made, MPI_COMM_WORLD, &res));
        CHECK_EQ(res, MPI_CONGRUENT, "compare(idup, world)");
        distinct(&made, 1, "overlap");
        MPI_CHK(MPI_Comm_free(&made));
    }

    /* Several in flight, a blocking dup meanwhile, one Waitall in reverse order. */
    {
        int dims[1] = {0}, periods[1] = {1};
        MPI_CHK(MPI_Dims_create(t_size, 1, dims));
        MPI_Comm cart;
        MPI_CHK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart));
        MPI_CHK(MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN));
        int keyval, value = 1234;
        MPI_CHK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL));
        MPI_CHK(MPI_Comm_set_attr(cart, keyval, &value));

        MPI_Comm comms[IN_FLIGHT + 2];
        MPI_Request reqs[IN_FLIGHT];
        for (int k = 0; k < IN_FLIGHT; k++)
            MPI_CHK(MPI_Comm_idup(k % 2 ? cart : MPI_COMM_WORLD, &comms[k], &reqs[IN_FLIGHT - 1 - k]));
        MPI_CHK(MPI_Comm_dup(cart, &comms[IN_FLIGHT]));
        comms[IN_FLIGHT + 1] = MPI_COMM_WORLD;
        MPI_CHK(MPI_Waitall(IN_FLIGHT, reqs, MPI_STATUSES_IGNORE));
        for (int k = 0; k < IN_FLIGHT; k++)
            CHECK(reqs[k] == MPI_REQUEST_NULL, "Waitall left request %d", k);
        distinct(comms, IN_FLIGHT + 2, "in flight");

        for (int k = 0; k < IN_FLIGHT; k++) {
            MPI_Comm parent = k % 2 ? cart : MPI_COMM_WORLD;
            MPI_CHK(MPI_Comm_compare(comms[k], parent, &res));
            CHECK_EQ(res, MPI_CONGRUENT, "compare(idup, parent)");
            MPI_Errhandler eh;
            MPI_CHK(MPI_Comm_get_errhandler(comms[k], &eh));
            CHECK(eh == MPI_ERRORS_RETURN, "idup %d did not inherit MPI_ERRORS_RETURN", k);
            int topo;
            MPI_CHK(MPI_Topo_test(comms[k], &topo));
            CHECK_EQ(topo, k % 2 ? MPI_CART : MPI_UNDEFINED, "Topo_test of the idup");
            int *got = NULL, flag = 0;
            MPI_CHK(MPI_Comm_get_attr(comms[k], keyval, &got, &flag));
            CHECK_EQ(flag, k % 2, "attribute present on the idup");
            if (flag)
                CHECK(got == &value, "attribute copied by MPI_COMM_DUP_FN has another value");
            MPI_CHK(MPI_Comm_free(&comms[k]));
        }
        MPI_CHK(MPI_Comm_free(&comms[IN_FLIGHT]));
        MPI_CHK(MPI_Comm_free(&cart));
        MPI_CHK(MPI_Comm_free_keyval(&keyval));
    }

    /* Local calls on the handle before the idup completes. */
    {
        int keyval, value = 99, other = 7;
        MPI_CHK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL));
        MPI_CHK(MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, &value));
        MPI_Comm made;
        MPI_Request r;
        int go = 0;
        if (t_rank == 1)
            MPI_CHK(MPI_Recv(&go, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Comm_idup(MPI_COMM_WORLD, &made, &r));
        if (t_rank == 0) {
            int v = -1, flag = 0, len = -1;
            MPI_CHK(MPI_Comm_size(made, &v));
            CHECK_EQ(v, t_size, "Comm_size of a pending idup");
            MPI_CHK(MPI_Comm_rank(made, &v));
            CHECK_EQ(v, 0, "Comm_rank of a pending idup");
            MPI_Group g;
            MPI_CHK(MPI_Comm_group(made, &g));
            MPI_CHK(MPI_Group_size(g, &v));
            CHECK_EQ(v, t_size, "size of the group of a pending idup");
            MPI_CHK(MPI_Group_free(&g));
            MPI_CHK(MPI_Comm_compare(made, MPI_COMM_WORLD, &v));
            CHECK_EQ(v, MPI_CONGRUENT, "compare(pending idup, world)");
            MPI_CHK(MPI_Comm_test_inter(made, &v));
            CHECK_EQ(v, 0, "Comm_test_inter of a pending idup");
            MPI_CHK(MPI_Topo_test(made, &v));
            CHECK_EQ(v, MPI_UNDEFINED, "Topo_test of a pending idup");
            MPI_Errhandler eh;
            MPI_CHK(MPI_Comm_get_errhandler(made, &eh));
            CHECK(eh == MPI_ERRORS_RETURN, "a pending idup does not have its parent's error handler");
            MPI_CHK(MPI_Comm_set_errhandler(made, MPI_ERRORS_ARE_FATAL));
            MPI_CHK(MPI_Comm_set_errhandler(made, MPI_ERRORS_RETURN));
            int *got = NULL;
            MPI_CHK(MPI_Comm_get_attr(made, keyval, &got, &flag));
            CHECK(flag && got == &value, "attribute of a pending idup: flag %d", flag);
            MPI_CHK(MPI_Comm_set_attr(made, keyval, &other));
            MPI_CHK(MPI_Comm_get_attr(made, MPI_TAG_UB, &got, &flag));
            CHECK(flag, "MPI_TAG_UB missing on a pending idup");
            char name[MPI_MAX_OBJECT_NAME];
            MPI_CHK(MPI_Comm_get_name(made, name, &len));
            CHECK(len == 0, "name of a pending idup: '%s'", name);
            MPI_CHK(MPI_Comm_set_name(made, "made by idup"));
            MPI_Info info;
            MPI_CHK(MPI_Comm_get_info(made, &info));
            MPI_CHK(MPI_Info_free(&info));
            if (t_size > 1)
                MPI_CHK(MPI_Send(&go, 1, MPI_INT, 1, 9, MPI_COMM_WORLD));
        }
        MPI_CHK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        if (t_rank == 0) {
            int *got = NULL, flag = 0, len;
            MPI_CHK(MPI_Comm_get_attr(made, keyval, &got, &flag));
            CHECK(flag && got == &other, "attribute set on the pending idup lost at completion");
            char name[MPI_MAX_OBJECT_NAME];
            MPI_CHK(MPI_Comm_get_name(made, name, &len));
            CHECK(!strcmp(name, "made by idup"), "name set on the pending idup lost at completion: '%s'", name);
        }
        MPI_Errhandler eh;
        MPI_CHK(MPI_Comm_get_errhandler(made, &eh));
        CHECK(eh == MPI_ERRORS_RETURN, "error handler of the idup after completion");
        distinct(&made, 1, "used at once");
        MPI_CHK(MPI_Comm_free(&made));
        MPI_CHK(MPI_Comm_delete_attr(MPI_COMM_WORLD, keyval));
        MPI_CHK(MPI_Comm_free_keyval(&keyval));
    }

    /* Completed by polling. */
    {
        MPI_Comm made;
        MPI_Request r;
        MPI_CHK(MPI_Comm_idup(MPI_COMM_WORLD, &made, &r));
        t_wait_bounded(&r, MPI_STATUS_IGNORE, 20.0, "Comm_idup polled with MPI_Test");
        distinct(&made, 1, "polled");
        MPI_CHK(MPI_Comm_free(&made));
    }
    return t_finish();
}
