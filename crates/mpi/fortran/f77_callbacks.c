/* Callbacks with Fortran conventions. A Fortran copy/delete function, generalized-request
 * function or data-representation function takes every argument by reference and integers where
 * C has pointers, so the C library is given a trampoline and a record holding the Fortran
 * function and its extra_state. Also the predefined callbacks mpif.h declares EXTERNAL
 * (MPI_NULL_COPY_FN, MPI_COMM_DUP_FN, ...), which are Fortran-convention functions. User
 * reduction functions and communicator/window/session error handlers have the same shape in
 * both languages and go to C unchanged (f77_wrappers.c). */
#include <stdio.h>
#include "f77_support.h"
/* mpi.h maps these Fortran names to C pointers; here they are the Fortran functions. */
#undef MPI_NULL_COPY_FN
#undef MPI_NULL_DELETE_FN
#undef MPI_DUP_FN
#undef MPI_COMM_NULL_COPY_FN
#undef MPI_COMM_NULL_DELETE_FN
#undef MPI_COMM_DUP_FN
#undef MPI_TYPE_NULL_COPY_FN
#undef MPI_TYPE_NULL_DELETE_FN
#undef MPI_TYPE_DUP_FN
#undef MPI_WIN_NULL_COPY_FN
#undef MPI_WIN_NULL_DELETE_FN
#undef MPI_WIN_DUP_FN
#undef MPI_CONVERSION_FN_NULL

/* ---- attribute keyvals ---- */
typedef void (*f_copy_int)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                           MPI_Fint *, MPI_Fint *);
typedef void (*f_copy_aint)(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Aint *, MPI_Aint *,
                            MPI_Fint *, MPI_Fint *);
typedef void (*f_delete_int)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*f_delete_aint)(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Aint *, MPI_Fint *);

/* One per keyval created from Fortran; lives as long as the program (the C library may call
 * the delete function after MPI_Comm_free_keyval, for attributes still attached). It keeps
 * extra_state's value at creation, as the standard says; MPICH keeps the variable's address
 * and reads it at each call, so a program that changes the variable later sees the change. */
struct keyval_record {
    int old_style; /* MPI_Keyval_create: INTEGER values and extra_state */
    void (*copy)(void);
    void (*delete)(void);
    MPI_Aint extra;
};

/* MPI_Comm, MPI_Datatype and MPI_Win are all int, so one trampoline fits the three. */
static int copy_trampoline(int old, int keyval, void *extra, void *in, void *out, int *flag)
{
    struct keyval_record *k = extra;
    MPI_Fint f_old = old, f_keyval = keyval, f_flag = 0, ierr = MPI_SUCCESS;
    if (k->old_style) {
        MPI_Fint f_extra = (MPI_Fint)k->extra, f_in = (MPI_Fint)(MPI_Aint)in, f_out = 0;
        ((f_copy_int)k->copy)(&f_old, &f_keyval, &f_extra, &f_in, &f_out, &f_flag, &ierr);
        *(void **)out = (void *)(MPI_Aint)f_out;
    } else {
        MPI_Aint f_in = (MPI_Aint)in, f_out = 0;
        ((f_copy_aint)k->copy)(&f_old, &f_keyval, &k->extra, &f_in, &f_out, &f_flag, &ierr);
        *(void **)out = (void *)f_out;
    }
    *flag = f_flag != 0;
    return ierr;
}

static int delete_trampoline(int obj, int keyval, void *value, void *extra)
{
    struct keyval_record *k = extra;
    MPI_Fint f_obj = obj, f_keyval = keyval, ierr = MPI_SUCCESS;
    if (k->old_style) {
        MPI_Fint f_value = (MPI_Fint)(MPI_Aint)value, f_extra = (MPI_Fint)k->extra;
        ((f_delete_int)k->delete)(&f_obj, &f_keyval, &f_value, &f_extra, &ierr);
    } else {
        MPI_Aint f_value = (MPI_Aint)value;
        ((f_delete_aint)k->delete)(&f_obj, &f_keyval, &f_value, &k->extra, &ierr);
    }
    return ierr;
}

