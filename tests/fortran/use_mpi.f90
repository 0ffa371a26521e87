! A `use mpi` program (the module built from our mpif.h): a sum and a status.
program use_mpi
  use mpi
  implicit none
  integer :: ierr, rank, nproc, total, status(MPI_STATUS_SIZE), got
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  call MPI_Allreduce(rank + 1, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (total /= nproc * (nproc + 1) / 2) then
    print '(a,i0)', 'FAIL use_mpi: sum ', total
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Sendrecv(rank, 1, MPI_INTEGER, mod(rank + 1, nproc), 2, got, 1, MPI_INTEGER, &
                    mod(rank + nproc - 1, nproc), 2, MPI_COMM_WORLD, status, ierr)
  if (status(MPI_SOURCE) /= mod(rank + nproc - 1, nproc) .or. got /= status(MPI_SOURCE)) then
    print '(a)', 'FAIL use_mpi: status'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Finalize(ierr)
  if (rank == 0) print '(a)', 'PASS use_mpi'
end program
