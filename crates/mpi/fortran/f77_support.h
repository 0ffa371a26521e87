/* Shared by the generated Fortran 77 wrappers (f77_wrappers.c, from gen.py) and the ones
 * written by hand (f77_special.c, f77_callbacks.c): the sentinels of mpif.h, string conversion
 * and the eight names every subroutine is exported under. */
#ifndef BB_F77_SUPPORT_H
#define BB_F77_SUPPORT_H
#include <stddef.h>
#include <stdlib.h>
#include "mpi.h"

/* mpif.h's common blocks, laid out as gfortran lays out MPICH's declarations. A Fortran program
 * that includes mpif.h defines them too; the dynamic linker binds our references (through the
 * GOT, so build with -fPIC and default visibility, never -Bsymbolic) to the program's copy, and
 * the addresses compared below are the ones the program passes. */
struct bbf_priv1 { MPI_Fint bottom, in_place, status_ignore[MPI_F_STATUS_SIZE]; };
struct bbf_priv2 { MPI_Fint statuses_ignore[MPI_F_STATUS_SIZE], errcodes_ignore[1]; };
struct bbf_privc { char argvs_null[1], argv_null[1]; };
extern struct bbf_priv1 mpipriv1_;   /* COMMON /MPIPRIV1/ MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE */
extern struct bbf_priv2 mpipriv2_;   /* COMMON /MPIPRIV2/ MPI_STATUSES_IGNORE, MPI_ERRCODES_IGNORE */
extern struct bbf_privc mpiprivc_;   /* COMMON /MPIPRIVC/ MPI_ARGVS_NULL, MPI_ARGV_NULL */
extern MPI_Fint mpifcmb5_;           /* COMMON /MPIFCMB5/ MPI_UNWEIGHTED */
extern MPI_Fint mpifcmb9_;           /* COMMON /MPIFCMB9/ MPI_WEIGHTS_EMPTY */

/* A choice buffer: Fortran's MPI_BOTTOM and MPI_IN_PLACE become C's. */
static inline void *bbf_buffer(void *p)
{
    if (p == (void *)&mpipriv1_.bottom) return MPI_BOTTOM;
    if (p == (void *)&mpipriv1_.in_place) return MPI_IN_PLACE;
    return p;
}
/* The status is the C struct's five words, as INTEGER(MPI_STATUS_SIZE). */
static inline MPI_Status *bbf_status(MPI_Fint *p)
{
    return p == mpipriv1_.status_ignore ? MPI_STATUS_IGNORE : (MPI_Status *)p;
}
static inline MPI_Status *bbf_statuses(MPI_Fint *p)
{
    return p == mpipriv2_.statuses_ignore ? MPI_STATUSES_IGNORE : (MPI_Status *)p;
}
static inline int *bbf_errcodes(MPI_Fint *p)
{
    return p == mpipriv2_.errcodes_ignore ? MPI_ERRCODES_IGNORE : p;
}
static inline int *bbf_weights(MPI_Fint *p)
{
    if (p == &mpifcmb5_) return MPI_UNWEIGHTED;
    if (p == &mpifcmb9_) return MPI_WEIGHTS_EMPTY;
    return p;
}
static inline int bbf_min_len(MPI_Fint c_len, size_t f_len)
{
    return c_len > 0 && (size_t)c_len > f_len ? (int)f_len : c_len;
}
static inline size_t bbf_nonneg(MPI_Fint n) { return n > 0 ? (size_t)n : 0; }

/* Helpers, not exported: the library's symbols are MPICH's and no more. */
#define BBF_HIDDEN __attribute__((visibility("hidden")))
/* An input CHARACTER argument without its trailing blanks, NUL-terminated (malloc'd). */
BBF_HIDDEN char *bbf_string_in(const char *f, size_t len);
/* A zeroed buffer for a C output string: at least the Fortran length and MPI's largest
 * MPI_MAX_* (the library version string), since C writes up to its own maximum. */
BBF_HIDDEN char *bbf_string_buffer(size_t len);
/* Copies a C string into a Fortran CHARACTER, truncated or blank-padded to its length. */
BBF_HIDDEN void bbf_string_out(const char *c, char *f, size_t len);

/* Every subroutine is pmpi_name_ (strong) and seven weak aliases: pmpi_name__, pmpi_name,
 * PMPI_NAME, mpi_name_, mpi_name__, mpi_name, MPI_NAME, the four manglings MPICH exports. */
#define BBF_ALIAS(target, name) extern __typeof__(target) name __attribute__((weak, alias(#target)));
#define BBF_ALIASES(t, a, b, c, d, e, f, g) \
    BBF_ALIAS(t, a) BBF_ALIAS(t, b) BBF_ALIAS(t, c) BBF_ALIAS(t, d) BBF_ALIAS(t, e) \
    BBF_ALIAS(t, f) BBF_ALIAS(t, g)
#endif
