! calls.f90 through module mpi_f08 (2 ranks): MPICH's entries with a choice buffer reach the C
! MPI_ names (tool.c counts send, recv, isend, bcast, allreduce); init, wait, barrier and
! finalize reach PMPI_ only, so tool.c counts none of them.
program calls_f08
  use mpi_f08
  implicit none
  integer :: rank, size, x, y
  type(MPI_Request) :: q
  type(MPI_Status) :: st
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  x = 1
  if (rank == 0) call MPI_Send(x, 1, MPI_INTEGER, 1, 5, MPI_COMM_WORLD)
  if (rank == 1) call MPI_Recv(y, 1, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, st)
  call MPI_Isend(x, 1, MPI_INTEGER, mod(rank + 1, size), 1, MPI_COMM_WORLD, q)
  call MPI_Recv(y, 1, MPI_INTEGER, mod(rank + size - 1, size), 1, MPI_COMM_WORLD, st)
  call MPI_Wait(q, st)
  call MPI_Bcast(x, 1, MPI_INTEGER, 0, MPI_COMM_WORLD)
  call MPI_Allreduce(x, y, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call MPI_Barrier(MPI_COMM_WORLD)
  call MPI_Finalize()
end program calls_f08
