/* The Fortran 77 subroutines whose Fortran form is not the C call by reference (gen.py lists
 * them in SPECIAL): MPI_Init without argc/argv, functions with a value, argv arrays of
 * CHARACTER, and attribute values, which Fortran sees as integers where C sees pointers. */
#include <string.h>
#include "f77_support.h"

void pmpi_init_(MPI_Fint *ierr) { *ierr = MPI_Init(NULL, NULL); }
BBF_ALIASES(pmpi_init_, pmpi_init__, pmpi_init, PMPI_INIT, mpi_init_, mpi_init__, mpi_init, MPI_INIT)

void pmpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    *ierr = MPI_Init_thread(NULL, NULL, *required, provided);
}
BBF_ALIASES(pmpi_init_thread_, pmpi_init_thread__, pmpi_init_thread, PMPI_INIT_THREAD,
            mpi_init_thread_, mpi_init_thread__, mpi_init_thread, MPI_INIT_THREAD)

void pmpi_info_create_env_(MPI_Fint *info, MPI_Fint *ierr)
{
    *ierr = MPI_Info_create_env(0, NULL, info);
}
BBF_ALIASES(pmpi_info_create_env_, pmpi_info_create_env__, pmpi_info_create_env,
            PMPI_INFO_CREATE_ENV, mpi_info_create_env_, mpi_info_create_env__,
            mpi_info_create_env, MPI_INFO_CREATE_ENV)

double pmpi_wtime_(void) { return MPI_Wtime(); }
BBF_ALIASES(pmpi_wtime_, pmpi_wtime__, pmpi_wtime, PMPI_WTIME, mpi_wtime_, mpi_wtime__, mpi_wtime, MPI_WTIME)
double pmpi_wtick_(void) { return MPI_Wtick(); }
BBF_ALIASES(pmpi_wtick_, pmpi_wtick__, pmpi_wtick, PMPI_WTICK, mpi_wtick_, mpi_wtick__, mpi_wtick, MPI_WTICK)

MPI_Aint pmpi_aint_add_(MPI_Aint *base, MPI_Aint *disp) { return MPI_Aint_add(*base, *disp); }
BBF_ALIASES(pmpi_aint_add_, pmpi_aint_add__, pmpi_aint_add, PMPI_AINT_ADD, mpi_aint_add_,
            mpi_aint_add__, mpi_aint_add, MPI_AINT_ADD)
MPI_Aint pmpi_aint_diff_(MPI_Aint *a, MPI_Aint *b) { return MPI_Aint_diff(*a, *b); }
BBF_ALIASES(pmpi_aint_diff_, pmpi_aint_diff__, pmpi_aint_diff, PMPI_AINT_DIFF, mpi_aint_diff_,
            mpi_aint_diff__, mpi_aint_diff, MPI_AINT_DIFF)

void pmpi_pcontrol_(MPI_Fint *level, MPI_Fint *ierr) { *ierr = MPI_Pcontrol(*level); }
BBF_ALIASES(pmpi_pcontrol_, pmpi_pcontrol__, pmpi_pcontrol, PMPI_PCONTROL, mpi_pcontrol_,
            mpi_pcontrol__, mpi_pcontrol, MPI_PCONTROL)

/* A Fortran argv: CHARACTER*(len) entries from `first`, `stride` entries apart, ended by the
 * first blank one; NULL-terminated C copies (free with free_argv). */
static char **argv_in(const char *first, size_t stride, size_t len)
{
    size_t n = 0;
    for (;; n++) {
        const char *e = first + n * stride * len;
        size_t k = len;
        while (k > 0 && e[k - 1] == ' ') k--;
        if (k == 0) break;
    }
    char **argv = calloc(n + 1, sizeof *argv);
    if (argv == NULL) return NULL;
    for (size_t i = 0; i < n; i++) argv[i] = bbf_string_in(first + i * stride * len, len);
    return argv;
}
static void free_argv(char **argv)
{
    for (size_t i = 0; argv != NULL && argv[i] != NULL; i++) free(argv[i]);
    free(argv);
}

void pmpi_comm_spawn_(char *command, char *argv, MPI_Fint *maxprocs, MPI_Fint *info,
                      MPI_Fint *root, MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *errcodes,
                      MPI_Fint *ierr, size_t command_len, size_t argv_len)
{
    char *c_command = bbf_string_in(command, command_len);
    char **c_argv = argv == mpiprivc_.argv_null ? MPI_ARGV_NULL : argv_in(argv, 1, argv_len);
    *ierr = MPI_Comm_spawn(c_command, c_argv, *maxprocs, *info, *root, *comm, intercomm,
                           bbf_errcodes(errcodes));
    free(c_command);
    if (c_argv != MPI_ARGV_NULL) free_argv(c_argv);
}
BBF_ALIASES(pmpi_comm_spawn_, pmpi_comm_spawn__, pmpi_comm_spawn, PMPI_COMM_SPAWN,
            mpi_comm_spawn_, mpi_comm_spawn__, mpi_comm_spawn, MPI_COMM_SPAWN)

