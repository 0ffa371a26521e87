/* Dynamic windows (MPI_Win_create_dynamic, MPI_Win_attach / detach) and passive-target
 * progress while the target blocks in other MPI calls.
 *
 * A linked list across ranks: every rank attaches NODES nodes of its own memory; the list's
 * head pointer (rank, address) lives in memory rank 0 attached. Each rank pushes its nodes
 * onto the list one by one under an exclusive lock of rank 0 (read the head, point the node
 * at it, write the new head), then tells rank 0 by a message. Rank 0 meanwhile only waits for
 * those messages, in MPI_Recv and then MPI_Wait: the locks and operations of the others are
 * served while it blocks there. Then every rank walks the whole list with MPI_Get under
 * MPI_Win_lock_all: each node of each rank is found exactly once.
 */
#include "common.h"

#define NODES 20

typedef struct {
    long value;
    long next_rank; /* -1: end of the list */
    MPI_Aint next_addr;
} node_t;

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "win_dynamic", 1);
    int n = t_size, me = t_rank;
    MPI_Win win;
    MPI_CHK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    int flavor_ok = 0, *flavor = NULL;
    MPI_CHK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flavor_ok));
    CHECK(flavor_ok && *flavor == MPI_WIN_FLAVOR_DYNAMIC, "MPI_WIN_CREATE_FLAVOR of a dynamic window");

    node_t *nodes = calloc(NODES, sizeof(node_t));
    MPI_CHK(MPI_Win_attach(win, nodes, NODES * sizeof(node_t)));
    long head[2] = {-1, 0}; /* rank, address of the first node */
    MPI_Aint head_addr = 0;
    if (me == 0) {
        MPI_CHK(MPI_Win_attach(win, head, sizeof head));
        MPI_CHK(MPI_Get_address(head, &head_addr));
    }
    MPI_CHK(MPI_Bcast(&head_addr, 1, MPI_AINT, 0, MPI_COMM_WORLD));

    for (int k = 0; k < NODES; k++) {
        nodes[k].value = me * 1000 + k;
        MPI_Aint mine;
        MPI_CHK(MPI_Get_address(&nodes[k], &mine));
        long old[2] = {-7, -7}, now[2] = {me, (long)mine};
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        MPI_CHK(MPI_Get(old, 2, MPI_LONG, 0, head_addr, 2, MPI_LONG, win));
        MPI_CHK(MPI_Win_flush(0, win));
        /* The node is this rank's memory, reachable by nobody before the head names it. */
        nodes[k].next_rank = old[0];
        nodes[k].next_addr = (MPI_Aint)old[1];
        MPI_CHK(MPI_Win_sync(win));
        MPI_CHK(MPI_Put(now, 2, MPI_LONG, 0, head_addr, 2, MPI_LONG, win));
        MPI_CHK(MPI_Win_unlock(0, win));
    }
    int token = 1;
    if (me == 0) {
        for (int s = 1; s < n; s++) {
            int got = 0;
            if (s % 2) {
                MPI_CHK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            } else {
                MPI_Request rq;
                MPI_CHK(MPI_Irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &rq));
                MPI_CHK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            }
            CHECK_EQ(got, 1, "token");
        }
    } else {
        MPI_CHK(MPI_Send(&token, 1, MPI_INT, 0, 9, MPI_COMM_WORLD));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* Walk the list from rank 0's head. */
    int *found = calloc((size_t)n * NODES, sizeof(int));
    long at[2] = {-1, 0};
    MPI_CHK(MPI_Win_lock_all(0, win));
    MPI_CHK(MPI_Get(at, 2, MPI_LONG, 0, head_addr, 2, MPI_LONG, win));
    MPI_CHK(MPI_Win_flush(0, win));
    int steps = 0;
    while (at[0] >= 0) {
        CHECK(at[0] < n && steps < n * NODES, "list broken at step %d (rank %ld)", steps, at[0]);
        node_t nd;
        MPI_CHK(MPI_Get(&nd, sizeof nd, MPI_BYTE, (int)at[0], (MPI_Aint)at[1], sizeof nd, MPI_BYTE, win));
        MPI_CHK(MPI_Win_flush((int)at[0], win));
        CHECK(nd.value / 1000 == at[0] && nd.value % 1000 < NODES, "node value %ld at rank %ld", nd.value, at[0]);
        found[nd.value / 1000 * NODES + nd.value % 1000]++;
        at[0] = nd.next_rank;
        at[1] = (long)nd.next_addr;
        steps++;
    }
    MPI_CHK(MPI_Win_unlock_all(win));
    CHECK_EQ(steps, n * NODES, "nodes on the list");
    for (int i = 0; i < n * NODES; i++)
        CHECK(found[i] == 1, "node %d of rank %d found %d times", i % NODES, i / NODES, found[i]);

    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_Win_detach(win, nodes));
    if (me == 0)
        MPI_CHK(MPI_Win_detach(win, head));
    MPI_CHK(MPI_Win_free(&win));
    free(nodes);
    free(found);
    return t_finish();
}
