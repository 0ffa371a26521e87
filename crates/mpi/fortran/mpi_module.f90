! The `mpi` module for gfortran: every name of mpif.h (constants, sentinels in their common
! blocks, the EXTERNAL callbacks), so `use mpi` programs compile against the same values and
! call the same libmpichfort.so.12 subroutines as `include 'mpif.h'` ones. It declares no
! explicit interfaces, so calls are checked as in mpif.h programs (MPICH's module adds
! interfaces for the non-choice routines).
module mpi
  implicit none
  include 'mpif.h'
end module mpi
