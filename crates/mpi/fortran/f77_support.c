/* The data MPICH's libmpichfort.so.12 exports (mpif.h's common blocks and the pointers to them
 * that MPICH's C side reads) and the string helpers of f77_support.h. */
#include <string.h>
#include "f77_support.h"

struct bbf_priv1 mpipriv1_ __attribute__((aligned(32)));
struct bbf_priv2 mpipriv2_ __attribute__((aligned(32)));
struct bbf_privc mpiprivc_ __attribute__((aligned(32)));
MPI_Fint mpifcmb5_ __attribute__((aligned(32)));
MPI_Fint mpifcmb9_ __attribute__((aligned(32)));

/* MPICH's names for the sentinels' addresses, exported for programs and tools that read them. */
void *MPIR_F_MPI_BOTTOM = &mpipriv1_.bottom;
void *MPIR_F_MPI_IN_PLACE = &mpipriv1_.in_place;
void *MPIR_F_MPI_UNWEIGHTED = &mpifcmb5_;
void *MPIR_F_MPI_WEIGHTS_EMPTY = &mpifcmb9_;
MPI_Fint *MPI_F_ERRCODES_IGNORE = mpipriv2_.errcodes_ignore;
void *MPI_F_ARGV_NULL = mpiprivc_.argv_null;
void *MPI_F_ARGVS_NULL = mpiprivc_.argvs_null;
/* MPICH sets these addresses when MPI_Init first runs Fortran code (mpirinitf_ calls
 * mpirinitc_ with the common blocks); ours are fixed at load time, so there is nothing to do. */
int MPIR_F_NeedInit = 0;
void mpirinitf_(void) {}
void mpirinitc_(void) {}

char *bbf_string_in(const char *f, size_t len)
{
    while (len > 0 && f[len - 1] == ' ') len--;
    char *c = malloc(len + 1);
    if (c == NULL) return NULL;
    memcpy(c, f, len);
    c[len] = '\0';
    return c;
}

char *bbf_string_buffer(size_t len)
{
    size_t n = len > MPI_MAX_LIBRARY_VERSION_STRING ? len : MPI_MAX_LIBRARY_VERSION_STRING;
    return calloc(n + 1, 1);
}

void bbf_string_out(const char *c, char *f, size_t len)
{
    if (c == NULL) return;
    size_t n = strlen(c);
    if (n > len) n = len;
    memcpy(f, c, n);
    memset(f + n, ' ', len - n);
}

/* MPI_SIZEOF as MPICH's `mpi` module exports it (module mpi_sizeofs; a program built with
 * MPICH's module or ours calls these: gen_mpi_module.py declares the same procedures): the
 * size of one element of x, scalar or array, which we need not read. */
#define BBF_SIZEOF(name, bytes)                                                              \
    void __mpi_sizeofs_MOD_mpi_sizeof_##name(const void *x, MPI_Fint *size, MPI_Fint *ierr)  \
    {                                                                                        \
        (void)x;                                                                             \
        *size = bytes;                                                                       \
        if (ierr != NULL) *ierr = MPI_SUCCESS;                                               \
    }
BBF_SIZEOF(ch, 1)
BBF_SIZEOF(chv, 1)
BBF_SIZEOF(cx, 8)
BBF_SIZEOF(cxv, 8)
BBF_SIZEOF(d, 8)
BBF_SIZEOF(dv, 8)
BBF_SIZEOF(i, 4)
BBF_SIZEOF(iv, 4)
BBF_SIZEOF(i1, 1)
BBF_SIZEOF(i1v, 1)
BBF_SIZEOF(i2, 2)
BBF_SIZEOF(i2v, 2)
BBF_SIZEOF(i8, 8)
BBF_SIZEOF(i8v, 8)
BBF_SIZEOF(l, 4)
BBF_SIZEOF(lv, 4)
BBF_SIZEOF(r, 4)
BBF_SIZEOF(rv, 4)
