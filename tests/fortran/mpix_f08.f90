! MPICH's MPIX_ procedures through `use mpi_f08` (our module, and MPICH's with mpif90.mpich,
! run on our libmpichfort.so.12): MPIX_Delete_error_class/code (entries mpi_delete_error_*_f08_)
! remove what MPI_Add_error_* made, and a second delete fails; MPIX_Comm_agree succeeds (its
! flag is INTENT(OUT) in MPICH's module, so gfortran may drop the value set before the call:
! mpix_f77.f90 checks the AND). Prints "PASS mpix_f08" on rank 0.
program mpix_f08
  use mpi_f08
  implicit none
  integer :: ierr, rank, cls, code, again
  logical :: flag
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
  call MPI_Add_error_class(cls)
  call MPI_Add_error_code(cls, code)
  call MPIX_Delete_error_string(code, ierr)
  if (ierr /= MPI_SUCCESS) call fail('delete the string of a new code')
  call MPIX_Delete_error_code(code, ierr)
  if (ierr /= MPI_SUCCESS) call fail('delete a code')
  call MPIX_Delete_error_code(code, ierr)
  if (ierr == MPI_SUCCESS) call fail('delete a deleted code')
  call MPIX_Delete_error_class(cls, ierr)
  if (ierr /= MPI_SUCCESS) call fail('delete a class')
  call MPI_Add_error_class(again)
  if (again /= cls) call fail('the deleted class number is given again')
  call MPIX_Delete_error_class(again)
  flag = .true.
  call MPIX_Comm_agree(MPI_COMM_WORLD, flag, ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPIX_Comm_agree')
  call MPI_Finalize()
  if (rank == 0) print '(a)', 'PASS mpix_f08'
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a,a,a,i0)', 'FAIL mpix_f08: ', what, ' on rank ', rank
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine
end program
