/* The mpi_f08 entries of the subroutines written by hand for F77 (gen.py's SPECIAL): each
 * calls the F77 one, mapping mpi_f08's sentinels to mpif.h's and filling the optional ierror.
 * Their callbacks (copy/delete, generalized request, datarep, file error handler) have the
 * same shape in mpi_f08 as in F77 with INTEGER(KIND=MPI_ADDRESS_KIND) values. */
#include "f08_support.h"

typedef void (*bbf_fn)(void);
void pmpi_info_create_env_(MPI_Fint *, MPI_Fint *);
void pmpi_pcontrol_(MPI_Fint *, MPI_Fint *);
void pmpi_comm_get_attr_(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Fint *, MPI_Fint *);
void pmpi_type_get_attr_(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Fint *, MPI_Fint *);
void pmpi_win_get_attr_(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Fint *, MPI_Fint *);
void pmpi_comm_set_attr_(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Fint *);
void pmpi_type_set_attr_(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Fint *);
void pmpi_win_set_attr_(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Fint *);
void pmpi_comm_create_keyval_(bbf_fn, bbf_fn, MPI_Fint *, MPI_Aint *, MPI_Fint *);
void pmpi_type_create_keyval_(bbf_fn, bbf_fn, MPI_Fint *, MPI_Aint *, MPI_Fint *);
void pmpi_win_create_keyval_(bbf_fn, bbf_fn, MPI_Fint *, MPI_Aint *, MPI_Fint *);
void pmpi_grequest_start_(bbf_fn, bbf_fn, bbf_fn, MPI_Aint *, MPI_Fint *, MPI_Fint *);
void pmpi_register_datarep_(char *, bbf_fn, bbf_fn, bbf_fn, MPI_Aint *, MPI_Fint *, size_t);
void pmpi_file_create_errhandler_(bbf_fn, MPI_Fint *, MPI_Fint *);
void pmpi_comm_spawn_(char *, char *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                      MPI_Fint *, MPI_Fint *, size_t, size_t);
void pmpi_comm_spawn_multiple_(MPI_Fint *, char *, char *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                               MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, size_t, size_t);