static struct keyval_record *keyval_record(int old_style, void (*copy)(void),
                                           void (*delete)(void), MPI_Aint extra)
{
    struct keyval_record *k = malloc(sizeof *k);
    if (k != NULL) *k = (struct keyval_record){old_style, copy, delete, extra};
    return k;
}

#define BBF_CREATE_KEYVAL(fname, FNAME, cfun, xtype, old)                                    \
    void p##fname##_(void (*copy)(void), void (*delete)(void), MPI_Fint *keyval,             \
                     xtype *extra, MPI_Fint *ierr)                                           \
    {                                                                                        \
        struct keyval_record *k = keyval_record(old, copy, delete, (MPI_Aint)*extra);        \
        *ierr = k == NULL ? MPI_ERR_NO_MEM                                                   \
                          : cfun(copy_trampoline, delete_trampoline, keyval, k);             \
    }                                                                                        \
    BBF_ALIASES(p##fname##_, p##fname##__, p##fname, P##FNAME, fname##_, fname##__, fname, FNAME)

BBF_CREATE_KEYVAL(mpi_keyval_create, MPI_KEYVAL_CREATE, MPI_Keyval_create, MPI_Fint, 1)
BBF_CREATE_KEYVAL(mpi_comm_create_keyval, MPI_COMM_CREATE_KEYVAL, MPI_Comm_create_keyval, MPI_Aint, 0)
BBF_CREATE_KEYVAL(mpi_type_create_keyval, MPI_TYPE_CREATE_KEYVAL, MPI_Type_create_keyval, MPI_Aint, 0)
BBF_CREATE_KEYVAL(mpi_win_create_keyval, MPI_WIN_CREATE_KEYVAL, MPI_Win_create_keyval, MPI_Aint, 0)

/* The predefined callbacks, in Fortran form: the INTEGER ones for MPI_Keyval_create, the
 * INTEGER(KIND=MPI_ADDRESS_KIND) ones for the comm/type/win keyvals. */
#define BBF_CALLBACK(fname, FNAME, params, body)                                             \
    void p##fname##_ params body                                                              \
    BBF_ALIASES(p##fname##_, p##fname##__, p##fname, P##FNAME, fname##_, fname##__, fname, FNAME)
#define BBF_COPY_FNS(vtype, null_name, NULL_NAME, dup_name, DUP_NAME)                        \
    BBF_CALLBACK(null_name, NULL_NAME,                                                        \
                 (MPI_Fint *o, MPI_Fint *k, vtype *x, vtype *in, vtype *out, MPI_Fint *flag,  \
                  MPI_Fint *ierr),                                                            \
                 { (void)o; (void)k; (void)x; (void)in; (void)out; *flag = 0; *ierr = MPI_SUCCESS; }) \
    BBF_CALLBACK(dup_name, DUP_NAME,                                                          \
                 (MPI_Fint *o, MPI_Fint *k, vtype *x, vtype *in, vtype *out, MPI_Fint *flag,  \
                  MPI_Fint *ierr),                                                            \
                 { (void)o; (void)k; (void)x; *out = *in; *flag = 1; *ierr = MPI_SUCCESS; })
#define BBF_DELETE_FN(vtype, name, NAME)                                                     \
    BBF_CALLBACK(name, NAME, (MPI_Fint *o, MPI_Fint *k, vtype *v, vtype *x, MPI_Fint *ierr), \
                 { (void)o; (void)k; (void)v; (void)x; *ierr = MPI_SUCCESS; })

BBF_COPY_FNS(MPI_Fint, mpi_null_copy_fn, MPI_NULL_COPY_FN, mpi_dup_fn, MPI_DUP_FN)
BBF_COPY_FNS(MPI_Aint, mpi_comm_null_copy_fn, MPI_COMM_NULL_COPY_FN, mpi_comm_dup_fn, MPI_COMM_DUP_FN)
BBF_COPY_FNS(MPI_Aint, mpi_type_null_copy_fn, MPI_TYPE_NULL_COPY_FN, mpi_type_dup_fn, MPI_TYPE_DUP_FN)
BBF_COPY_FNS(MPI_Aint, mpi_win_null_copy_fn, MPI_WIN_NULL_COPY_FN, mpi_win_dup_fn, MPI_WIN_DUP_FN)
BBF_DELETE_FN(MPI_Fint, mpi_null_delete_fn, MPI_NULL_DELETE_FN)
BBF_DELETE_FN(MPI_Aint, mpi_comm_null_delete_fn, MPI_COMM_NULL_DELETE_FN)
BBF_DELETE_FN(MPI_Aint, mpi_type_null_delete_fn, MPI_TYPE_NULL_DELETE_FN)
BBF_DELETE_FN(MPI_Aint, mpi_win_null_delete_fn, MPI_WIN_NULL_DELETE_FN)
/* mpi_f08's callbacks of the same names (MPICH's module mpi_f08_callbacks) have the same
 * arguments as the INTEGER(KIND=MPI_ADDRESS_KIND) ones above. */
BBF_ALIAS(pmpi_comm_null_copy_fn_, __mpi_f08_callbacks_MOD_mpi_comm_null_copy_fn)
BBF_ALIAS(pmpi_comm_dup_fn_, __mpi_f08_callbacks_MOD_mpi_comm_dup_fn)
BBF_ALIAS(pmpi_comm_null_delete_fn_, __mpi_f08_callbacks_MOD_mpi_comm_null_delete_fn)
BBF_ALIAS(pmpi_type_null_copy_fn_, __mpi_f08_callbacks_MOD_mpi_type_null_copy_fn)
BBF_ALIAS(pmpi_type_dup_fn_, __mpi_f08_callbacks_MOD_mpi_type_dup_fn)
BBF_ALIAS(pmpi_type_null_delete_fn_, __mpi_f08_callbacks_MOD_mpi_type_null_delete_fn)
BBF_ALIAS(pmpi_win_null_copy_fn_, __mpi_f08_callbacks_MOD_mpi_win_null_copy_fn)
BBF_ALIAS(pmpi_win_dup_fn_, __mpi_f08_callbacks_MOD_mpi_win_dup_fn)
BBF_ALIAS(pmpi_win_null_delete_fn_, __mpi_f08_callbacks_MOD_mpi_win_null_delete_fn)
/* MPI_F_SYNC_REG only has to make the compiler treat the buffer as touched: the call does. */
BBF_CALLBACK(mpi_f_sync_reg, MPI_F_SYNC_REG, (void *buf), { (void)buf; })
BBF_CALLBACK(mpi_conversion_fn_null, MPI_CONVERSION_FN_NULL,
             (void *u, MPI_Fint *t, MPI_Fint *c, void *f, MPI_Offset *p, MPI_Aint *x,
              MPI_Fint *ierr),
             { (void)u; (void)t; (void)c; (void)f; (void)p; (void)x; *ierr = MPI_SUCCESS; })

/* ---- generalized requests ---- */
struct grequest_record {
    void (*query)(MPI_Aint *, MPI_Fint *, MPI_Fint *);
    void (*free)(MPI_Aint *, MPI_Fint *);
    void (*cancel)(MPI_Aint *, MPI_Fint *, MPI_Fint *);
    MPI_Aint extra;
};
static int grequest_query(void *extra, MPI_Status *status)
{
    struct grequest_record *g = extra;
    MPI_Fint ierr = MPI_SUCCESS;
    g->query(&g->extra, (MPI_Fint *)status, &ierr);
    return ierr;
}
static int grequest_free(void *extra)
{
    struct grequest_record *g = extra;
    MPI_Fint ierr = MPI_SUCCESS;
    g->free(&g->extra, &ierr);
    free(g); /* the free function is the last call MPI makes for the request */
    return ierr;
}
static int grequest_cancel(void *extra, int complete)
{
    struct grequest_record *g = extra;
    MPI_Fint f_complete = complete != 0, ierr = MPI_SUCCESS;
    g->cancel(&g->extra, &f_complete, &ierr);
    return ierr;
}
void pmpi_grequest_start_(void (*query)(MPI_Aint *, MPI_Fint *, MPI_Fint *),
                          void (*free_fn)(MPI_Aint *, MPI_Fint *),
                          void (*cancel)(MPI_Aint *, MPI_Fint *, MPI_Fint *), MPI_Aint *extra,
                          MPI_Fint *request, MPI_Fint *ierr)
{
    struct grequest_record *g = malloc(sizeof *g);
    if (g == NULL) {
        *ierr = MPI_ERR_NO_MEM;
        return;
    }
    *g = (struct grequest_record){query, free_fn, cancel, *extra};
    *ierr = MPI_Grequest_start(grequest_query, grequest_free, grequest_cancel, g, request);
    if (*ierr != MPI_SUCCESS) free(g);
}
BBF_ALIASES(pmpi_grequest_start_, pmpi_grequest_start__, pmpi_grequest_start,
            PMPI_GREQUEST_START, mpi_grequest_start_, mpi_grequest_start__, mpi_grequest_start,
            MPI_GREQUEST_START)

/* ---- data representations ---- */
typedef void (*f_conversion)(void *, MPI_Fint *, MPI_Fint *, void *, MPI_Offset *, MPI_Aint *,
                             MPI_Fint *);
typedef void (*f_extent)(MPI_Fint *, MPI_Aint *, MPI_Aint *, MPI_Fint *);
struct datarep_record {
    f_conversion read, write;
    f_extent extent;
    MPI_Aint extra;
};
static int call_conversion(f_conversion fn, void *user, MPI_Datatype type, int count, void *file,
                           MPI_Offset position, struct datarep_record *d)
{
    MPI_Fint f_type = type, f_count = count, ierr = MPI_SUCCESS;
    fn(user, &f_type, &f_count, file, &position, &d->extra, &ierr);
    return ierr;
}
static int datarep_read(void *u, MPI_Datatype t, int c, void *f, MPI_Offset p, void *x)
{
    return call_conversion(((struct datarep_record *)x)->read, u, t, c, f, p, x);
}
static int datarep_write(void *u, MPI_Datatype t, int c, void *f, MPI_Offset p, void *x)
{
    return call_conversion(((struct datarep_record *)x)->write, u, t, c, f, p, x);
}
static int datarep_extent(MPI_Datatype type, MPI_Aint *extent, void *x)
{
    struct datarep_record *d = x;
    MPI_Fint f_type = type, ierr = MPI_SUCCESS;
    d->extent(&f_type, extent, &d->extra, &ierr);
    return ierr;
}
void pmpi_register_datarep_(char *datarep, f_conversion read, f_conversion write,
                            f_extent extent, MPI_Aint *extra, MPI_Fint *ierr, size_t datarep_len)
{
    struct datarep_record *d = malloc(sizeof *d);
    char *c_datarep = bbf_string_in(datarep, datarep_len);
    if (d == NULL || c_datarep == NULL) {
        free(d);
        free(c_datarep);
        *ierr = MPI_ERR_NO_MEM;
        return;
    }
    *d = (struct datarep_record){read, write, extent, *extra};
    f_conversion none = (f_conversion)pmpi_conversion_fn_null_;
    *ierr = MPI_Register_datarep(c_datarep, read == none ? NULL : datarep_read,
                                 write == none ? NULL : datarep_write, datarep_extent, d);
    free(c_datarep);
    if (*ierr != MPI_SUCCESS) free(d); /* else kept: the representation lives until MPI ends */
}
BBF_ALIAS(pmpi_conversion_fn_null_, __mpi_f08_callbacks_MOD_mpi_conversion_fn_null)
BBF_ALIAS(pmpi_conversion_fn_null_, __mpi_f08_callbacks_MOD_mpi_conversion_fn_null_c)
BBF_ALIASES(pmpi_register_datarep_, pmpi_register_datarep__, pmpi_register_datarep,
            PMPI_REGISTER_DATAREP, mpi_register_datarep_, mpi_register_datarep__,
            mpi_register_datarep, MPI_REGISTER_DATAREP)

/* ---- file error handlers ---- */
/* C calls a file error handler with an MPI_File (a pointer) and no extra state, so each
 * handler created from Fortran gets one of a fixed set of slots, whose trampoline knows the
 * Fortran function and passes the file's integer handle. Slots are taken, never given back
 * (an errhandler may outlive MPI_Errhandler_free on the files using it); creating handlers
 * from several threads at once is not safe yet. */
#define FILE_HANDLER_SLOTS 16
typedef void (*f_file_handler)(MPI_Fint *, MPI_Fint *);
static f_file_handler file_handlers[FILE_HANDLER_SLOTS];
#define FILE_TRAMPOLINE(i)                                                                   \
    static void file_trampoline_##i(MPI_File *fh, int *code, ...)                            \
    {                                                                                        \
        MPI_Fint f_fh = MPI_File_c2f(*fh), f_code = *code;                                   \
        file_handlers[i](&f_fh, &f_code);                                                    \
    }
FILE_TRAMPOLINE(0) FILE_TRAMPOLINE(1) FILE_TRAMPOLINE(2) FILE_TRAMPOLINE(3)
FILE_TRAMPOLINE(4) FILE_TRAMPOLINE(5) FILE_TRAMPOLINE(6) FILE_TRAMPOLINE(7)
FILE_TRAMPOLINE(8) FILE_TRAMPOLINE(9) FILE_TRAMPOLINE(10) FILE_TRAMPOLINE(11)
FILE_TRAMPOLINE(12) FILE_TRAMPOLINE(13) FILE_TRAMPOLINE(14) FILE_TRAMPOLINE(15)
static MPI_File_errhandler_function *const file_trampolines[FILE_HANDLER_SLOTS] = {
    file_trampoline_0,  file_trampoline_1,  file_trampoline_2,  file_trampoline_3,
    file_trampoline_4,  file_trampoline_5,  file_trampoline_6,  file_trampoline_7,
    file_trampoline_8,  file_trampoline_9,  file_trampoline_10, file_trampoline_11,
    file_trampoline_12, file_trampoline_13, file_trampoline_14, file_trampoline_15};
void pmpi_file_create_errhandler_(f_file_handler fn, MPI_Fint *errhandler, MPI_Fint *ierr)
{
    int slot = -1;
    for (int i = 0; i < FILE_HANDLER_SLOTS; i++) {
        if (file_handlers[i] == fn || file_handlers[i] == NULL) {
            slot = i;
            break;
        }
    }
    if (slot < 0) {
        fprintf(stderr, "MPI_File_create_errhandler (Fortran): more than %d distinct handler "
                        "functions\n", FILE_HANDLER_SLOTS);
        *ierr = MPI_ERR_OTHER;
        return;
    }
    file_handlers[slot] = fn;
    *ierr = MPI_File_create_errhandler(file_trampolines[slot], errhandler);
}
BBF_ALIASES(pmpi_file_create_errhandler_, pmpi_file_create_errhandler__,
            pmpi_file_create_errhandler, PMPI_FILE_CREATE_ERRHANDLER, mpi_file_create_errhandler_,
            mpi_file_create_errhandler__, mpi_file_create_errhandler, MPI_FILE_CREATE_ERRHANDLER)
