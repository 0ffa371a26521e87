! MPICH's MPIX_ subroutines from mpif.h (built with our mpifort and with mpif90.mpich, run on
! our libmpichfort.so.12): MPIX_COMM_AGREE gives the AND of every rank's flag,
! MPIX_COMM_SHRINK a communicator of every rank, MPIX_COMM_FAILURE_GET_ACKED an empty group,
! MPIX_GPU_QUERY_SUPPORT "no" for CUDA (0). Prints "PASS mpix_f77" on rank 0.
program mpix_f77
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nproc, shrunk, n, failed, supported
  logical :: flag
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  flag = rank /= nproc - 1
  call MPIX_Comm_agree(MPI_COMM_WORLD, flag, ierr)
  if (flag .or. ierr /= MPI_SUCCESS) call fail('agree with one .false.')
  flag = .true.
  call MPIX_Comm_agree(MPI_COMM_WORLD, flag, ierr)
  if (.not. flag .or. ierr /= MPI_SUCCESS) call fail('agree with all .true.')
  call MPIX_Comm_shrink(MPI_COMM_WORLD, shrunk, ierr)
  call MPI_Comm_size(shrunk, n, ierr)
  if (n /= nproc .or. ierr /= MPI_SUCCESS) call fail('shrink')
  call MPI_Comm_free(shrunk, ierr)
  call MPIX_Comm_failure_ack(MPI_COMM_WORLD, ierr)
  call MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, failed, ierr)
  call MPI_Group_size(failed, n, ierr)
  if (n /= 0 .or. ierr /= MPI_SUCCESS) call fail('acknowledged failures')
  supported = -1
  call MPIX_GPU_query_support(0, supported, ierr)
  if (supported /= 0 .or. ierr /= MPI_SUCCESS) call fail('GPU query')
  call MPI_Finalize(ierr)
  if (rank == 0) print '(a)', 'PASS mpix_f77'
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a,a,a,i0)', 'FAIL mpix_f77: ', what, ' on rank ', rank
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end subroutine
end program