/* name_f08_ and MPICH's profiling alias pmpir_name_f08_. */
#define BBF08(name, params, call)                                                            \
    void mpi_##name##_f08_ params                                                            \
    {                                                                                        \
        MPI_Fint e = MPI_SUCCESS;                                                            \
        call;                                                                                \
        if (ierr != NULL) *ierr = e;                                                         \
    }                                                                                        \
    BBF_ALIAS(mpi_##name##_f08_, pmpir_##name##_f08_)

/* MPI_Init's mpi_f08 forms call PMPI_ (a C profiling tool does not see them, as with MPICH,
 * whose mpi_f08 binds them to PMPI_); the F77 ones call MPI_Init, as MPICH's do. */
BBF08(init, (MPI_Fint *ierr), e = PMPI_Init(NULL, NULL))
BBF08(init_thread, (MPI_Fint *r, MPI_Fint *p, MPI_Fint *ierr), e = PMPI_Init_thread(NULL, NULL, *r, p))
BBF08(info_create_env, (MPI_Fint *info, MPI_Fint *ierr), pmpi_info_create_env_(info, &e))
BBF08(pcontrol, (MPI_Fint *level, MPI_Fint *ierr), pmpi_pcontrol_(level, &e))
BBF08(comm_get_attr, (MPI_Fint *o, MPI_Fint *k, MPI_Aint *v, MPI_Fint *f, MPI_Fint *ierr),
      pmpi_comm_get_attr_(o, k, v, f, &e))
BBF08(type_get_attr, (MPI_Fint *o, MPI_Fint *k, MPI_Aint *v, MPI_Fint *f, MPI_Fint *ierr),
      pmpi_type_get_attr_(o, k, v, f, &e))
BBF08(win_get_attr, (MPI_Fint *o, MPI_Fint *k, MPI_Aint *v, MPI_Fint *f, MPI_Fint *ierr),
      pmpi_win_get_attr_(o, k, v, f, &e))
BBF08(comm_set_attr, (MPI_Fint *o, MPI_Fint *k, MPI_Aint *v, MPI_Fint *ierr),
      pmpi_comm_set_attr_(o, k, v, &e))
BBF08(type_set_attr, (MPI_Fint *o, MPI_Fint *k, MPI_Aint *v, MPI_Fint *ierr),
      pmpi_type_set_attr_(o, k, v, &e))
BBF08(win_set_attr, (MPI_Fint *o, MPI_Fint *k, MPI_Aint *v, MPI_Fint *ierr),
      pmpi_win_set_attr_(o, k, v, &e))
BBF08(comm_create_keyval, (bbf_fn c, bbf_fn d, MPI_Fint *k, MPI_Aint *x, MPI_Fint *ierr),
      pmpi_comm_create_keyval_(c, d, k, x, &e))
BBF08(type_create_keyval, (bbf_fn c, bbf_fn d, MPI_Fint *k, MPI_Aint *x, MPI_Fint *ierr),
      pmpi_type_create_keyval_(c, d, k, x, &e))
BBF08(win_create_keyval, (bbf_fn c, bbf_fn d, MPI_Fint *k, MPI_Aint *x, MPI_Fint *ierr),
      pmpi_win_create_keyval_(c, d, k, x, &e))
BBF08(grequest_start,
      (bbf_fn q, bbf_fn f, bbf_fn c, MPI_Aint *x, MPI_Fint *req, MPI_Fint *ierr),
      pmpi_grequest_start_(q, f, c, x, req, &e))
BBF08(register_datarep,
      (char *rep, bbf_fn r, bbf_fn w, bbf_fn x, MPI_Aint *s, MPI_Fint *ierr, size_t rep_len),
      pmpi_register_datarep_(rep, r, w, x, s, &e, rep_len))
BBF08(file_create_errhandler, (bbf_fn fn, MPI_Fint *eh, MPI_Fint *ierr),
      pmpi_file_create_errhandler_(fn, eh, &e))
BBF08(comm_spawn,
      (char *cmd, char *argv, MPI_Fint *maxprocs, MPI_Fint *info, MPI_Fint *root, MPI_Fint *comm,
       MPI_Fint *inter, MPI_Fint *codes, MPI_Fint *ierr, size_t cmd_len, size_t argv_len),
      pmpi_comm_spawn_(cmd, argv == &__mpi_f08_link_constants_MOD_mpi_argv_null ? mpiprivc_.argv_null : argv,
                       maxprocs, info, root, comm, inter,
                       codes == &__mpi_f08_link_constants_MOD_mpi_errcodes_ignore ? mpipriv2_.errcodes_ignore : codes,
                       &e, cmd_len, argv_len))
BBF08(comm_spawn_multiple,
      (MPI_Fint *count, char *cmds, char *argvs, MPI_Fint *maxprocs, MPI_Fint *infos,
       MPI_Fint *root, MPI_Fint *comm, MPI_Fint *inter, MPI_Fint *codes, MPI_Fint *ierr,
       size_t cmds_len, size_t argvs_len),
      pmpi_comm_spawn_multiple_(count, cmds, argvs == &__mpi_f08_link_constants_MOD_mpi_argvs_null ? mpiprivc_.argvs_null : argvs,
                                maxprocs, infos, root, comm, inter,
                                codes == &__mpi_f08_link_constants_MOD_mpi_errcodes_ignore ? mpipriv2_.errcodes_ignore : codes,
                                &e, cmds_len, argvs_len))

double mpi_wtime_f08_(void) { return MPI_Wtime(); }
BBF_ALIAS(mpi_wtime_f08_, pmpir_wtime_f08_)
double mpi_wtick_f08_(void) { return MPI_Wtick(); }
BBF_ALIAS(mpi_wtick_f08_, pmpir_wtick_f08_)
MPI_Aint mpi_aint_add_f08_(MPI_Aint *base, MPI_Aint *disp) { return MPI_Aint_add(*base, *disp); }
BBF_ALIAS(mpi_aint_add_f08_, pmpir_aint_add_f08_)
MPI_Aint mpi_aint_diff_f08_(MPI_Aint *a, MPI_Aint *b) { return MPI_Aint_diff(*a, *b); }
BBF_ALIAS(mpi_aint_diff_f08_, pmpir_aint_diff_f08_)
/* MPI_F_sync_reg only has to make the compiler see the buffer touched: the call does. */
void mpi_f_sync_reg_f08ts_(const struct bbf_gfc_desc *buf) { (void)buf; }
BBF_ALIAS(mpi_f_sync_reg_f08ts_, pmpir_f_sync_reg_f08ts_)
