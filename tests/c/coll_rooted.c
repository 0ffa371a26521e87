/* MPI_Gather and MPI_Scatter with every kind of part the direct forms see: parts small enough
 * for the board and larger than its 2 KiB area, strided and resized datatypes at the root (the
 * parts lie one extent apart, with holes that must keep their bytes), MPI_IN_PLACE with a
 * strided type, and the other side's type differing from the root's (same signature). Every
 * root; checked against values computed here. */
#include "common.h"

#define V(r, i) ((r) * 100000 + (i))
#define HOLE (-7)

/* `count` ints per part, at stride 2 in the root's buffer (a vector type resized so that
 * consecutive elements interleave: element k lies at ints 2k). */
static MPI_Datatype strided_int(void)
{
    MPI_Datatype v, t;
    MPI_CHK(MPI_Type_vector(1, 1, 2, MPI_INT, &v));
    MPI_CHK(MPI_Type_create_resized(v, 0, 2 * sizeof(int), &t));
    MPI_CHK(MPI_Type_commit(&t));
    MPI_CHK(MPI_Type_free(&v));
    return t;
}

/* Root's buffer of n parts of `count` elements: contiguous ints, or at stride 2 with holes. */
static void check_root_buf(const int *all, int n, int count, int strided, int base, const char *what, int root)
{
    for (int r = 0; r < n; r++)
        for (int i = 0; i < count; i++) {
            int k = r * count + i;
            int at = strided ? 2 * k : k;
            CHECK(all[at] == V(r, base + i), "%s root %d: part %d[%d] = %d, want %d", what, root, r, i, all[at],
                  V(r, base + i));
            if (strided)
                CHECK(all[at + 1] == HOLE, "%s root %d: the hole after part %d[%d] was written (%d)", what, root, r,
                      i, all[at + 1]);
        }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "coll_rooted", 1);
    int n = t_size, rank = t_rank;
    MPI_Datatype strided = strided_int();
    const int counts[] = {1, 5, 700}; /* 700 ints = 2,800 B per part: beyond the board's area */
    for (int ci = 0; ci < 3; ci++) {
        int count = counts[ci];
        int *all = malloc(sizeof(int) * 2 * count * n), *mine = malloc(sizeof(int) * count);
        for (int root = 0; root < n; root++) {
            for (int strided_root = 0; strided_root < 2; strided_root++) {
                MPI_Datatype rt = strided_root ? strided : MPI_INT;
                int span = (strided_root ? 2 : 1) * count * n;

                /* Gather: contiguous contributions into the root's (maybe strided) buffer. */
                for (int i = 0; i < count; i++)
                    mine[i] = V(rank, i);
                for (int i = 0; i < span; i++)
                    all[i] = HOLE;
                MPI_CHK(MPI_Gather(mine, count, MPI_INT, all, count, rt, root, MPI_COMM_WORLD));
                if (rank == root)
                    check_root_buf(all, n, count, strided_root, 0, "Gather", root);

                /* Gather in place at the root: its own part already lies in its buffer. */
                for (int i = 0; i < span; i++)
                    all[i] = HOLE;
                if (rank == root) {
                    for (int i = 0; i < count; i++)
                        all[(strided_root ? 2 : 1) * (root * count + i)] = V(root, i);
                    MPI_CHK(MPI_Gather(MPI_IN_PLACE, count, MPI_INT, all, count, rt, root, MPI_COMM_WORLD));
                    check_root_buf(all, n, count, strided_root, 0, "Gather in place", root);
                } else {
                    MPI_CHK(MPI_Gather(mine, count, MPI_INT, NULL, 0, rt, root, MPI_COMM_WORLD));
                }

                /* Scatter from the root's (maybe strided) buffer into contiguous parts. */
                for (int i = 0; i < span; i++)
                    all[i] = HOLE;
                if (rank == root)
                    for (int r = 0; r < n; r++)
                        for (int i = 0; i < count; i++)
                            all[(strided_root ? 2 : 1) * (r * count + i)] = V(r, 500 + i);
                for (int i = 0; i < count; i++)
                    mine[i] = -1;
                MPI_CHK(MPI_Scatter(all, count, rt, mine, count, MPI_INT, root, MPI_COMM_WORLD));
                for (int i = 0; i < count; i++)
                    CHECK(mine[i] == V(rank, 500 + i), "Scatter root %d (strided %d): [%d] = %d", root,
                          strided_root, i, mine[i]);
                if (rank == root)
                    check_root_buf(all, n, count, strided_root, 500, "Scatter (send buffer kept)", root);

                /* Scatter in place at the root: its part stays, the others get theirs. */
                for (int i = 0; i < count; i++)
                    mine[i] = -1;
                if (rank == root)
                    MPI_CHK(MPI_Scatter(all, count, rt, MPI_IN_PLACE, count, MPI_INT, root, MPI_COMM_WORLD));
                else
                    MPI_CHK(MPI_Scatter(NULL, 0, rt, mine, count, MPI_INT, root, MPI_COMM_WORLD));
                if (rank != root)
                    for (int i = 0; i < count; i++)
                        CHECK(mine[i] == V(rank, 500 + i), "Scatter in place root %d: [%d] = %d", root, i, mine[i]);
            }

            /* Non-root parts as 2-int pairs, the root's as ints: one signature, two types. */
            if (count % 2 == 0 || count == 1) {
                int pairs = count / 2, len = count == 1 ? 1 : count;
                MPI_Datatype st = count == 1 ? MPI_INT : MPI_2INT;
                int sc = count == 1 ? 1 : pairs;
                for (int i = 0; i < len; i++)
                    mine[i] = V(rank, 900 + i);
                MPI_CHK(MPI_Gather(mine, sc, st, all, len, MPI_INT, root, MPI_COMM_WORLD));
                if (rank == root)
                    check_root_buf(all, n, len, 0, 900, "Gather (pairs sent)", root);
            }
        }
        free(all);
        free(mine);
    }
    MPI_CHK(MPI_Type_free(&strided));
    return t_finish();
}
