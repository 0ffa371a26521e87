/*
 * mpio.h: MPI-IO, for programs that include it by name as MPICH's ROMIO provides it. Billboard
 * declares MPI-IO in mpi.h itself (as MPICH's mpi.h does by including this file), so this is
 * mpi.h.
 */
#ifndef BILLBOARD_MPIO_H
#define BILLBOARD_MPIO_H
#include "mpi.h"
#endif /* BILLBOARD_MPIO_H */
