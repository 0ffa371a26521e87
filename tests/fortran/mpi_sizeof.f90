! MPI_SIZEOF through MPICH's `use mpi` module (built with mpif90.mpich; its module procedures
! live in the Fortran library, ours here). Prints "PASS mpi_sizeof" on rank 0.
program sizeof_via_mpi_module
  use mpi
  implicit none
  integer :: ierr, rank, n, iv(3), s(4)
  double precision :: d
  character(len=5) :: c
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Sizeof(n, s(1), ierr)
  call MPI_Sizeof(iv, s(2), ierr)
  call MPI_Sizeof(d, s(3), ierr)
  call MPI_Sizeof(c, s(4), ierr)
  if (any(s /= [4, 4, 8, 1]) .or. ierr /= MPI_SUCCESS) then
    print '(a,4i3)', 'FAIL mpi_sizeof: ', s
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Finalize(ierr)
  if (rank == 0) print '(a)', 'PASS mpi_sizeof'
end program
