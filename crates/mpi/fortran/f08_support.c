/* The mpi_f08 data this library exports (mpi_f08_link_constants' sentinels), the choice
 * buffer conversion of f08_support.h, mpi_f08_types' procedures under MPICH's module names
 * (==/= on handles, MPI_Sizeof, c2f/f2c, status conversions), and C's MPI_Status_c2f08/f082c. */
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

/* Visits the elements of a section in array element order (first index fastest), copying each
 * to (to_tmp) or from the packed temporary. Element (i_1..i_r), counted from the lower bounds,
 * lies at base_addr + span * sum(i_k * stride_k), as gfortran lays sections out. */
static void copy_section(const struct bbf_gfc_desc *d, char *tmp, int to_tmp)
{
    int rank = d->dtype.rank;
    size_t elem = d->dtype.elem_len;
    ptrdiff_t span = d->span != 0 ? d->span : (ptrdiff_t)elem;
    ptrdiff_t idx[15] = {0};
    for (;;) {
        ptrdiff_t off = 0;
        for (int k = 0; k < rank; k++) off += idx[k] * d->dim[k].stride;
        char *at = (char *)d->base_addr + off * span;
        if (to_tmp) memcpy(tmp, at, elem);
        else memcpy(at, tmp, elem);
        tmp += elem;
        int k = 0;
        while (k < rank && ++idx[k] > d->dim[k].ubound - d->dim[k].lbound) idx[k++] = 0;
        if (k == rank) return;
    }
}

void *bbf08_buffer_copy(const struct bbf_gfc_desc *d, struct bbf08_copy *t)
{
    t->d = d;
    t->tmp = NULL;
    void *c = bbf08_buffer(d);
    if (c != BBF08_NONCONTIGUOUS) return c;
    if (d->dtype.rank > 15) return c;
    size_t n = 1;
    for (int k = 0; k < d->dtype.rank; k++) {
        ptrdiff_t extent = d->dim[k].ubound - d->dim[k].lbound + 1;
        n *= extent > 0 ? (size_t)extent : 0;
    }
    t->tmp = malloc(n * d->dtype.elem_len + 1);
    if (t->tmp == NULL) return c;
    if (n > 0) copy_section(d, t->tmp, 1);
    return t->tmp;
}

void bbf08_copy_done(struct bbf08_copy *t, int copy_back)
{
    if (t->tmp == NULL) return;
    if (copy_back) copy_section(t->d, t->tmp, 0);
    free(t->tmp);
    t->tmp = NULL;
}

/* The copies of one call's sections: sendbuf and recvbuf (three for a call that has them). */
struct bbf08_staged {
    int n;
    struct {
        struct bbf_gfc_desc *d; /* the caller's descriptor is a temporary: a copy */
        char *tmp;
        size_t elements;
        int copy_back;
    } buf[3];
};

void *bbf08_stage(const struct bbf_gfc_desc *d, struct bbf08_staged **staged, int copy_back)
{
    if (d->dtype.rank <= 0 || d->dtype.rank > 15) return BBF08_NONCONTIGUOUS;
    if (*staged == NULL && (*staged = calloc(1, sizeof **staged)) == NULL) return BBF08_NONCONTIGUOUS;
    struct bbf08_staged *s = *staged;
    if (s->n == 3) return BBF08_NONCONTIGUOUS;
    size_t bytes = sizeof *d + (size_t)d->dtype.rank * sizeof d->dim[0];
    struct bbf_gfc_desc *copy = malloc(bytes);
    if (copy == NULL) return BBF08_NONCONTIGUOUS;
    memcpy(copy, d, bytes);
    struct bbf08_copy t;
    void *c = bbf08_buffer_copy(copy, &t);
    if (t.tmp == NULL) {
        free(copy);
        return BBF08_NONCONTIGUOUS;
    }
    size_t n = 1;
    for (int k = 0; k < d->dtype.rank; k++) {
        ptrdiff_t extent = d->dim[k].ubound - d->dim[k].lbound + 1;
        n *= extent > 0 ? (size_t)extent : 0;
    }
    s->buf[s->n].d = copy;
    s->buf[s->n].tmp = t.tmp;
    s->buf[s->n].elements = n;
    s->buf[s->n].copy_back = copy_back;
    s->n++;
    return c;
}

/* bb_request_hook's callback: pack (0), unpack (1) or free (2) the copies. */
static void staged_hook(void *state, int phase)
{
    struct bbf08_staged *s = state;
    for (int i = 0; i < s->n; i++) {
        if (phase == 0 && s->buf[i].elements > 0) copy_section(s->buf[i].d, s->buf[i].tmp, 1);
        if (phase == 1 && s->buf[i].copy_back && s->buf[i].elements > 0) copy_section(s->buf[i].d, s->buf[i].tmp, 0);
        if (phase == 2) {
            free(s->buf[i].d);
            free(s->buf[i].tmp);
        }
    }
    if (phase == 2) free(s);
}

int bbf08_staged_attach(struct bbf08_staged *staged, int rc, const MPI_Fint *request)
{
    if (staged == NULL) return rc;
    if (rc != MPI_SUCCESS) {
        staged_hook(staged, 2);
        return rc;
    }
    /* A failure here leaves the copies allocated: the operation may be using them. */
    return bb_request_hook((MPI_Request)*request, staged_hook, staged);
}

