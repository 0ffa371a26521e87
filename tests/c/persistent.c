/* Persistent requests: Send_init, Bsend_init, Ssend_init, Rsend_init, Recv_init, Start, Startall;
 * reuse over many rounds with fresh data; inactive requests (Wait/Test return at once with an
 * empty status); Request_free of an inactive persistent request; requests whose derived datatype
 * the program freed after the init (the request keeps it: MPI_Start still works, as in MPICH).
 * Ring, any N >= 1. */
#include "common.h"

enum { ROUNDS = 20, N = 1000 };

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "persistent", 1);
    const int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    static int sbuf[4][N], rbuf[4][N];

    int bsize = 0;
    MPI_CHK(MPI_Pack_size(N, MPI_INT, MPI_COMM_WORLD, &bsize));
    bsize = 2 * (bsize + MPI_BSEND_OVERHEAD);
    char *bbuf = malloc(bsize);
    MPI_CHK(MPI_Buffer_attach(bbuf, bsize));

    /* One request per send mode, and four receives. */
    MPI_Request req[8];
    MPI_CHK(MPI_Send_init(sbuf[0], N, MPI_INT, right, 0, MPI_COMM_WORLD, &req[0]));
    MPI_CHK(MPI_Bsend_init(sbuf[1], N, MPI_INT, right, 1, MPI_COMM_WORLD, &req[1]));
    MPI_CHK(MPI_Ssend_init(sbuf[2], N, MPI_INT, right, 2, MPI_COMM_WORLD, &req[2]));
    MPI_CHK(MPI_Rsend_init(sbuf[3], N, MPI_INT, right, 3, MPI_COMM_WORLD, &req[3]));
    for (int m = 0; m < 4; m++)
        MPI_CHK(MPI_Recv_init(rbuf[m], N, MPI_INT, left, m, MPI_COMM_WORLD, &req[4 + m]));

    /* Inactive persistent requests: Wait and Test return at once with an empty status. */
    {
        MPI_Status st;
        int flag = 0;
        MPI_CHK(MPI_Test(&req[4], &flag, &st));
        CHECK_EQ(flag, 1, "Test on an inactive persistent request");
        CHECK(req[4] != MPI_REQUEST_NULL, "Test nulled an inactive persistent request");
        CHECK_EQ(st.MPI_SOURCE, MPI_ANY_SOURCE, "empty status source (inactive)");
        CHECK_EQ(st.MPI_TAG, MPI_ANY_TAG, "empty status tag (inactive)");
        MPI_CHK(MPI_Wait(&req[0], &st));
        CHECK(req[0] != MPI_REQUEST_NULL, "Wait nulled an inactive persistent request");
    }

    for (int round = 0; round < ROUNDS; round++) {
        for (int m = 0; m < 4; m++)
            for (int i = 0; i < N; i++) {
                sbuf[m][i] = (round * 4 + m) * 100000 + t_rank * 1000 + i;
                rbuf[m][i] = -1;
            }
        /* Receives first (Rsend needs its receive posted), then a barrier, then sends. */
        if (round % 2 == 0)
            MPI_CHK(MPI_Startall(4, &req[4]));
        else
            for (int m = 0; m < 4; m++)
                MPI_CHK(MPI_Start(&req[4 + m]));
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        if (round % 2 == 0) {
            MPI_CHK(MPI_Startall(4, req));
        } else {
            for (int m = 0; m < 4; m++)
                MPI_CHK(MPI_Start(&req[m]));
        }
        MPI_Status st[8];
        if (round % 3 == 0) {
            MPI_CHK(MPI_Waitall(8, req, st));
        } else {
            /* Poll with Testall, bounded. */
            double t0 = MPI_Wtime();
            int flag = 0;
            while (!flag) {
                MPI_CHK(MPI_Testall(8, req, &flag, st));
                CHECK(flag || MPI_Wtime() - t0 < 20.0, "round %d: Testall never true", round);
            }
        }
        for (int k = 0; k < 8; k++)
            CHECK(req[k] != MPI_REQUEST_NULL, "round %d: completion freed persistent request %d", round, k);
        for (int m = 0; m < 4; m++) {
            CHECK_EQ(st[4 + m].MPI_SOURCE, left, "persistent recv source");
            CHECK_EQ(st[4 + m].MPI_TAG, m, "persistent recv tag");
            int c = -1;
            MPI_CHK(MPI_Get_count(&st[4 + m], MPI_INT, &c));
            CHECK_EQ(c, N, "persistent recv count");
            for (int i = 0; i < N; i++) {
                int want = (round * 4 + m) * 100000 + left * 1000 + i;
                if (rbuf[m][i] != want)
                    FAIL("round %d mode %d: [%d] expected %d, got %d", round, m, i, want, rbuf[m][i]);
            }
        }
    }

    /* Ssend_init is synchronous: not complete before its receive starts. */
    {
        MPI_CHK(MPI_Start(&req[2]));
        int flag = 1;
        for (int i = 0; i < 10; i++) {
            MPI_CHK(MPI_Test(&req[2], &flag, MPI_STATUS_IGNORE));
            CHECK_EQ(flag, 0, "persistent Ssend complete before its receive started");
            usleep(1000);
        }
        MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHK(MPI_Start(&req[6]));
        MPI_CHK(MPI_Wait(&req[6], MPI_STATUS_IGNORE));
        t_wait_bounded(&req[2], MPI_STATUS_IGNORE, 20.0, "persistent Ssend");
    }

    for (int k = 0; k < 8; k++) {
        MPI_CHK(MPI_Request_free(&req[k]));
        CHECK(req[k] == MPI_REQUEST_NULL, "Request_free of persistent request %d", k);
    }

    /* Persistent requests on PROC_NULL complete at once every time. */
    {
        int v = 3, w = 4;
        MPI_Request p[2];
        MPI_CHK(MPI_Send_init(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &p[0]));
        MPI_CHK(MPI_Recv_init(&w, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &p[1]));
        for (int r = 0; r < 3; r++) {
            MPI_Status st[2];
            MPI_CHK(MPI_Startall(2, p));
            MPI_CHK(MPI_Waitall(2, p, st));
            /* MPI says source MPI_PROC_NULL; MPICH 4.0.2 gives MPI_ANY_SOURCE here: check the count. */
            int c = -1;
            MPI_CHK(MPI_Get_count(&st[1], MPI_INT, &c));
            CHECK_EQ(c, 0, "persistent recv from PROC_NULL: count");
            CHECK_EQ(w, 4, "persistent recv from PROC_NULL changed the buffer");
        }
        MPI_CHK(MPI_Request_free(&p[0]));
        MPI_CHK(MPI_Request_free(&p[1]));
    }

    /* The derived datatype is freed right after the init; the requests still start. */
    {
        MPI_Datatype every2;
        MPI_CHK(MPI_Type_vector(N / 2, 1, 2, MPI_INT, &every2));
        MPI_CHK(MPI_Type_commit(&every2));
        MPI_Request p[2];
        MPI_CHK(MPI_Recv_init(rbuf[0], 1, every2, left, 9, MPI_COMM_WORLD, &p[0]));
        MPI_CHK(MPI_Send_init(sbuf[0], 1, every2, right, 9, MPI_COMM_WORLD, &p[1]));
        MPI_CHK(MPI_Type_free(&every2));
        for (int r = 0; r < 3; r++) {
            for (int i = 0; i < N; i++) {
                sbuf[0][i] = t_rank * 100000 + r * 1000 + i;
                rbuf[0][i] = -1;
            }
            MPI_CHK(MPI_Startall(2, p));
            MPI_CHK(MPI_Waitall(2, p, MPI_STATUSES_IGNORE));
            for (int i = 0; i < N; i++) {
                int want = i % 2 ? -1 : left * 100000 + r * 1000 + i;
                CHECK(rbuf[0][i] == want, "round %d with a freed datatype: [%d] = %d, expected %d", r, i, rbuf[0][i],
                      want);
            }
        }
        MPI_CHK(MPI_Request_free(&p[0]));
        MPI_CHK(MPI_Request_free(&p[1]));
    }

    void *d;
    int ds;
    MPI_CHK(MPI_Buffer_detach(&d, &ds));
    free(bbuf);
    return t_finish();
}