/* array_of_argv(count, *): argument j of command i is element (i, j), column-major. */
void pmpi_comm_spawn_multiple_(MPI_Fint *count, char *commands, char *argvs, MPI_Fint *maxprocs,
                               MPI_Fint *infos, MPI_Fint *root, MPI_Fint *comm,
                               MPI_Fint *intercomm, MPI_Fint *errcodes, MPI_Fint *ierr,
                               size_t commands_len, size_t argvs_len)
{
    int n = *count > 0 ? *count : 0;
    char **c_commands = calloc((size_t)n + 1, sizeof *c_commands);
    char ***c_argvs = NULL;
    if (argvs != mpiprivc_.argvs_null) c_argvs = calloc((size_t)n + 1, sizeof *c_argvs);
    for (int i = 0; i < n; i++) {
        c_commands[i] = bbf_string_in(commands + (size_t)i * commands_len, commands_len);
        if (c_argvs != NULL)
            c_argvs[i] = argv_in(argvs + (size_t)i * argvs_len, (size_t)n, argvs_len);
    }
    *ierr = MPI_Comm_spawn_multiple(*count, c_commands, c_argvs ? c_argvs : MPI_ARGVS_NULL,
                                    maxprocs, infos, *root, *comm, intercomm,
                                    bbf_errcodes(errcodes));
    for (int i = 0; i < n; i++) {
        free(c_commands[i]);
        if (c_argvs != NULL) free_argv(c_argvs[i]);
    }
    free(c_commands);
    free(c_argvs);
}
BBF_ALIASES(pmpi_comm_spawn_multiple_, pmpi_comm_spawn_multiple__, pmpi_comm_spawn_multiple,
            PMPI_COMM_SPAWN_MULTIPLE, mpi_comm_spawn_multiple_, mpi_comm_spawn_multiple__,
            mpi_comm_spawn_multiple, MPI_COMM_SPAWN_MULTIPLE)

/* Attribute values. An attribute set from Fortran is stored as its integer value (C's void *
 * holds it). The predefined keyvals (built-in handles, MPICH's kind 01 in bits 31..30) have a
 * Fortran twin one above the C value (mpif.h's MPI_TAG_UB is C's MPI_TAG_UB + 1, as in MPICH),
 * whose attribute C gives as a pointer to the value, except MPI_WIN_BASE: the address itself. */
static int is_builtin(int keyval) { return ((unsigned)keyval & 0xc0000000u) == 0x40000000u; }
static int c_keyval(int keyval)
{
    return is_builtin(keyval) && (keyval & 1) == 0 ? keyval - 1 : keyval;
}
static MPI_Aint attr_value(int keyval, void *v)
{
    if (!is_builtin(keyval) || keyval == MPI_WIN_BASE) return (MPI_Aint)v;
    if (keyval == MPI_WIN_SIZE) return *(MPI_Aint *)v;
    return *(int *)v;
}

#define BBF_GET_ATTR(fname, FNAME, cfun, vtype)                                              \
    void p##fname##_(MPI_Fint *obj, MPI_Fint *keyval, vtype *value, MPI_Fint *flag,           \
                     MPI_Fint *ierr)                                                          \
    {                                                                                         \
        void *v = NULL;                                                                       \
        int k = c_keyval(*keyval);                                                            \
        *ierr = cfun(*obj, k, &v, flag);                                                      \
        if (*ierr == MPI_SUCCESS && *flag) *value = (vtype)attr_value(k, v);                  \
    }                                                                                         \
    BBF_ALIASES(p##fname##_, p##fname##__, p##fname, P##FNAME, fname##_, fname##__, fname, FNAME)
#define BBF_SET_ATTR(fname, FNAME, cfun, vtype)                                              \
    void p##fname##_(MPI_Fint *obj, MPI_Fint *keyval, vtype *value, MPI_Fint *ierr)           \
    {                                                                                         \
        *ierr = cfun(*obj, *keyval, (void *)(MPI_Aint)*value);                                \
    }                                                                                         \
    BBF_ALIASES(p##fname##_, p##fname##__, p##fname, P##FNAME, fname##_, fname##__, fname, FNAME)

BBF_GET_ATTR(mpi_attr_get, MPI_ATTR_GET, MPI_Attr_get, MPI_Fint)
BBF_GET_ATTR(mpi_comm_get_attr, MPI_COMM_GET_ATTR, MPI_Comm_get_attr, MPI_Aint)
BBF_GET_ATTR(mpi_type_get_attr, MPI_TYPE_GET_ATTR, MPI_Type_get_attr, MPI_Aint)
BBF_GET_ATTR(mpi_win_get_attr, MPI_WIN_GET_ATTR, MPI_Win_get_attr, MPI_Aint)
BBF_SET_ATTR(mpi_attr_put, MPI_ATTR_PUT, MPI_Attr_put, MPI_Fint)
BBF_SET_ATTR(mpi_comm_set_attr, MPI_COMM_SET_ATTR, MPI_Comm_set_attr, MPI_Aint)
BBF_SET_ATTR(mpi_type_set_attr, MPI_TYPE_SET_ATTR, MPI_Type_set_attr, MPI_Aint)
BBF_SET_ATTR(mpi_win_set_attr, MPI_WIN_SET_ATTR, MPI_Win_set_attr, MPI_Aint)
