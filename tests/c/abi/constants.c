/*
 * ABI pin: prints one line per fact of <mpi.h> that reaches a compiled program, as
 *     NAME VALUE [C-TYPE]
 * Built once against Billboard's header and once against Debian's MPICH 4.0.2 header by
 * crates/mpi/tests/abi.rs, which requires the two outputs to agree line for line.
 *
 * It is compiled and linked without any MPI library, so it never evaluates a library object or
 * function: exported objects are described through sizeof and _Generic (both unevaluated), and
 * MPIR_Dup_fn, the one function a constant refers to, is defined here.
 *
 * Build: cc -std=gnu11 -I<include dir> constants.c   (C11 for _Generic; GNU for __typeof__.)
 */
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The C type of an integer-valued expression: a handle macro must be an int, as in MPICH. */
#define INT_TYPE(x)                                                                        \
    _Generic((x), int: "int", unsigned int: "unsigned", long: "long",                      \
             unsigned long: "unsigned-long", long long: "long-long",                       \
             unsigned long long: "unsigned-long-long", default: "other")
#define INT(x) printf("%s %lld %s\n", #x, (long long)(x), INT_TYPE(x))

/* Sentinel pointers: their numeric value and pointer type. MPI_Fint is int, so int * covers
 * MPI_Fint * as well. */
#define PTR_TYPE(x)                                                                        \
    _Generic((x), void *: "void*", MPI_Status *: "MPI_Status*", int *: "int*",             \
             char **: "char**", char ***: "char***", MPI_File: "MPI_File",                 \
             MPI_T_enum: "MPI_T_enum", MPI_T_cvar_handle: "MPI_T_cvar_handle",             \
             MPI_T_pvar_handle: "MPI_T_pvar_handle",                                       \
             MPI_T_pvar_session: "MPI_T_pvar_session", default: "other")
#define PTR(x) printf("%s %lld %s\n", #x, (long long)(intptr_t)(x), PTR_TYPE(x))

/* Callback constants: null pointers print 0; the dup constants must point at MPIR_Dup_fn,
 * the symbol a program built against MPICH references. MPI_DUP_FN is the function itself,
 * not a pointer, hence the &* that gives every one of them a pointer type. */
