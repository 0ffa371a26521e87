/* Data-movement collectives: Barrier, Bcast, Gather, Gatherv, Scatter, Scatterv, Allgather,
 * Allgatherv, Alltoall (a vector type too), Alltoallv, Alltoallw; every root; MPI_IN_PLACE where
 * allowed; small and large sizes; derived types. Any N >= 1. */
#include "common.h"

#define V(r, i) ((r) * 100000 + (i)) /* value of element i contributed by rank r */

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "coll_basic", 1);
    const int rank = t_rank, n = t_size;

    for (int i = 0; i < 5; i++)
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));

    /* ---- Bcast from every root, small and large (1 M ints), and with a vector type. */
    {
        const int big = 1 << 20;
        int *b = malloc(sizeof(int) * big);
        for (int root = 0; root < n; root++) {
            int counts[3] = {1, 1000, big};
            for (int k = 0; k < 3; k++) {
                int c = counts[k];
                for (int i = 0; i < c; i++)
                    b[i] = rank == root ? V(root, i) : -1;
                MPI_CHK(MPI_Bcast(b, c, MPI_INT, root, MPI_COMM_WORLD));
                for (int i = 0; i < c; i++)
                    if (b[i] != V(root, i))
                        FAIL("Bcast root %d count %d: [%d] expected %d, got %d", root, c, i, V(root, i), b[i]);
            }
        }
        /* every other int, as a vector type */
        MPI_Datatype vec;
        MPI_CHK(MPI_Type_vector(100, 1, 2, MPI_INT, &vec));
        MPI_CHK(MPI_Type_commit(&vec));
        for (int i = 0; i < 200; i++)
            b[i] = rank == 0 ? V(0, i) : -1;
        MPI_CHK(MPI_Bcast(b, 1, vec, 0, MPI_COMM_WORLD));
        for (int i = 0; i < 200; i++) {
            int want = (i % 2 == 0 || rank == 0) ? V(0, i) : -1;
            if (b[i] != want)
                FAIL("Bcast of a vector type: [%d] expected %d, got %d", i, want, b[i]);
        }
        MPI_CHK(MPI_Type_free(&vec));
        /* count 0 is fine */
        MPI_CHK(MPI_Bcast(b, 0, MPI_INT, 0, MPI_COMM_WORLD));
        free(b);
    }

    /* ---- Gather / Scatter (and IN_PLACE at the root), every root. */
    {
        const int c = 3;
        int *all = malloc(sizeof(int) * c * n), mine[3];
        for (int root = 0; root < n; root++) {
            for (int i = 0; i < c; i++)
                mine[i] = V(rank, i);
            for (int i = 0; i < c * n; i++)
                all[i] = -1;
            MPI_CHK(MPI_Gather(mine, c, MPI_INT, all, c, MPI_INT, root, MPI_COMM_WORLD));
            if (rank == root)
                for (int r = 0; r < n; r++)
                    for (int i = 0; i < c; i++)
                        CHECK(all[r * c + i] == V(r, i), "Gather root %d: block %d[%d] = %d", root, r, i,
                              all[r * c + i]);
            /* IN_PLACE at the root: its own block is already in place. */
            for (int i = 0; i < c * n; i++)
                all[i] = (rank == root && i / c == root) ? V(root, i % c) : -1;
            if (rank == root)
                MPI_CHK(MPI_Gather(MPI_IN_PLACE, c, MPI_INT, all, c, MPI_INT, root, MPI_COMM_WORLD));
            else
                MPI_CHK(MPI_Gather(mine, c, MPI_INT, NULL, 0, MPI_INT, root, MPI_COMM_WORLD));
            if (rank == root)
                for (int r = 0; r < n; r++)
                    for (int i = 0; i < c; i++)
                        CHECK(all[r * c + i] == V(r, i), "Gather IN_PLACE root %d: block %d[%d] = %d", root, r, i,
                              all[r * c + i]);

            /* Scatter */
            for (int i = 0; i < c * n; i++)
                all[i] = rank == root ? V(i / c, 1000 + i % c) : -1;
            mine[0] = mine[1] = mine[2] = -1;
            MPI_CHK(MPI_Scatter(all, c, MPI_INT, mine, c, MPI_INT, root, MPI_COMM_WORLD));
            for (int i = 0; i < c; i++)
                CHECK(mine[i] == V(rank, 1000 + i), "Scatter root %d: [%d] = %d", root, i, mine[i]);
            /* IN_PLACE at the root: root's block stays where it is. */
            if (rank == root) {
                MPI_CHK(MPI_Scatter(all, c, MPI_INT, MPI_IN_PLACE, c, MPI_INT, root, MPI_COMM_WORLD));
                for (int i = 0; i < c * n; i++)
                    CHECK(all[i] == V(i / c, 1000 + i % c), "Scatter IN_PLACE changed the root's send buffer");
            } else {
                mine[0] = -1;
                MPI_CHK(MPI_Scatter(NULL, 0, MPI_INT, mine, c, MPI_INT, root, MPI_COMM_WORLD));
                CHECK(mine[0] == V(rank, 1000), "Scatter (IN_PLACE root) [0] = %d", mine[0]);
            }
        }
        free(all);
    }

    /* ---- Gatherv / Scatterv: rank r contributes r+1 ints, placed with gaps in reverse order. */
    {
        int *counts = malloc(sizeof(int) * n), *displs = malloc(sizeof(int) * n);
        int total = 0;
        for (int r = n - 1; r >= 0; r--) {
            counts[r] = r + 1;
            displs[r] = total;
            total += r + 1 + 2; /* gap of 2 */
        }
        int *all = malloc(sizeof(int) * (size_t)total), *mine = malloc(sizeof(int) * (size_t)(n + 1));
        for (int root = 0; root < n; root++) {
            for (int i = 0; i <= rank; i++)
                mine[i] = V(rank, i);
            for (int i = 0; i < total; i++)
                all[i] = -1;
            MPI_CHK(MPI_Gatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, root, MPI_COMM_WORLD));
            if (rank == root)
                for (int r = 0; r < n; r++) {
                    for (int i = 0; i < counts[r]; i++)
                        CHECK(all[displs[r] + i] == V(r, i), "Gatherv root %d: rank %d [%d] = %d", root, r, i,
                              all[displs[r] + i]);
                    CHECK(all[displs[r] + counts[r]] == -1, "Gatherv wrote into a gap");
                }
            /* IN_PLACE */
            if (rank == root) {
                for (int i = 0; i < total; i++)
                    all[i] = -1;
                for (int i = 0; i <= root; i++)
                    all[displs[root] + i] = V(root, i);
                MPI_CHK(MPI_Gatherv(MPI_IN_PLACE, 0, MPI_INT, all, counts, displs, MPI_INT, root, MPI_COMM_WORLD));
                for (int r = 0; r < n; r++)
                    for (int i = 0; i < counts[r]; i++)
                        CHECK(all[displs[r] + i] == V(r, i), "Gatherv IN_PLACE root %d: rank %d [%d] = %d", root, r,
                              i, all[displs[r] + i]);
            } else {
                MPI_CHK(MPI_Gatherv(mine, rank + 1, MPI_INT, NULL, NULL, NULL, MPI_INT, root, MPI_COMM_WORLD));
            }
            /* Scatterv */
            for (int r = 0; r < n; r++)
                for (int i = 0; i < counts[r]; i++)
                    all[displs[r] + i] = rank == root ? V(r, 7 + i) : -1;
            for (int i = 0; i <= n; i++)
                mine[i] = -1;
            MPI_CHK(MPI_Scatterv(all, counts, displs, MPI_INT, mine, rank + 1, MPI_INT, root, MPI_COMM_WORLD));
            for (int i = 0; i <= rank; i++)
                CHECK(mine[i] == V(rank, 7 + i), "Scatterv root %d: [%d] = %d", root, i, mine[i]);
            CHECK(mine[rank + 1] == -1, "Scatterv wrote past the receive count");
            if (rank == root)
                MPI_CHK(MPI_Scatterv(all, counts, displs, MPI_INT, MPI_IN_PLACE, 0, MPI_INT, root, MPI_COMM_WORLD));
            else
                MPI_CHK(MPI_Scatterv(NULL, NULL, NULL, MPI_INT, mine, rank + 1, MPI_INT, root, MPI_COMM_WORLD));
        }
        free(all);
        free(mine);

        /* ---- Allgather and Allgatherv (+IN_PLACE). */
        const int c = 2;
        int *ag = malloc(sizeof(int) * c * n);
        int me[2] = {V(rank, 0), V(rank, 1)};
        MPI_CHK(MPI_Allgather(me, c, MPI_INT, ag, c, MPI_INT, MPI_COMM_WORLD));
        for (int i = 0; i < c * n; i++)
            CHECK(ag[i] == V(i / c, i % c), "Allgather [%d] = %d", i, ag[i]);
        for (int i = 0; i < c * n; i++)
            ag[i] = i / c == rank ? V(rank, i % c) : -1;
        MPI_CHK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag, c, MPI_INT, MPI_COMM_WORLD));
        for (int i = 0; i < c * n; i++)
            CHECK(ag[i] == V(i / c, i % c), "Allgather IN_PLACE [%d] = %d", i, ag[i]);
        free(ag);

        all = malloc(sizeof(int) * (size_t)total);
        mine = malloc(sizeof(int) * (size_t)(n + 1));
        for (int i = 0; i <= rank; i++)
            mine[i] = V(rank, 50 + i);
        for (int i = 0; i < total; i++)
            all[i] = -1;
        MPI_CHK(MPI_Allgatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD));
        for (int r = 0; r < n; r++)
            for (int i = 0; i < counts[r]; i++)
                CHECK(all[displs[r] + i] == V(r, 50 + i), "Allgatherv rank %d [%d] = %d", r, i, all[displs[r] + i]);
        for (int i = 0; i < total; i++)
            all[i] = -1;
        for (int i = 0; i <= rank; i++)
            all[displs[rank] + i] = V(rank, 60 + i);
        MPI_CHK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs, MPI_INT, MPI_COMM_WORLD));
        for (int r = 0; r < n; r++)
            for (int i = 0; i < counts[r]; i++)
                CHECK(all[displs[r] + i] == V(r, 60 + i), "Allgatherv IN_PLACE rank %d [%d] = %d", r, i,
                      all[displs[r] + i]);
        free(all);
        free(mine);
        free(counts);
        free(displs);
    }

    /* ---- Alltoall (+IN_PLACE), large blocks too. */
    {
        int cs[2] = {2, 20000};
        for (int k = 0; k < 2; k++) {
            int c = cs[k];
            int *s = malloc(sizeof(int) * (size_t)c * n), *r = malloc(sizeof(int) * (size_t)c * n);
            for (int d = 0; d < n; d++)
                for (int i = 0; i < c; i++)
                    s[d * c + i] = V(rank, d * 100 + i % 100);
            MPI_CHK(MPI_Alltoall(s, c, MPI_INT, r, c, MPI_INT, MPI_COMM_WORLD));
            for (int src = 0; src < n; src++)
                for (int i = 0; i < c; i++)
                    if (r[src * c + i] != V(src, rank * 100 + i % 100))
                        FAIL("Alltoall c=%d from %d [%d]: expected %d, got %d", c, src, i,
                             V(src, rank * 100 + i % 100), r[src * c + i]);
            MPI_CHK(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s, c, MPI_INT, MPI_COMM_WORLD));
            for (int src = 0; src < n; src++)
                for (int i = 0; i < c; i++)
                    if (s[src * c + i] != V(src, rank * 100 + i % 100))
                        FAIL("Alltoall IN_PLACE c=%d from %d [%d]: got %d", c, src, i, s[src * c + i]);
            free(s);
            free(r);
        }
    }

    /* ---- Alltoall of a derived type: to each rank every other int of 5 (a vector type, one
     * per destination at its extent), received as 3 plain ints. */
    {
        MPI_Datatype every_other;
        MPI_CHK(MPI_Type_vector(3, 1, 2, MPI_INT, &every_other));
        MPI_CHK(MPI_Type_commit(&every_other));
        int *s = malloc(sizeof(int) * 5 * n), *r = malloc(sizeof(int) * 3 * n);
        for (int d = 0; d < n; d++)
            for (int i = 0; i < 5; i++)
                s[d * 5 + i] = i % 2 ? -7 : V(rank, d * 10 + i / 2);
        MPI_CHK(MPI_Alltoall(s, 1, every_other, r, 3, MPI_INT, MPI_COMM_WORLD));
        for (int src = 0; src < n; src++)
            for (int i = 0; i < 3; i++)
                CHECK(r[src * 3 + i] == V(src, rank * 10 + i), "Alltoall of a vector type from %d [%d] = %d", src, i,
                      r[src * 3 + i]);
        MPI_CHK(MPI_Type_free(&every_other));
        free(s);
        free(r);
    }

    /* ---- Alltoallv: rank r sends d+1 ints to rank d, at reversed displacements (+IN_PLACE). */
    {
        int *sc = malloc(sizeof(int) * n), *sd = malloc(sizeof(int) * n), *rc = malloc(sizeof(int) * n),
            *rd = malloc(sizeof(int) * n);
        int st = 0, rt = 0;
        for (int d = n - 1; d >= 0; d--) {
            sc[d] = d + 1;
            sd[d] = st;
            st += d + 1;
        }
        for (int s = 0; s < n; s++) {
            rc[s] = rank + 1;
            rd[s] = rt;
            rt += rank + 1 + 1;
        }
        int *s = malloc(sizeof(int) * (size_t)st), *r = malloc(sizeof(int) * (size_t)rt);
        for (int d = 0; d < n; d++)
            for (int i = 0; i < sc[d]; i++)
                s[sd[d] + i] = V(rank, d * 10 + i);
        for (int i = 0; i < rt; i++)
            r[i] = -1;
        MPI_CHK(MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD));
        for (int src = 0; src < n; src++) {
            for (int i = 0; i < rc[src]; i++)
                CHECK(r[rd[src] + i] == V(src, rank * 10 + i), "Alltoallv from %d [%d] = %d", src, i, r[rd[src] + i]);
            CHECK(r[rd[src] + rc[src]] == -1, "Alltoallv wrote into a gap");
        }
        /* IN_PLACE: symmetric counts (2 each), data in r laid out by rd-like displs. */
        int *ic = malloc(sizeof(int) * n), *id = malloc(sizeof(int) * n);
        for (int p = 0; p < n; p++) {
            ic[p] = 2;
            id[p] = 3 * p;
        }
        int *ip = malloc(sizeof(int) * 3 * n);
        for (int p = 0; p < n; p++) {
            ip[3 * p] = V(rank, 2 * p);
            ip[3 * p + 1] = V(rank, 2 * p + 1);
            ip[3 * p + 2] = -9;
        }
        MPI_CHK(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, ip, ic, id, MPI_INT, MPI_COMM_WORLD));
        for (int p = 0; p < n; p++) {
            CHECK(ip[3 * p] == V(p, 2 * rank) && ip[3 * p + 1] == V(p, 2 * rank + 1),
                  "Alltoallv IN_PLACE from %d: %d %d", p, ip[3 * p], ip[3 * p + 1]);
            CHECK(ip[3 * p + 2] == -9, "Alltoallv IN_PLACE wrote into a gap");
        }

        /* ---- Alltoallw: to rank d an int block as MPI_INT (d+1 of them) and receive with
         * per-source types: even sources as MPI_INT, odd sources as a contiguous type. Byte displs. */
        MPI_Datatype *stypes = malloc(sizeof(MPI_Datatype) * n), *rtypes = malloc(sizeof(MPI_Datatype) * n);
        int *sdb = malloc(sizeof(int) * n), *rdb = malloc(sizeof(int) * n), *rcw = malloc(sizeof(int) * n);
        MPI_Datatype pair;
        MPI_CHK(MPI_Type_contiguous(rank + 1, MPI_INT, &pair)); /* one unit = all rank+1 ints */
        MPI_CHK(MPI_Type_commit(&pair));
        for (int d = 0; d < n; d++) {
            stypes[d] = MPI_INT;
            sdb[d] = sd[d] * (int)sizeof(int);
        }
        for (int src = 0; src < n; src++) {
            rtypes[src] = src % 2 ? pair : MPI_INT;
            rcw[src] = src % 2 ? 1 : rank + 1;
            rdb[src] = rd[src] * (int)sizeof(int);
        }
        for (int i = 0; i < rt; i++)
            r[i] = -1;
        MPI_CHK(MPI_Alltoallw(s, sc, sdb, stypes, r, rcw, rdb, rtypes, MPI_COMM_WORLD));
        for (int src = 0; src < n; src++)
            for (int i = 0; i < rank + 1; i++)
                CHECK(r[rd[src] + i] == V(src, rank * 10 + i), "Alltoallw from %d [%d] = %d", src, i, r[rd[src] + i]);
        /* IN_PLACE form */
        int *wc = malloc(sizeof(int) * n), *wd = malloc(sizeof(int) * n);
        MPI_Datatype *wt = malloc(sizeof(MPI_Datatype) * n);
        for (int p = 0; p < n; p++) {
            ip[3 * p] = V(rank, 2 * p);
            ip[3 * p + 1] = V(rank, 2 * p + 1);
            wc[p] = 2;
            wd[p] = 3 * p * (int)sizeof(int);
            wt[p] = MPI_INT;
        }
        MPI_CHK(MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, ip, wc, wd, wt, MPI_COMM_WORLD));
        for (int p = 0; p < n; p++)
            CHECK(ip[3 * p] == V(p, 2 * rank) && ip[3 * p + 1] == V(p, 2 * rank + 1),
                  "Alltoallw IN_PLACE from %d: %d %d", p, ip[3 * p], ip[3 * p + 1]);
        MPI_CHK(MPI_Type_free(&pair));
        free(stypes), free(rtypes), free(sdb), free(rdb), free(rcw), free(wc), free(wd), free(wt);
        free(s), free(r), free(sc), free(sd), free(rc), free(rd), free(ic), free(id), free(ip);
    }

    /* ---- On a split communicator (halves), a Bcast and Allgather agree with the membership. */
    {
        MPI_Comm half;
        MPI_CHK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
        int hs, hr;
        MPI_Comm_size(half, &hs);
        MPI_Comm_rank(half, &hr);
        int *g = malloc(sizeof(int) * hs);
        MPI_CHK(MPI_Allgather(&rank, 1, MPI_INT, g, 1, MPI_INT, half));
        for (int i = 0; i < hs; i++)
            CHECK(g[i] == 2 * i + rank % 2, "Allgather on a half: [%d] = %d", i, g[i]);
        free(g);
        MPI_CHK(MPI_Comm_free(&half));
    }
    return t_finish();
}
