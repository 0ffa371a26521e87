/* The mpi_f08 data this library exports (mpi_f08_link_constants' sentinels), the choice
 * buffer conversion of f08_support.h, mpi_f08_types' ==/= on handles and MPI_Sizeof, and
 * C's MPI_Status_c2f08/f082c. */
#include <stdio.h>
#include <string.h>
#include "f08_support.h"

/* Our mpi_f08 module defines these (bind(C) variables of mpi_f08.o, linked in); a build
 * without a Fortran compiler has no module, and defines them here. */
#ifndef BBF_HAVE_F08_MODULE
MPI_Fint __mpi_f08_link_constants_MOD_mpi_errcodes_ignore;
MPI_Fint __mpi_f08_link_constants_MOD_mpi_unweighted;
MPI_Fint __mpi_f08_link_constants_MOD_mpi_weights_empty;
char __mpi_f08_link_constants_MOD_mpi_argv_null;
char __mpi_f08_link_constants_MOD_mpi_argvs_null;
#endif
char bbf08_noncontiguous_marker;

void *bbf08_buffer(const struct bbf_gfc_desc *d)
{
    if (d == NULL) return NULL;
    void *base = d->base_addr;
    if (base == (void *)&MPIR_F08_MPI_BOTTOM) return MPI_BOTTOM;
    if (base == (void *)&MPIR_F08_MPI_IN_PLACE) return MPI_IN_PLACE;
    if (d->dtype.rank <= 0) return base; /* a scalar */
    if (d->span != 0 && (size_t)d->span != d->dtype.elem_len) return BBF08_NONCONTIGUOUS;
    /* Column-major: dimension i must step by the product of the extents before it. The last
     * extent is never needed, so an assumed-size array (no upper bound) passes too. */
    ptrdiff_t expected = 1;
    for (int i = 0; i < d->dtype.rank; i++) {
        ptrdiff_t extent = d->dim[i].ubound - d->dim[i].lbound + 1;
        if (extent > 1 && d->dim[i].stride != expected) return BBF08_NONCONTIGUOUS;
        if (extent <= 0 && i < d->dtype.rank - 1) return base; /* empty: nothing is read */
        expected *= extent;
    }
    return base;
}

int bbf08_noncontiguous(const char *function)
{
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "billboard MPI: rank %d: %s (mpi_f08): a buffer that is a non-contiguous array "
                    "section is not supported yet; pass a contiguous copy\n", rank, function);
    return MPI_ERR_BUFFER;
}

/* mpi_f08_types' == and /= on handles (TYPE(MPI_Comm) == TYPE(MPI_Comm), and either against
 * an INTEGER handle): module functions with every argument by reference, returning LOGICAL. */
#define BBF08_HANDLE_OPS(t)                                                                  \
    int __mpi_f08_types_MOD_mpi_##t##_eq(const MPI_Fint *a, const MPI_Fint *b) { return *a == *b; } \
    int __mpi_f08_types_MOD_mpi_##t##_neq(const MPI_Fint *a, const MPI_Fint *b) { return *a != *b; } \
    int __mpi_f08_types_MOD_mpi_##t##_f08_eq_f(const MPI_Fint *a, const MPI_Fint *b) { return *a == *b; } \
    int __mpi_f08_types_MOD_mpi_##t##_f08_neq_f(const MPI_Fint *a, const MPI_Fint *b) { return *a != *b; } \
    int __mpi_f08_types_MOD_mpi_##t##_f_eq_f08(const MPI_Fint *a, const MPI_Fint *b) { return *a == *b; } \
    int __mpi_f08_types_MOD_mpi_##t##_f_neq_f08(const MPI_Fint *a, const MPI_Fint *b) { return *a != *b; }
BBF08_HANDLE_OPS(comm)
BBF08_HANDLE_OPS(datatype)
BBF08_HANDLE_OPS(errhandler)
BBF08_HANDLE_OPS(file)
BBF08_HANDLE_OPS(group)
BBF08_HANDLE_OPS(info)
BBF08_HANDLE_OPS(message)
BBF08_HANDLE_OPS(op)
BBF08_HANDLE_OPS(request)
BBF08_HANDLE_OPS(session)
BBF08_HANDLE_OPS(win)

/* C's conversions between MPI_Status and the mpi_f08 status, which MPICH keeps in this
 * library (MPICH's mpi.h declares them; ours not yet): the same five words. */
int PMPI_Status_c2f08(const MPI_Status *c_status, MPI_F08_status *f08_status);
int PMPI_Status_f082c(const MPI_F08_status *f08_status, MPI_Status *c_status);
int PMPI_Status_c2f08(const MPI_Status *c_status, MPI_F08_status *f08_status)
{
    if (c_status == NULL || f08_status == NULL || c_status == MPI_STATUS_IGNORE) return MPI_ERR_ARG;
    memcpy(f08_status, c_status, sizeof *f08_status);
    return MPI_SUCCESS;
}
int PMPI_Status_f082c(const MPI_F08_status *f08_status, MPI_Status *c_status)
{
    if (c_status == NULL || f08_status == NULL || c_status == MPI_STATUS_IGNORE) return MPI_ERR_ARG;
    memcpy(c_status, f08_status, sizeof *c_status);
    return MPI_SUCCESS;
}
BBF_ALIAS(PMPI_Status_c2f08, MPI_Status_c2f08)
BBF_ALIAS(PMPI_Status_f082c, MPI_Status_f082c)

/* MPI_Sizeof as MPICH's mpi_f08_types module exports it (a program built with MPICH's module
 * calls these): the size of one element of x, which comes as a descriptor we need not read. */
#define BBF08_SIZEOF(name, bytes)                                                            \
    void __mpi_f08_types_MOD_mpi_sizeof_##name(const void *x, MPI_Fint *size, MPI_Fint *ierr) \
    {                                                                                        \
        (void)x;                                                                             \
        *size = bytes;                                                                       \
        if (ierr != NULL) *ierr = MPI_SUCCESS;                                               \
    }
BBF08_SIZEOF(xint8, 1)
BBF08_SIZEOF(xint16, 2)
BBF08_SIZEOF(xint32, 4)
BBF08_SIZEOF(xint64, 8)
BBF08_SIZEOF(xreal32, 4)
BBF08_SIZEOF(xreal64, 8)
BBF08_SIZEOF(xreal128, 16)
BBF08_SIZEOF(xcomplex32, 8)
BBF08_SIZEOF(xcomplex64, 16)
BBF08_SIZEOF(xcomplex128, 32)
BBF08_SIZEOF(logical, 4)
BBF08_SIZEOF(character, 1)