int MPIR_Dup_fn(MPI_Comm oldcomm, int keyval, void *extra_state, void *attribute_val_in,
                void *attribute_val_out, int *flag) {
    (void)oldcomm, (void)keyval, (void)extra_state, (void)attribute_val_in;
    (void)attribute_val_out, (void)flag;
    return 0;
}
#define FN(x, fntype)                                                                      \
    printf("%s %s %s\n", #x,                                                               \
           (void *)(x) == (void *)MPIR_Dup_fn ? "MPIR_Dup_fn" : (x) == 0 ? "0" : "other",  \
           __builtin_types_compatible_p(__typeof__(&*(x)), fntype *) ? #fntype "*" : "other")

/* Scalar and handle types: size, signedness and the C type behind the typedef. */
#define SCALAR_TYPE(t)                                                                     \
    _Generic((t)0, int: "int", long: "long", long long: "long-long",                       \
             unsigned int: "unsigned", unsigned long: "unsigned-long", default: "other")
#define TYPE(t) printf("sizeof(%s) %zu %s\n", #t, sizeof(t), SCALAR_TYPE(t))
/* Pointer typedefs: which struct they point to (this is what C++ mangles). */
#define PTR_TO(t, target)                                                                  \
    printf("sizeof(%s) %zu %s\n", #t, sizeof(t),                                           \
           __builtin_types_compatible_p(t, target *) ? #target "*" : "other")

/* Struct layout */
#define FIELD(s, f) printf("offsetof(%s.%s) %zu size %zu\n", #s, #f, offsetof(s, f), sizeof(((s *)0)->f))

/* Exported objects: size and exact type (qualifiers included, via the address's type). */
#define OBJ(x, ptrtype)                                                                    \
    printf("object(%s) %zu %s\n", #x, sizeof(x),                                           \
           _Generic(&(x), ptrtype *: #ptrtype, default: "other"))

/* Callback typedefs against the function type the standard and MPICH give them, spelled
 * in plain C types here so that both headers are checked against the same expectation. */
#define CALLBACK(t, fntype)                                                                \
    printf("typedef(%s) %s\n", #t, __builtin_types_compatible_p(t, fntype) ? #fntype : "other")

int main(void) {
    /* ---- Integer constants and handles, in the order of Billboard's mpi.h */
    INT(MPI_VERSION);
    INT(MPI_SUBVERSION);
    INT(MPI_COMM_NULL);
    INT(MPI_GROUP_NULL);
    INT(MPI_DATATYPE_NULL);
    INT(MPI_ERRHANDLER_NULL);
    INT(MPI_OP_NULL);
    INT(MPI_INFO_NULL);
    INT(MPI_WIN_NULL);
    INT(MPI_KEYVAL_INVALID);
    INT(MPI_REQUEST_NULL);
    INT(MPI_MESSAGE_NULL);
    INT(MPI_SESSION_NULL);
    INT(MPI_MESSAGE_NO_PROC);
    INT(MPI_COMM_WORLD);
    INT(MPI_COMM_SELF);
    INT(MPI_GROUP_EMPTY);
    INT(MPI_INFO_ENV);
    INT(MPI_ERRORS_ARE_FATAL);
    INT(MPI_ERRORS_RETURN);
    INT(MPI_ERRORS_ABORT);
    INT(MPI_CHAR);
    INT(MPI_SIGNED_CHAR);
    INT(MPI_UNSIGNED_CHAR);
    INT(MPI_BYTE);
    INT(MPI_WCHAR);
    INT(MPI_SHORT);
    INT(MPI_UNSIGNED_SHORT);
    INT(MPI_INT);
    INT(MPI_UNSIGNED);
    INT(MPI_LONG);
    INT(MPI_UNSIGNED_LONG);
    INT(MPI_LONG_LONG_INT);
    INT(MPI_LONG_LONG);
    INT(MPI_UNSIGNED_LONG_LONG);
    INT(MPI_FLOAT);
    INT(MPI_DOUBLE);
    INT(MPI_LONG_DOUBLE);
    INT(MPI_PACKED);
    INT(MPI_LB);
    INT(MPI_UB);
    INT(MPI_FLOAT_INT);
    INT(MPI_DOUBLE_INT);
    INT(MPI_LONG_INT);
    INT(MPI_SHORT_INT);
    INT(MPI_LONG_DOUBLE_INT);
    INT(MPI_2INT);
    INT(MPI_CHARACTER);
    INT(MPI_LOGICAL);
    INT(MPI_INTEGER);
    INT(MPI_REAL);
    INT(MPI_DOUBLE_PRECISION);
    INT(MPI_COMPLEX);
    INT(MPI_DOUBLE_COMPLEX);
    INT(MPI_2INTEGER);
    INT(MPI_2REAL);
    INT(MPI_2DOUBLE_PRECISION);
    INT(MPI_REAL4);
    INT(MPI_REAL8);
    INT(MPI_REAL16);
    INT(MPI_COMPLEX8);
    INT(MPI_COMPLEX16);
    INT(MPI_COMPLEX32);
    INT(MPI_INTEGER1);
    INT(MPI_INTEGER2);
    INT(MPI_INTEGER4);
    INT(MPI_INTEGER8);
    INT(MPI_INTEGER16);
    INT(MPI_INT8_T);
    INT(MPI_INT16_T);
    INT(MPI_INT32_T);
    INT(MPI_INT64_T);
    INT(MPI_UINT8_T);
    INT(MPI_UINT16_T);
    INT(MPI_UINT32_T);
    INT(MPI_UINT64_T);
    INT(MPI_C_BOOL);
    INT(MPI_C_FLOAT_COMPLEX);
    INT(MPI_C_COMPLEX);
    INT(MPI_C_DOUBLE_COMPLEX);
    INT(MPI_C_LONG_DOUBLE_COMPLEX);
    INT(MPI_AINT);
    INT(MPI_OFFSET);
    INT(MPI_COUNT);
    INT(MPI_CXX_BOOL);
    INT(MPI_CXX_FLOAT_COMPLEX);
    INT(MPI_CXX_DOUBLE_COMPLEX);
    INT(MPI_CXX_LONG_DOUBLE_COMPLEX);
    INT(MPI_TYPECLASS_REAL);
    INT(MPI_TYPECLASS_INTEGER);
    INT(MPI_TYPECLASS_COMPLEX);
    INT(MPI_MAX);
    INT(MPI_MIN);
    INT(MPI_SUM);
    INT(MPI_PROD);
    INT(MPI_LAND);
    INT(MPI_BAND);
    INT(MPI_LOR);
    INT(MPI_BOR);
    INT(MPI_LXOR);
    INT(MPI_BXOR);
    INT(MPI_MINLOC);
    INT(MPI_MAXLOC);
    INT(MPI_REPLACE);
    INT(MPI_NO_OP);
    INT(MPI_PROC_NULL);
    INT(MPI_ANY_SOURCE);
    INT(MPI_ROOT);
    INT(MPI_ANY_TAG);
    INT(MPI_UNDEFINED);
    INT(MPI_F_STATUS_SIZE);
    INT(MPI_F_SOURCE);
    INT(MPI_F_TAG);
    INT(MPI_F_ERROR);
    INT(MPI_SUCCESS);
    INT(MPI_ERR_BUFFER);
    INT(MPI_ERR_COUNT);
    INT(MPI_ERR_TYPE);
    INT(MPI_ERR_TAG);
    INT(MPI_ERR_COMM);
    INT(MPI_ERR_RANK);
    INT(MPI_ERR_ROOT);
    INT(MPI_ERR_GROUP);
    INT(MPI_ERR_OP);
    INT(MPI_ERR_TOPOLOGY);
    INT(MPI_ERR_DIMS);
    INT(MPI_ERR_ARG);
    INT(MPI_ERR_UNKNOWN);
    INT(MPI_ERR_TRUNCATE);
    INT(MPI_ERR_OTHER);
    INT(MPI_ERR_INTERN);
    INT(MPI_ERR_IN_STATUS);
    INT(MPI_ERR_PENDING);
    INT(MPI_ERR_REQUEST);
    INT(MPI_ERR_ACCESS);
    INT(MPI_ERR_AMODE);
    INT(MPI_ERR_BAD_FILE);
    INT(MPI_ERR_CONVERSION);
    INT(MPI_ERR_DUP_DATAREP);
    INT(MPI_ERR_FILE_EXISTS);
    INT(MPI_ERR_FILE_IN_USE);
    INT(MPI_ERR_FILE);
    INT(MPI_ERR_INFO);
    INT(MPI_ERR_INFO_KEY);
    INT(MPI_ERR_INFO_VALUE);
    INT(MPI_ERR_INFO_NOKEY);
    INT(MPI_ERR_IO);
    INT(MPI_ERR_NAME);
    INT(MPI_ERR_NO_MEM);
    INT(MPI_ERR_NOT_SAME);
    INT(MPI_ERR_NO_SPACE);
    INT(MPI_ERR_NO_SUCH_FILE);
    INT(MPI_ERR_PORT);
    INT(MPI_ERR_QUOTA);
    INT(MPI_ERR_READ_ONLY);
    INT(MPI_ERR_SERVICE);
    INT(MPI_ERR_SPAWN);
    INT(MPI_ERR_UNSUPPORTED_DATAREP);
    INT(MPI_ERR_UNSUPPORTED_OPERATION);
    INT(MPI_ERR_WIN);
    INT(MPI_ERR_BASE);
    INT(MPI_ERR_LOCKTYPE);
    INT(MPI_ERR_KEYVAL);
    INT(MPI_ERR_RMA_CONFLICT);
    INT(MPI_ERR_RMA_SYNC);
    INT(MPI_ERR_SIZE);
    INT(MPI_ERR_DISP);
    INT(MPI_ERR_ASSERT);
    INT(MPI_ERR_RMA_RANGE);
    INT(MPI_ERR_RMA_ATTACH);
    INT(MPI_ERR_RMA_SHARED);
    INT(MPI_ERR_RMA_FLAVOR);
    INT(MPI_T_ERR_MEMORY);
    INT(MPI_T_ERR_NOT_INITIALIZED);
    INT(MPI_T_ERR_CANNOT_INIT);
    INT(MPI_T_ERR_INVALID_INDEX);
    INT(MPI_T_ERR_INVALID_ITEM);
    INT(MPI_T_ERR_INVALID_HANDLE);
    INT(MPI_T_ERR_OUT_OF_HANDLES);
    INT(MPI_T_ERR_OUT_OF_SESSIONS);
    INT(MPI_T_ERR_INVALID_SESSION);
    INT(MPI_T_ERR_CVAR_SET_NOT_NOW);
    INT(MPI_T_ERR_CVAR_SET_NEVER);
    INT(MPI_T_ERR_PVAR_NO_STARTSTOP);
    INT(MPI_T_ERR_PVAR_NO_WRITE);
    INT(MPI_T_ERR_PVAR_NO_ATOMIC);
    INT(MPI_T_ERR_INVALID_NAME);
    INT(MPI_T_ERR_INVALID);
    INT(MPI_ERR_SESSION);
    INT(MPI_ERR_PROC_ABORTED);
    INT(MPI_ERR_VALUE_TOO_LARGE);
    INT(MPI_T_ERR_NOT_SUPPORTED);
    INT(MPIX_ERR_PROC_FAILED);
    INT(MPIX_ERR_PROC_FAILED_PENDING);
    INT(MPIX_ERR_REVOKED);
    INT(MPIX_ERR_EAGAIN);
    INT(MPIX_ERR_NOREQ);
    INT(MPI_ERR_LASTCODE);
    INT(MPI_TAG_UB);
    INT(MPI_HOST);
    INT(MPI_IO);
    INT(MPI_WTIME_IS_GLOBAL);
    INT(MPI_UNIVERSE_SIZE);
    INT(MPI_LASTUSEDCODE);
    INT(MPI_APPNUM);
    INT(MPI_WIN_BASE);
    INT(MPI_WIN_SIZE);
    INT(MPI_WIN_DISP_UNIT);
    INT(MPI_WIN_CREATE_FLAVOR);
    INT(MPI_WIN_MODEL);
    INT(MPI_MAX_PROCESSOR_NAME);
    INT(MPI_MAX_LIBRARY_VERSION_STRING);
    INT(MPI_MAX_ERROR_STRING);
    INT(MPI_MAX_PORT_NAME);
    INT(MPI_MAX_OBJECT_NAME);
    INT(MPI_MAX_INFO_KEY);
    INT(MPI_MAX_INFO_VAL);
    INT(MPI_MAX_DATAREP_STRING);
    INT(MPI_MAX_STRINGTAG_LEN);
    INT(MPI_MAX_PSET_NAME_LEN);
    INT(QMPI_MAX_TOOL_NAME_LENGTH);
    INT(MPI_ATTR_DELETE_T);
    INT(MPI_SEND_T);
    INT(MPI_TOPO_TEST_T);
    INT(MPIX_COMM_REVOKE_T);
    INT(MPI_LAST_FUNC_T);
    printf("sizeof(QMPI_Context) %zu\n", sizeof(QMPI_Context));
    INT(MPI_BSEND_OVERHEAD);
    INT(MPI_THREAD_SINGLE);
    INT(MPI_THREAD_FUNNELED);
    INT(MPI_THREAD_SERIALIZED);
    INT(MPI_THREAD_MULTIPLE);
    INT(MPI_IDENT);
    INT(MPI_CONGRUENT);
    INT(MPI_SIMILAR);
    INT(MPI_UNEQUAL);
    INT(MPI_GRAPH);
    INT(MPI_CART);
    INT(MPI_DIST_GRAPH);
    INT(MPI_COMBINER_NAMED);
    INT(MPI_COMBINER_DUP);
    INT(MPI_COMBINER_CONTIGUOUS);
    INT(MPI_COMBINER_VECTOR);
    INT(MPI_COMBINER_HVECTOR_INTEGER);
    INT(MPI_COMBINER_HVECTOR);
    INT(MPI_COMBINER_INDEXED);
    INT(MPI_COMBINER_HINDEXED_INTEGER);
    INT(MPI_COMBINER_HINDEXED);
    INT(MPI_COMBINER_INDEXED_BLOCK);
    INT(MPI_COMBINER_STRUCT_INTEGER);
    INT(MPI_COMBINER_STRUCT);
    INT(MPI_COMBINER_SUBARRAY);
    INT(MPI_COMBINER_DARRAY);
    INT(MPI_COMBINER_F90_REAL);
    INT(MPI_COMBINER_F90_COMPLEX);
    INT(MPI_COMBINER_F90_INTEGER);
    INT(MPI_COMBINER_RESIZED);
    INT(MPI_COMBINER_HINDEXED_BLOCK);
    INT(MPI_ORDER_C);
    INT(MPI_ORDER_FORTRAN);
    INT(MPI_DISTRIBUTE_BLOCK);
    INT(MPI_DISTRIBUTE_CYCLIC);
    INT(MPI_DISTRIBUTE_NONE);
    INT(MPI_DISTRIBUTE_DFLT_DARG);
    INT(MPI_COMM_TYPE_SHARED);
    INT(MPI_COMM_TYPE_HW_GUIDED);
    INT(MPI_COMM_TYPE_HW_UNGUIDED);
    INT(MPI_MODE_NOCHECK);
    INT(MPI_MODE_NOSTORE);
    INT(MPI_MODE_NOPUT);
    INT(MPI_MODE_NOPRECEDE);
    INT(MPI_MODE_NOSUCCEED);
    INT(MPI_LOCK_EXCLUSIVE);
    INT(MPI_LOCK_SHARED);
    INT(MPI_WIN_FLAVOR_CREATE);
    INT(MPI_WIN_FLAVOR_ALLOCATE);
    INT(MPI_WIN_FLAVOR_DYNAMIC);
    INT(MPI_WIN_FLAVOR_SHARED);
    INT(MPI_WIN_SEPARATE);
    INT(MPI_WIN_UNIFIED);
    INT(MPI_MODE_CREATE);
    INT(MPI_MODE_RDONLY);
    INT(MPI_MODE_WRONLY);
    INT(MPI_MODE_RDWR);
    INT(MPI_MODE_DELETE_ON_CLOSE);
    INT(MPI_MODE_UNIQUE_OPEN);
    INT(MPI_MODE_EXCL);
    INT(MPI_MODE_APPEND);
    INT(MPI_MODE_SEQUENTIAL);
    INT(MPI_SEEK_SET);
    INT(MPI_SEEK_CUR);
    INT(MPI_SEEK_END);
    INT(MPI_DISPLACEMENT_CURRENT);
    INT(MPI_T_VERBOSITY_INVALID);
    INT(MPI_T_VERBOSITY_USER_BASIC);
    INT(MPI_T_VERBOSITY_USER_DETAIL);
    INT(MPI_T_VERBOSITY_USER_ALL);
    INT(MPI_T_VERBOSITY_TUNER_BASIC);
    INT(MPI_T_VERBOSITY_TUNER_DETAIL);
    INT(MPI_T_VERBOSITY_TUNER_ALL);
    INT(MPI_T_VERBOSITY_MPIDEV_BASIC);
    INT(MPI_T_VERBOSITY_MPIDEV_DETAIL);
    INT(MPI_T_VERBOSITY_MPIDEV_ALL);
    INT(MPI_T_BIND_INVALID);
    INT(MPI_T_BIND_NO_OBJECT);
    INT(MPI_T_BIND_MPI_COMM);
    INT(MPI_T_BIND_MPI_DATATYPE);
    INT(MPI_T_BIND_MPI_ERRHANDLER);
    INT(MPI_T_BIND_MPI_FILE);
    INT(MPI_T_BIND_MPI_GROUP);
    INT(MPI_T_BIND_MPI_OP);
    INT(MPI_T_BIND_MPI_REQUEST);
    INT(MPI_T_BIND_MPI_WIN);
    INT(MPI_T_BIND_MPI_MESSAGE);
    INT(MPI_T_BIND_MPI_INFO);
    INT(MPI_T_SCOPE_INVALID);
    INT(MPI_T_SCOPE_CONSTANT);
    INT(MPI_T_SCOPE_READONLY);
    INT(MPI_T_SCOPE_LOCAL);
    INT(MPI_T_SCOPE_GROUP);
    INT(MPI_T_SCOPE_GROUP_EQ);
    INT(MPI_T_SCOPE_ALL);
    INT(MPI_T_SCOPE_ALL_EQ);
    INT(MPI_T_PVAR_CLASS_INVALID);
    INT(MPI_T_PVAR_CLASS_STATE);
    INT(MPI_T_PVAR_CLASS_LEVEL);
    INT(MPI_T_PVAR_CLASS_SIZE);
    INT(MPI_T_PVAR_CLASS_PERCENTAGE);
    INT(MPI_T_PVAR_CLASS_HIGHWATERMARK);
    INT(MPI_T_PVAR_CLASS_LOWWATERMARK);
    INT(MPI_T_PVAR_CLASS_COUNTER);
    INT(MPI_T_PVAR_CLASS_AGGREGATE);
    INT(MPI_T_PVAR_CLASS_TIMER);
    INT(MPI_T_PVAR_CLASS_GENERIC);
    /* ---- Sentinel pointers */
    PTR(MPI_FILE_NULL);
    PTR(MPI_BOTTOM);
    PTR(MPI_IN_PLACE);
    PTR(MPI_STATUS_IGNORE);
    PTR(MPI_STATUSES_IGNORE);
    PTR(MPI_ERRCODES_IGNORE);
    PTR(MPI_ARGV_NULL);
    PTR(MPI_ARGVS_NULL);
    PTR(MPI_T_ENUM_NULL);
    PTR(MPI_T_CVAR_HANDLE_NULL);
    PTR(MPI_T_PVAR_HANDLE_NULL);
    PTR(MPI_T_PVAR_SESSION_NULL);
    /* ---- Callback constants */
    FN(MPI_NULL_COPY_FN, MPI_Copy_function);
    FN(MPI_NULL_DELETE_FN, MPI_Delete_function);
    FN(MPI_DUP_FN, MPI_Copy_function);
    FN(MPI_COMM_NULL_COPY_FN, MPI_Comm_copy_attr_function);
    FN(MPI_COMM_NULL_DELETE_FN, MPI_Comm_delete_attr_function);
    FN(MPI_COMM_DUP_FN, MPI_Comm_copy_attr_function);
    FN(MPI_TYPE_NULL_COPY_FN, MPI_Type_copy_attr_function);
    FN(MPI_TYPE_NULL_DELETE_FN, MPI_Type_delete_attr_function);
    FN(MPI_TYPE_DUP_FN, MPI_Type_copy_attr_function);
    FN(MPI_WIN_NULL_COPY_FN, MPI_Win_copy_attr_function);
    FN(MPI_WIN_NULL_DELETE_FN, MPI_Win_delete_attr_function);
    FN(MPI_WIN_DUP_FN, MPI_Win_copy_attr_function);
    FN(MPI_CONVERSION_FN_NULL, MPI_Datarep_conversion_function);
    FN(MPI_CONVERSION_FN_NULL_C, MPI_Datarep_conversion_function_c);

    /* ---- Integer and handle types */
    TYPE(MPI_Aint);
    TYPE(MPI_Offset);
    TYPE(MPI_Count);
    TYPE(MPI_Fint);
    TYPE(MPI_Comm);
    TYPE(MPI_Group);
    TYPE(MPI_Datatype);
    TYPE(MPI_Op);
    TYPE(MPI_Errhandler);
    TYPE(MPI_Info);
    TYPE(MPI_Win);
    TYPE(MPI_Request);
    TYPE(MPI_Message);
    TYPE(MPI_Session);
    PTR_TO(MPI_File, struct ADIOI_FileD);
    PTR_TO(MPI_T_enum, struct MPIR_T_enum_s);
    PTR_TO(MPI_T_cvar_handle, struct MPIR_T_cvar_handle_s);
    PTR_TO(MPI_T_pvar_handle, struct MPIR_T_pvar_handle_s);
    PTR_TO(MPI_T_pvar_session, struct MPIR_T_pvar_session_s);

    /* ---- Status layouts: 20 bytes, five ints, in this order */
    printf("sizeof(MPI_Status) %zu\n", sizeof(MPI_Status));
    printf("alignof(MPI_Status) %zu\n", _Alignof(MPI_Status));
    printf("struct-tag(MPI_Status) %s\n",
           __builtin_types_compatible_p(MPI_Status, struct MPI_Status) ? "struct MPI_Status" : "other");
    FIELD(MPI_Status, count_lo);
    FIELD(MPI_Status, count_hi_and_cancelled);
    FIELD(MPI_Status, MPI_SOURCE);
    FIELD(MPI_Status, MPI_TAG);
    FIELD(MPI_Status, MPI_ERROR);
    printf("sizeof(MPI_F08_status) %zu\n", sizeof(MPI_F08_status));
    FIELD(MPI_F08_status, count_lo);
    FIELD(MPI_F08_status, count_hi_and_cancelled);
    FIELD(MPI_F08_status, MPI_SOURCE);
    FIELD(MPI_F08_status, MPI_TAG);
    FIELD(MPI_F08_status, MPI_ERROR);

    /* ---- Objects the library exports (named and typed only; never read) */
    OBJ(MPI_UNWEIGHTED, int *const);
    OBJ(MPI_WEIGHTS_EMPTY, int *const);
    OBJ(MPI_F_STATUS_IGNORE, MPI_Fint *);
    OBJ(MPI_F_STATUSES_IGNORE, MPI_Fint *);
    OBJ(MPI_F08_STATUS_IGNORE, MPI_F08_status *);
    OBJ(MPI_F08_STATUSES_IGNORE, MPI_F08_status *);
    OBJ(MPI_T_PVAR_ALL_HANDLES, struct MPIR_T_pvar_handle_s *const);

    /* ---- Callback types */
    CALLBACK(MPI_User_function, void(void *, void *, int *, int *));
    CALLBACK(MPI_Comm_copy_attr_function, int(int, int, void *, void *, void *, int *));
    CALLBACK(MPI_Comm_delete_attr_function, int(int, int, void *, void *));
    CALLBACK(MPI_Type_copy_attr_function, int(int, int, void *, void *, void *, int *));
    CALLBACK(MPI_Type_delete_attr_function, int(int, int, void *, void *));
    CALLBACK(MPI_Win_copy_attr_function, int(int, int, void *, void *, void *, int *));
    CALLBACK(MPI_Win_delete_attr_function, int(int, int, void *, void *));
    CALLBACK(MPI_Copy_function, int(int, int, void *, void *, void *, int *));
    CALLBACK(MPI_Delete_function, int(int, int, void *, void *));
    CALLBACK(MPI_Comm_errhandler_function, void(int *, int *, ...));
    CALLBACK(MPI_Win_errhandler_function, void(int *, int *, ...));
    CALLBACK(MPI_File_errhandler_function, void(struct ADIOI_FileD **, int *, ...));
    CALLBACK(MPI_Session_errhandler_function, void(int *, int *, ...));
    CALLBACK(MPI_Handler_function, void(int *, int *, ...));
    CALLBACK(MPI_Comm_errhandler_fn, void(int *, int *, ...));
    CALLBACK(MPI_Win_errhandler_fn, void(int *, int *, ...));
    CALLBACK(MPI_File_errhandler_fn, void(struct ADIOI_FileD **, int *, ...));
    CALLBACK(MPI_Session_errhandler_fn, void(int *, int *, ...));
    CALLBACK(MPI_Grequest_query_function, int(void *, struct MPI_Status *));
    CALLBACK(MPI_Grequest_free_function, int(void *));
    CALLBACK(MPI_Grequest_cancel_function, int(void *, int));
    return 0;
}
