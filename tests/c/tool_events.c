/* MPI 4.0's tool events as MPICH 4.0.2 has them: none. The tool interface's life
 * (MPI_T_init_thread / MPI_T_finalize, counted, before MPI_Init too); MPI_T_event_get_num and
 * MPI_T_source_get_num say 0; the calls that name an event, a source or a category answer with
 * MPICH's error codes for one that does not exist; every code outside init/finalize is
 * MPI_T_ERR_NOT_INITIALIZED. Any N >= 1. */
#include "common.h"

#define CHECK_RC(call, want) CHECK_EQ((call), (want), #call)

int main(int argc, char **argv)
{
    int n = -7, provided = -1;
    t_name = "tool_events";
    CHECK_RC(MPI_T_event_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    CHECK_RC(MPI_T_source_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    /* Before MPI_Init, and twice (each init needs its finalize). */
    CHECK_RC(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), MPI_SUCCESS);
    CHECK_RC(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), MPI_SUCCESS);
    t_init(&argc, &argv, "tool_events", 1);
    CHECK_RC(MPI_T_event_get_num(&n), MPI_SUCCESS);
    CHECK_EQ(n, 0, "number of events");
    n = -7;
    CHECK_RC(MPI_T_source_get_num(&n), MPI_SUCCESS);
    CHECK_EQ(n, 0, "number of event sources");
    CHECK_RC(MPI_T_event_get_num(NULL), MPI_T_ERR_INVALID);

    char name[64], desc[64];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, nel = 4, index = -5;
    MPI_Datatype types[4];
    MPI_Aint displs[4];
    MPI_Info info;
    MPI_Count ticks, max_ticks;
    MPI_T_source_order order;
    MPI_T_event_registration reg;
    CHECK_RC(MPI_T_event_get_info(0, name, &name_len, &verbosity, types, displs, &nel, NULL, &info, desc, &desc_len,
                                  &bind),
             MPI_T_ERR_INVALID);
    CHECK_RC(MPI_T_event_get_info(-1, name, &name_len, &verbosity, types, displs, &nel, NULL, &info, desc, &desc_len,
                                  &bind),
             MPI_T_ERR_INVALID);
    CHECK_RC(MPI_T_event_get_index("no_such_event", &index), MPI_T_ERR_INVALID_NAME);
    CHECK_EQ(index, -5, "MPI_T_event_get_index changed the index of an unknown name");
    CHECK_RC(MPI_T_event_get_index(NULL, &index), MPI_T_ERR_INVALID);
    CHECK_RC(MPI_T_source_get_info(0, name, &name_len, desc, &desc_len, &order, &ticks, &max_ticks, &info),
             MPI_T_ERR_INVALID_INDEX);
    CHECK_RC(MPI_T_source_get_timestamp(0, &ticks), MPI_T_ERR_INVALID_INDEX);
    CHECK_RC(MPI_T_event_handle_alloc(0, NULL, MPI_INFO_NULL, &reg), MPI_T_ERR_INVALID_INDEX);
    /* Categories: an index out of range is invalid; a valid one holds no event. */
    int ncat = -1;
    CHECK_RC(MPI_T_category_get_num(&ncat), MPI_SUCCESS);
    CHECK_RC(MPI_T_category_get_num_events(-1, &n), MPI_T_ERR_INVALID_INDEX);
    CHECK_RC(MPI_T_category_get_num_events(ncat, &n), MPI_T_ERR_INVALID_INDEX);
    CHECK_RC(MPI_T_category_get_events(ncat, 4, &index), MPI_T_ERR_INVALID_INDEX);
    for (int c = 0; c < ncat; c++) {
        n = -1;
        CHECK_RC(MPI_T_category_get_num_events(c, &n), MPI_SUCCESS);
        CHECK_EQ(n, 0, "events in a category");
        CHECK_RC(MPI_T_category_get_events(c, 4, &index), MPI_SUCCESS);
    }
    CHECK_RC(MPI_T_finalize(), MPI_SUCCESS);
    CHECK_RC(MPI_T_event_get_num(&n), MPI_SUCCESS);
    CHECK_RC(MPI_T_finalize(), MPI_SUCCESS);
    CHECK_RC(MPI_T_event_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    return t_finish();
}