void *bbf08_section(const struct bbf_gfc_desc *d, MPI_Count count, MPI_Datatype datatype, MPI_Datatype *section)
{
    *section = MPI_DATATYPE_NULL;
    int rank = d->dtype.rank;
    MPI_Count size = 0, lb = 0, extent = 0;
    if (rank <= 0 || rank > 15 || PMPI_Type_size_c(datatype, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent_c(datatype, &lb, &extent) != MPI_SUCCESS)
        return BBF08_NONCONTIGUOUS;
    /* The items of one array element: a whole number of a datatype without holes. */
    size_t elem = d->dtype.elem_len;
    if (size <= 0 || size != extent || lb != 0 || elem % (size_t)size != 0) return BBF08_NONCONTIGUOUS;
    MPI_Count per_elem = (MPI_Count)elem / size, elements = 1;
    for (int k = 0; k < rank; k++) elements *= d->dim[k].ubound - d->dim[k].lbound + 1;
    if (count == 0) return d->base_addr; /* nothing is read or written */
    if (elements <= 0 || count % per_elem != 0 || count > per_elem * elements) return BBF08_NONCONTIGUOUS;
    ptrdiff_t span = d->span != 0 ? d->span : (ptrdiff_t)elem;
    MPI_Datatype t;
    if (count < per_elem * elements) {
        /* The first count / per_elem elements of the section, in array element order: one
         * block of per_elem items at each element's address (as copy_section visits them). */
        MPI_Count used = count / per_elem;
        MPI_Count *displs = malloc((size_t)used * sizeof *displs);
        if (displs == NULL) return BBF08_NONCONTIGUOUS;
        ptrdiff_t idx[15] = {0};
        for (MPI_Count e = 0; e < used; e++) {
            ptrdiff_t off = 0;
            for (int k = 0; k < rank; k++) off += idx[k] * d->dim[k].stride;
            displs[e] = (MPI_Count)(off * span);
            for (int k = 0; k < rank && ++idx[k] > d->dim[k].ubound - d->dim[k].lbound; k++) idx[k] = 0;
        }
        int rc = PMPI_Type_create_hindexed_block_c(used, per_elem, displs, datatype, &t);
        free(displs);
        if (rc != MPI_SUCCESS) return BBF08_NONCONTIGUOUS;
    } else {
        /* The whole section: one array element, then each dimension in turn (first index
         * fastest), a vector of the one before with its stride in bytes. */
        if (PMPI_Type_contiguous_c(per_elem, datatype, &t) != MPI_SUCCESS) return BBF08_NONCONTIGUOUS;
        for (int k = 0; k < rank; k++) {
            MPI_Datatype v;
            MPI_Count n = d->dim[k].ubound - d->dim[k].lbound + 1;
            int rc = PMPI_Type_create_hvector_c(n, 1, (MPI_Count)(d->dim[k].stride * span), t, &v);
            PMPI_Type_free(&t);
            if (rc != MPI_SUCCESS) return BBF08_NONCONTIGUOUS;
            t = v;
        }
    }
    if (PMPI_Type_commit(&t) != MPI_SUCCESS) {
        PMPI_Type_free(&t);
        return BBF08_NONCONTIGUOUS;
    }
    *section = t;
    return d->base_addr;
}

int bbf08_noncontiguous(const char *function)
{
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "billboard MPI: rank %d: %s (mpi_f08): this call keeps its buffer after "
                    "returning with no request whose completion could unpack a copy (a window, "
                    "an attached buffer, a partitioned request, a one-sided call without one), so "
                    "a non-contiguous array section must hold exactly its count of a contiguous "
                    "datatype of its own (or there was no memory for a copy); pass a contiguous "
                    "array\n", rank, function);
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

/* mpi_f08_types' conversions as MPICH's module exports them: a handle's INTEGER and its C value
 * are the same (VALUE argument, INTEGER result), and TYPE(MPI_Status), the INTEGER status
 * array and MPICH's C_status are the same five words. */
#define BBF08_HANDLE_CONVERSIONS(t)                                                          \
    MPI_Fint __mpi_f08_types_MOD_mpi_##t##_c2f(MPI_Fint x) { return x; }                     \
    MPI_Fint __mpi_f08_types_MOD_mpi_##t##_f2c(MPI_Fint x) { return x; }
BBF08_HANDLE_CONVERSIONS(comm)
BBF08_HANDLE_CONVERSIONS(datatype)
BBF08_HANDLE_CONVERSIONS(errhandler)
BBF08_HANDLE_CONVERSIONS(group)
BBF08_HANDLE_CONVERSIONS(info)
BBF08_HANDLE_CONVERSIONS(message)
BBF08_HANDLE_CONVERSIONS(op)
BBF08_HANDLE_CONVERSIONS(request)
BBF08_HANDLE_CONVERSIONS(session)
BBF08_HANDLE_CONVERSIONS(win)
void __mpi_f08_types_MOD_mpi_status_f082f(const MPI_F08_status *f08, MPI_Fint *f, MPI_Fint *ierr)
{
    memcpy(f, f08, sizeof *f08);
    if (ierr != NULL) *ierr = MPI_SUCCESS;
}
void __mpi_f08_types_MOD_mpi_status_f2f08(const MPI_Fint *f, MPI_F08_status *f08, MPI_Fint *ierr)
{
    memcpy(f08, f, sizeof *f08);
    if (ierr != NULL) *ierr = MPI_SUCCESS;
}
/* The assignments between TYPE(MPI_Status) and MPICH's C_status: left = right. */
void __mpi_f08_types_MOD_mpi_status_f08_assign_c(MPI_F08_status *left, const MPI_F08_status *right)
{
    *left = *right;
}
void __mpi_f08_types_MOD_mpi_status_c_assign_f08(MPI_F08_status *left, const MPI_F08_status *right)
{
    *left = *right;
}
