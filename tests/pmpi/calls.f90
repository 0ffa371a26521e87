! The same kind of calls from Fortran through module `mpi` (2 ranks): MPICH's bindings
! reach the C MPI_ names, so tool.c counts them.
program calls
  use mpi
  implicit none
  integer :: ierr, rank, size, x, y, q, st(MPI_STATUS_SIZE)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  x = 1
  if (rank == 0) call MPI_Send(x, 1, MPI_INTEGER, 1, 5, MPI_COMM_WORLD, ierr)
  if (rank == 1) call MPI_Recv(y, 1, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, st, ierr)
  call MPI_Isend(x, 1, MPI_INTEGER, mod(rank + 1, size), 1, MPI_COMM_WORLD, q, ierr)
  call MPI_Recv(y, 1, MPI_INTEGER, mod(rank + size - 1, size), 1, MPI_COMM_WORLD, st, ierr)
  call MPI_Wait(q, st, ierr)
  call MPI_Bcast(x, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(x, y, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
end program calls
