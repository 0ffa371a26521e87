/* Shared by the generated mpi_f08 entries (f08_wrappers.c, from gen.py) and the hand-written
 * ones (f08_special.c): what differs from F77. MPICH's mpi_f08 module (compiled by gfortran)
 * calls external subroutines mpi_x_f08_ / mpi_x_f08ts_ / ..._large_ that take every argument by
 * reference like F77 (TYPE(MPI_Comm) is one INTEGER, TYPE(MPI_Status) the five words of C's),
 * but the optional ierror is NULL when absent, a choice buffer (TYPE(*), DIMENSION(..)) comes
 * as gfortran's own array descriptor, and the sentinels are other objects. */
#ifndef BB_F08_SUPPORT_H
#define BB_F08_SUPPORT_H
#include "f77_support.h"

/* gfortran's array descriptor (libgfortran.h, GCC >= 8): strides are in elements, span is
 * the bytes between elements. */
struct bbf_gfc_dim { ptrdiff_t stride, lbound, ubound; };
struct bbf_gfc_desc {
    void *base_addr;
    size_t offset;
    struct { size_t elem_len; int version; signed char rank, type; short attribute; } dtype;
    ptrdiff_t span;
    struct bbf_gfc_dim dim[];
};

/* mpi_f08's sentinels: MPI_BOTTOM, MPI_IN_PLACE and the status objects are libmpi's
 * (MPIR_F08_*, bound by name in MPICH's module); the others are module variables of
 * mpi_f08_link_constants, which this library defines (f08_support.c). */
extern int MPIR_F08_MPI_BOTTOM, MPIR_F08_MPI_IN_PLACE;
extern MPI_F08_status MPIR_F08_MPI_STATUS_IGNORE_OBJ, MPIR_F08_MPI_STATUSES_IGNORE_OBJ;
extern MPI_Fint __mpi_f08_link_constants_MOD_mpi_errcodes_ignore;
extern MPI_Fint __mpi_f08_link_constants_MOD_mpi_unweighted;
extern MPI_Fint __mpi_f08_link_constants_MOD_mpi_weights_empty;
extern char __mpi_f08_link_constants_MOD_mpi_argv_null, __mpi_f08_link_constants_MOD_mpi_argvs_null;

/* What bbf08_buffer returns for an array section that is not contiguous in memory. */
extern char bbf08_noncontiguous_marker BBF_HIDDEN;
#define BBF08_NONCONTIGUOUS ((void *)&bbf08_noncontiguous_marker)
/* The C address of a choice buffer: C's MPI_BOTTOM / MPI_IN_PLACE for the sentinels, the first
 * element of a contiguous array or a scalar, BBF08_NONCONTIGUOUS otherwise. */
BBF_HIDDEN void *bbf08_buffer(const struct bbf_gfc_desc *d);
/* The same for a blocking call: a non-contiguous section is gathered into a temporary copy
 * (t->tmp, NULL when none was needed), which bbf08_copy_done scatters back (copy_back) and
 * frees after the call. BBF08_NONCONTIGUOUS only if that memory could not be had. */
struct bbf08_copy { const struct bbf_gfc_desc *d; char *tmp; };
BBF_HIDDEN void *bbf08_buffer_copy(const struct bbf_gfc_desc *d, struct bbf08_copy *t);
BBF_HIDDEN void bbf08_copy_done(struct bbf08_copy *t, int copy_back);
/* For a call that keeps the buffer (MPI_Isend...): a non-contiguous section given with
 * (count, datatype) becomes the array's base address with one element of a derived datatype
 * that lays the section out in memory (*section, to pass with count 1 and free after the
 * call: the operation keeps its own reference), as MPICH's mpi_f08 does. Done when the count
 * items of a datatype without holes fill whole elements of the section (all of them: a vector
 * per dimension; its first ones: a block at each element's address); otherwise
 * BBF08_NONCONTIGUOUS. *section stays MPI_DATATYPE_NULL when none was made (count 0, or
 * refused). */
BBF_HIDDEN void *bbf08_section(const struct bbf_gfc_desc *d, MPI_Count count, MPI_Datatype datatype,
                               MPI_Datatype *section);
/* For a call that returns a request and keeps a non-contiguous section no section datatype
 * can stand for (a reduction's buffers share one datatype, a v/w collective's are cut by
 * counts arrays): a packed copy of the section, held in *staged (made at the first), which
 * bbf08_staged_attach hands to the request. copy_back: unpacked into the section when the
 * operation completes. BBF08_NONCONTIGUOUS if no memory could be had. */
struct bbf08_staged;
BBF_HIDDEN void *bbf08_stage(const struct bbf_gfc_desc *d, struct bbf08_staged **staged, int copy_back);
/* After the call (rc its result): the copies in staged (none: NULL) go with *request, whose
 * completion unpacks them and whose every MPI_Start (a persistent request's) packs them again
 * (libmpi's bb_request_hook); if the call failed they are freed now. Returns rc, or the error
 * of attaching them. */
BBF_HIDDEN int bbf08_staged_attach(struct bbf08_staged *staged, int rc, const MPI_Fint *request);
/* libmpi's: runs hook(state, 0) before each start of a persistent request, hook(state, 1) when
 * an operation completes, hook(state, 2) when the state is no longer needed. */
int bb_request_hook(MPI_Request request, void (*hook)(void *state, int phase), void *state);
/* Reports a buffer refused (a non-contiguous section that bbf08_section cannot describe, given
 * to a call that keeps the buffer and returns no request, or no memory for a copy):
 * MPI_ERR_BUFFER, with a message. */
BBF_HIDDEN int bbf08_noncontiguous(const char *function);

static inline MPI_Status *bbf08_status(MPI_Fint *p)
{
    return p == (MPI_Fint *)&MPIR_F08_MPI_STATUS_IGNORE_OBJ ? MPI_STATUS_IGNORE : (MPI_Status *)p;
}
static inline MPI_Status *bbf08_statuses(MPI_Fint *p)
{
    return p == (MPI_Fint *)&MPIR_F08_MPI_STATUSES_IGNORE_OBJ ? MPI_STATUSES_IGNORE : (MPI_Status *)p;
}
static inline int *bbf08_errcodes(MPI_Fint *p)
{
    return p == &__mpi_f08_link_constants_MOD_mpi_errcodes_ignore ? MPI_ERRCODES_IGNORE : p;
}
static inline int *bbf08_weights(MPI_Fint *p)
{
    if (p == &__mpi_f08_link_constants_MOD_mpi_unweighted) return MPI_UNWEIGHTED;
    if (p == &__mpi_f08_link_constants_MOD_mpi_weights_empty) return MPI_WEIGHTS_EMPTY;
    return p;
}
#endif
