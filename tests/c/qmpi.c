/* QMPI, MPICH's interface for tools stacked on every call: Debian's MPICH 4.0.2 exports its six
 * registration calls but is built without QMPI, so each returns MPI_ERR_UNSUPPORTED_OPERATION
 * and leaves its outputs alone; Billboard answers the same, before MPI_Init (where a tool
 * registers) and after, and a registered init function is never called. Any N >= 1. */
#include "common.h"

static int init_calls = 0;
static void tool_init(int tool_id)
{
    (void)tool_id;
    init_calls++;
}
static void tool_send(void) {}

static void check_unsupported(int rc, const char *what)
{
    CHECK_EQ(rc, MPI_ERR_UNSUPPORTED_OPERATION, what);
    int cls = -1;
    MPI_CHK(MPI_Error_class(rc, &cls));
    CHECK_EQ(cls, MPI_ERR_UNSUPPORTED_OPERATION, what);
}

int main(int argc, char **argv)
{
    /* Before MPI_Init, where QMPI tools register. */
    int before = QMPI_Register_tool_name("bb_qmpi_test", tool_init);
    t_init(&argc, &argv, "qmpi", 1);
    check_unsupported(before, "QMPI_Register_tool_name before MPI_Init");
    check_unsupported(QMPI_Register_tool_name("bb_qmpi_test", tool_init), "QMPI_Register_tool_name");
    int storage = 7;
    check_unsupported(QMPI_Register_tool_storage(0, &storage), "QMPI_Register_tool_storage");
    check_unsupported(QMPI_Register_function(0, MPI_SEND_T, tool_send), "QMPI_Register_function");

    void (*fn)(void) = tool_send;
    int next = -5;
    check_unsupported(QMPI_Get_function(0, MPI_SEND_T, &fn, &next), "QMPI_Get_function");
    CHECK(fn == tool_send, "QMPI_Get_function wrote its function output");
    CHECK_EQ(next, -5, "QMPI_Get_function's next_tool_id (untouched)");

    void *stack[1] = {&storage};
    QMPI_Context ctx = {stack};
    void *out = &init_calls;
    check_unsupported(QMPI_Get_tool_storage(ctx, 0, &out), "QMPI_Get_tool_storage");
    CHECK(out == &init_calls, "QMPI_Get_tool_storage wrote its output");
    check_unsupported(QMPI_Get_calling_address(ctx, &out), "QMPI_Get_calling_address");
    CHECK(out == &init_calls, "QMPI_Get_calling_address wrote its output");

    CHECK(MPI_SEND_T < MPI_LAST_FUNC_T, "MPI_SEND_T (%d) below MPI_LAST_FUNC_T (%d)", (int)MPI_SEND_T,
          (int)MPI_LAST_FUNC_T);
    CHECK_EQ(QMPI_MAX_TOOL_NAME_LENGTH, 256, "QMPI_MAX_TOOL_NAME_LENGTH");
    CHECK_EQ(init_calls, 0, "calls of the registered tool's init function");

    /* The calls are not error-handled: the communicator's handler is not invoked either. */
    MPI_CHK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    check_unsupported(QMPI_Register_tool_storage(1, NULL), "QMPI_Register_tool_storage under ERRORS_ARE_FATAL");
    MPI_CHK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    return t_finish();
}
