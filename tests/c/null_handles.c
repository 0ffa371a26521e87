/* Null handles give the error class MPICH 4.0.2 gives: MPI_COMM_NULL is MPI_ERR_COMM in every call
 * that takes a communicator (point-to-point, collectives, constructors, attributes, topologies,
 * packing, and calls Billboard does not implement yet, which report the communicator first),
 * MPI_DATATYPE_NULL MPI_ERR_TYPE, MPI_OP_NULL MPI_ERR_OP, MPI_REQUEST_NULL where a request is
 * needed MPI_ERR_REQUEST, MPI_GROUP_NULL MPI_ERR_GROUP, MPI_WIN_NULL MPI_ERR_WIN,
 * MPI_INFO_NULL where an info object is needed MPI_ERR_ARG, MPI_ERRHANDLER_NULL MPI_ERR_ARG,
 * MPI_KEYVAL_INVALID MPI_ERR_KEYVAL. The expected classes are those an MPICH build of these calls
 * returned. Any N >= 1. */
#include "common.h"

static void expect_class(int rc, int want, const char *call)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == want, "%s: class %d (%s), expected %d", call, cls, t_errstr(rc), want);
}
#define EXPECT(want, call) expect_class((call), (want), #call)

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "null_handles", 1);
    int x[8] = {0}, y[8], flag, len, cnt[1] = {1}, dis[1] = {0}, d[2] = {1, 1}, p[2] = {0, 0};
    char s[MPI_MAX_OBJECT_NAME];
    MPI_Status st;
    MPI_Request rq;
    MPI_Comm c, N = MPI_COMM_NULL;
    MPI_Group g;
    MPI_Win w;
    MPI_Message msg;
    MPI_Errhandler eh;
    MPI_Info info;
    MPI_Datatype t;
    MPI_Op op;
    void *v;
    EXPECT(MPI_ERR_COMM, MPI_Send(x,1,MPI_INT,0,0,N));
    EXPECT(MPI_ERR_COMM, MPI_Recv(x,1,MPI_INT,0,0,N,&st));
    EXPECT(MPI_ERR_COMM, MPI_Barrier(N));
    EXPECT(MPI_ERR_COMM, MPI_Bcast(x,1,MPI_INT,0,N));
    EXPECT(MPI_ERR_COMM, MPI_Allreduce(x,x,1,MPI_INT,MPI_SUM,N));
    EXPECT(MPI_ERR_COMM, MPI_Comm_size(N,x));
    EXPECT(MPI_ERR_COMM, MPI_Comm_rank(N,x));
    EXPECT(MPI_ERR_COMM, MPI_Comm_dup(N,&c));
    EXPECT(MPI_ERR_COMM, MPI_Comm_split(N,0,0,&c));
    EXPECT(MPI_ERR_COMM, MPI_Comm_group(N,&g));
    EXPECT(MPI_ERR_COMM, MPI_Comm_set_name(N,"x"));
    EXPECT(MPI_ERR_COMM, MPI_Comm_get_name(N,s,&len));
    EXPECT(MPI_ERR_COMM, MPI_Comm_set_errhandler(N,MPI_ERRORS_RETURN));
    EXPECT(MPI_ERR_COMM, MPI_Comm_get_errhandler(N,&eh));
    EXPECT(MPI_ERR_COMM, MPI_Comm_get_attr(N,MPI_TAG_UB,&v,&flag));
    EXPECT(MPI_ERR_COMM, MPI_Comm_compare(N,MPI_COMM_WORLD,x));
    c = MPI_COMM_NULL; EXPECT(MPI_ERR_COMM, MPI_Comm_free(&c));
    EXPECT(MPI_ERR_COMM, MPI_Isend(x,1,MPI_INT,0,0,N,&rq));
    EXPECT(MPI_ERR_TYPE, MPI_Send(x,1,MPI_DATATYPE_NULL,0,0,MPI_COMM_WORLD));
    EXPECT(MPI_ERR_TYPE, MPI_Type_size(MPI_DATATYPE_NULL,x));
    t = MPI_DATATYPE_NULL; EXPECT(MPI_ERR_TYPE, MPI_Type_free(&t));
    EXPECT(MPI_ERR_OP, MPI_Reduce(x,x,1,MPI_INT,MPI_OP_NULL,0,MPI_COMM_WORLD));
    op = MPI_OP_NULL; EXPECT(MPI_ERR_OP, MPI_Op_free(&op));
    rq = MPI_REQUEST_NULL; EXPECT(MPI_ERR_REQUEST, MPI_Request_free(&rq));
    rq = MPI_REQUEST_NULL; EXPECT(MPI_ERR_REQUEST, MPI_Start(&rq));
    EXPECT(MPI_ERR_GROUP, MPI_Group_size(MPI_GROUP_NULL,x));
    g = MPI_GROUP_NULL; EXPECT(MPI_ERR_GROUP, MPI_Group_free(&g));
    EXPECT(MPI_ERR_GROUP, MPI_Comm_create(MPI_COMM_WORLD,MPI_GROUP_NULL,&c));
    EXPECT(MPI_ERR_WIN, MPI_Win_fence(0,MPI_WIN_NULL));
    EXPECT(MPI_ERR_WIN, MPI_Win_get_group(MPI_WIN_NULL,&g));
    EXPECT(MPI_ERR_WIN, MPI_Win_set_errhandler(MPI_WIN_NULL,MPI_ERRORS_RETURN));
    w = MPI_WIN_NULL; EXPECT(MPI_ERR_WIN, MPI_Win_free(&w));
    EXPECT(MPI_ERR_ARG, MPI_Info_set(MPI_INFO_NULL,"a","b"));
    EXPECT(MPI_ERR_ARG, MPI_Info_get_nkeys(MPI_INFO_NULL,x));
    info = MPI_INFO_NULL; EXPECT(MPI_ERR_ARG, MPI_Info_free(&info));
    EXPECT(MPI_ERR_ARG, MPI_Info_dup(MPI_INFO_NULL,&info));
    EXPECT(MPI_ERR_ARG, MPI_Comm_set_errhandler(MPI_COMM_WORLD,MPI_ERRHANDLER_NULL));
    eh = MPI_ERRHANDLER_NULL; EXPECT(MPI_ERR_ARG, MPI_Errhandler_free(&eh));
    EXPECT(MPI_ERR_ARG, MPI_Comm_set_info(MPI_COMM_WORLD,MPI_INFO_NULL));
    x[0] = MPI_KEYVAL_INVALID; EXPECT(MPI_ERR_KEYVAL, MPI_Keyval_free(x));
    EXPECT(MPI_ERR_KEYVAL, MPI_Comm_get_attr(MPI_COMM_WORLD,MPI_KEYVAL_INVALID,&v,&flag));
    EXPECT(MPI_ERR_COMM, MPI_Ssend(x,1,MPI_INT,0,0,N));
    EXPECT(MPI_ERR_COMM, MPI_Bsend(x,1,MPI_INT,0,0,N));
    EXPECT(MPI_ERR_COMM, MPI_Rsend(x,1,MPI_INT,0,0,N));
    EXPECT(MPI_ERR_COMM, MPI_Irecv(x,1,MPI_INT,0,0,N,&rq));
    EXPECT(MPI_ERR_COMM, MPI_Issend(x,1,MPI_INT,0,0,N,&rq));
    EXPECT(MPI_ERR_COMM, MPI_Sendrecv(x,1,MPI_INT,0,0,y,1,MPI_INT,0,0,N,&st));
    EXPECT(MPI_ERR_COMM, MPI_Sendrecv_replace(x,1,MPI_INT,0,0,0,0,N,&st));
    EXPECT(MPI_ERR_COMM, MPI_Probe(0,0,N,&st));
    EXPECT(MPI_ERR_COMM, MPI_Iprobe(0,0,N,&flag,&st));
    EXPECT(MPI_ERR_COMM, MPI_Mprobe(0,0,N,&msg,&st));
    EXPECT(MPI_ERR_COMM, MPI_Improbe(0,0,N,&flag,&msg,&st));
    EXPECT(MPI_ERR_COMM, MPI_Send_init(x,1,MPI_INT,0,0,N,&rq));
    EXPECT(MPI_ERR_COMM, MPI_Recv_init(x,1,MPI_INT,0,0,N,&rq));
    EXPECT(MPI_ERR_COMM, MPI_Gather(x,1,MPI_INT,y,1,MPI_INT,0,N));
    EXPECT(MPI_ERR_COMM, MPI_Scatter(x,1,MPI_INT,y,1,MPI_INT,0,N));
    EXPECT(MPI_ERR_COMM, MPI_Allgather(x,1,MPI_INT,y,1,MPI_INT,N));
    EXPECT(MPI_ERR_COMM, MPI_Alltoall(x,1,MPI_INT,y,1,MPI_INT,N));
    EXPECT(MPI_ERR_COMM, MPI_Reduce(x,y,1,MPI_INT,MPI_SUM,0,N));
    EXPECT(MPI_ERR_COMM, MPI_Scan(x,y,1,MPI_INT,MPI_SUM,N));
    EXPECT(MPI_ERR_COMM, MPI_Exscan(x,y,1,MPI_INT,MPI_SUM,N));
    EXPECT(MPI_ERR_COMM, MPI_Reduce_scatter_block(x,y,1,MPI_INT,MPI_SUM,N));
    EXPECT(MPI_ERR_COMM, MPI_Reduce_scatter(x,y,cnt,MPI_INT,MPI_SUM,N));
    EXPECT(MPI_ERR_COMM, MPI_Gatherv(x,1,MPI_INT,y,cnt,dis,MPI_INT,0,N));
    EXPECT(MPI_ERR_COMM, MPI_Allgatherv(x,1,MPI_INT,y,cnt,dis,MPI_INT,N));
    EXPECT(MPI_ERR_COMM, MPI_Alltoallv(x,cnt,dis,MPI_INT,y,cnt,dis,MPI_INT,N));
    EXPECT(MPI_ERR_COMM, MPI_Ibarrier(N,&rq));
    EXPECT(MPI_ERR_COMM, MPI_Ibcast(x,1,MPI_INT,0,N,&rq));
    EXPECT(MPI_ERR_COMM, MPI_Iallreduce(x,y,1,MPI_INT,MPI_SUM,N,&rq));
    EXPECT(MPI_ERR_COMM, MPI_Ireduce(x,y,1,MPI_INT,MPI_SUM,0,N,&rq));
    EXPECT(MPI_ERR_COMM, MPI_Comm_idup(N,&c,&rq));
    EXPECT(MPI_ERR_COMM, MPI_Comm_dup_with_info(N,MPI_INFO_NULL,&c));
    EXPECT(MPI_ERR_COMM, MPI_Comm_create(N,MPI_GROUP_EMPTY,&c));
    EXPECT(MPI_ERR_COMM, MPI_Comm_create_group(N,MPI_GROUP_EMPTY,0,&c));
    EXPECT(MPI_ERR_COMM, MPI_Comm_split_type(N,MPI_COMM_TYPE_SHARED,0,MPI_INFO_NULL,&c));
    EXPECT(MPI_ERR_COMM, MPI_Comm_test_inter(N,&flag));
    EXPECT(MPI_ERR_COMM, MPI_Comm_remote_size(N,&flag));
    EXPECT(MPI_ERR_COMM, MPI_Comm_set_attr(N,MPI_TAG_UB,x));
    EXPECT(MPI_ERR_COMM, MPI_Comm_delete_attr(N,MPI_TAG_UB));
    EXPECT(MPI_ERR_COMM, MPI_Attr_get(N,MPI_TAG_UB,x,&flag));
    EXPECT(MPI_ERR_COMM, MPI_Comm_call_errhandler(N,MPI_ERR_OTHER));
    EXPECT(MPI_ERR_COMM, MPI_Comm_get_info(N,(MPI_Info*)x));
    EXPECT(MPI_ERR_COMM, MPI_Comm_set_info(N,MPI_INFO_NULL));
    EXPECT(MPI_ERR_COMM, MPI_Cart_create(N,2,d,p,0,&c));
    EXPECT(MPI_ERR_COMM, MPI_Cartdim_get(N,&flag));
    EXPECT(MPI_ERR_COMM, MPI_Cart_get(N,2,d,p,x));
    EXPECT(MPI_ERR_COMM, MPI_Cart_rank(N,x,&flag));
    EXPECT(MPI_ERR_COMM, MPI_Cart_coords(N,0,2,x));
    EXPECT(MPI_ERR_COMM, MPI_Cart_shift(N,0,1,x,y));
    EXPECT(MPI_ERR_COMM, MPI_Cart_sub(N,p,&c));
    EXPECT(MPI_ERR_COMM, MPI_Topo_test(N,&flag));
    EXPECT(MPI_ERR_COMM, MPI_Cart_map(N,2,d,p,&flag));
    EXPECT(MPI_ERR_COMM, MPI_Graph_create(N,1,cnt,dis,0,&c));
    EXPECT(MPI_ERR_COMM, MPI_Dist_graph_create_adjacent(N,0,x,x,0,x,x,MPI_INFO_NULL,0,&c));
    EXPECT(MPI_ERR_COMM, MPI_Win_create(x,4,4,MPI_INFO_NULL,N,&w));
    EXPECT(MPI_ERR_COMM, MPI_Win_allocate(4,4,MPI_INFO_NULL,N,x,&w));
    EXPECT(MPI_ERR_COMM, MPI_Win_create_dynamic(MPI_INFO_NULL,N,&w));
    EXPECT(MPI_ERR_COMM, MPI_Intercomm_create(N,0,MPI_COMM_WORLD,0,0,&c));
    EXPECT(MPI_ERR_COMM, MPI_Intercomm_merge(N,0,&c));
    EXPECT(MPI_ERR_COMM, MPI_Comm_remote_group(N,&g));
    EXPECT(MPI_ERR_COMM, MPI_Pack_size(1,MPI_INT,N,&flag));
    EXPECT(MPI_ERR_COMM, MPI_Pack(x,1,MPI_INT,y,32,&flag,N));
    EXPECT(MPI_ERR_COMM, MPI_Unpack(x,32,&flag,y,1,MPI_INT,N));
    EXPECT(MPI_ERR_COMM, MPI_Comm_disconnect(&N));
    (void)y, (void)cnt, (void)dis, (void)d, (void)p, (void)s, (void)len, (void)st, (void)msg;
    return t_finish();
}
