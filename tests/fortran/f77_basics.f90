! Billboard's Fortran 77 binding (include 'mpif.h'), at 1 to 4 ranks: point-to-point with a
! status and the ignore sentinels, collectives with MPI_IN_PLACE, a user reduction, attributes
! with Fortran copy/delete functions and the predefined ones, an error handler, output and
! input strings, MPI_BOTTOM with absolute addresses. Prints "PASS f77_basics" on rank 0; any
! failed check prints FAIL with what it saw and aborts the job.
module checks
  implicit none
  integer :: deletes = 0, handled = 0, handled_code = 0
contains
  subroutine check(ok, what)
    include 'mpif.h'
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    integer :: ierr
    if (.not. ok) then
      print '(a,a)', 'FAIL ', what
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
  end subroutine
end module

! A user reduction: the elementwise maximum of absolute values.
subroutine absmax(invec, inoutvec, len, datatype)
  integer :: len, datatype, i
  integer :: invec(len), inoutvec(len)
  do i = 1, len
    inoutvec(i) = max(abs(invec(i)), abs(inoutvec(i)))
  end do
end subroutine

! Copy: the attribute plus one, so the test can tell it ran. Delete: counted.
subroutine add_one_copy(oldcomm, keyval, extra, val_in, val_out, flag, ierr)
  include 'mpif.h'
  integer :: oldcomm, keyval, ierr
  integer(kind=MPI_ADDRESS_KIND) :: extra, val_in, val_out
  logical :: flag
  val_out = val_in + 1 + extra
  flag = .true.
  ierr = MPI_SUCCESS
end subroutine

subroutine count_delete(comm, keyval, val, extra, ierr)
  use checks
  include 'mpif.h'
  integer :: comm, keyval, ierr
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  deletes = deletes + 1
  ierr = MPI_SUCCESS
end subroutine

subroutine on_error(comm, code)
  use checks
  integer :: comm, code
  handled = handled + 1
  handled_code = code
end subroutine

program f77_basics
  use checks
  implicit none
  include 'mpif.h'
  external absmax, add_one_copy, count_delete, on_error
  integer :: ierr, rank, nproc, i, n, next, prev, count, op, keyval, dup, dup2, eh
  integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 2), reqs(2)
  integer :: buf(4), got(4), all(64), vals(4), blen(1), stype, cls, dims(2)
  integer(kind=MPI_ADDRESS_KIND) :: aval, addr(1), extra
  integer :: types(1)
  logical :: flag
  character(len=MPI_MAX_PROCESSOR_NAME) :: host
  character(len=MPI_MAX_OBJECT_NAME) :: cname
  character(len=MPI_MAX_ERROR_STRING) :: msg
  character(len=12) :: short
  double precision :: t

  call MPI_Init(ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Init')
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  next = mod(rank + 1, nproc)
  prev = mod(rank + nproc - 1, nproc)

  ! Point-to-point around a ring, with a status and with the ignore sentinels.
  buf = (/ rank, rank * 10, -rank, 7 /)
  call MPI_Sendrecv(buf, 3, MPI_INTEGER, next, 5, got, 4, MPI_INTEGER, prev, 5, &
                    MPI_COMM_WORLD, status, ierr)
  call check(status(MPI_SOURCE) == prev .and. status(MPI_TAG) == 5, 'status source/tag')
  call MPI_Get_count(status, MPI_INTEGER, count, ierr)
  call check(count == 3 .and. got(1) == prev .and. got(2) == prev * 10, 'sendrecv data/count')
  call MPI_Irecv(got, 4, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(buf, 4, MPI_INTEGER, next, 9, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS .and. got(4) == 7 .and. got(1) == prev, 'isend/irecv/waitall')
  call check(reqs(1) == MPI_REQUEST_NULL, 'request freed')
  call MPI_Sendrecv(buf, 1, MPI_INTEGER, next, 6, got, 1, MPI_INTEGER, prev, 6, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(got(1) == prev, 'MPI_STATUS_IGNORE')
  call MPI_Irecv(got, 4, MPI_INTEGER, prev, 11, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(buf, 2, MPI_INTEGER, next, 11, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, statuses, ierr)
  call check(statuses(MPI_SOURCE, 1) == prev .and. statuses(MPI_TAG, 1) == 11, 'statuses')

  ! Collectives, MPI_IN_PLACE included.
  n = 0
  if (rank == 0) n = 1234
  call MPI_Bcast(n, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call check(n == 1234, 'bcast')
  vals = (/ rank, 1, -rank, 2 * rank /)
  call MPI_Allreduce(MPI_IN_PLACE, vals, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(vals(1) == nproc * (nproc - 1) / 2 .and. vals(2) == nproc, 'allreduce in place')
  vals = rank + 1
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, vals, 4, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
    call check(vals(3) == nproc, 'reduce in place')
  else
    call MPI_Reduce(vals, vals, 4, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  end if
  all = -1
  all(rank + 1) = rank * rank
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, nproc
    call check(all(i) == (i - 1) * (i - 1), 'allgather in place')
  end do
  call MPI_Gather(rank, 1, MPI_INTEGER, all, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) call check(all(nproc) == nproc - 1, 'gather')

  ! A user reduction written in Fortran.
  call MPI_Op_create(absmax, .true., op, ierr)
  vals = (/ -rank, rank, 3, -7 * rank /)
  call MPI_Allreduce(MPI_IN_PLACE, vals, 4, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
  call check(vals(1) == nproc - 1 .and. vals(4) == 7 * (nproc - 1), 'user op')
  call MPI_Op_free(op, ierr)
  call check(op == MPI_OP_NULL, 'op freed')

  ! Attributes: a predefined one as a value, Fortran copy/delete functions, MPI_COMM_DUP_FN.
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, aval, flag, ierr)
  call check(flag .and. aval >= 32767, 'MPI_TAG_UB')
  call MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, n, flag, ierr)
  call check(flag .and. n == aval, 'MPI_Attr_get MPI_TAG_UB')
  ! (extra stays 100: MPICH keeps the variable's address and reads it at each call, we keep
  ! the value given here, as the standard says; a program that changes it sees a difference.)
  extra = 100
  call MPI_Comm_create_keyval(add_one_copy, count_delete, keyval, extra, ierr)
  aval = 41
  call MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, aval, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_get_attr(dup, keyval, aval, flag, ierr)
  call check(flag .and. aval == 142, 'copy function (41 + 1 + extra 100)')
  call MPI_Comm_free(dup, ierr)
  call check(deletes == 1 .and. dup == MPI_COMM_NULL, 'delete function on free')
  call MPI_Comm_free_keyval(keyval, ierr)
  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, keyval, aval, ierr)
  aval = 77
  call MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, aval, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  aval = 0
  call MPI_Comm_get_attr(dup, keyval, aval, flag, ierr)
  call check(flag .and. aval == 77, 'MPI_COMM_DUP_FN')
  call MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, n, aval, ierr)
  call MPI_Comm_set_attr(MPI_COMM_WORLD, n, aval, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup2, ierr)
  call MPI_Comm_get_attr(dup2, n, aval, flag, ierr)
  call check(.not. flag, 'MPI_COMM_NULL_COPY_FN')
  call MPI_Comm_free(dup2, ierr)

  ! Strings: names in and out (blank-padded), error strings.
  call MPI_Comm_set_name(dup, 'fortran dup   ', ierr)
  cname = 'x'
  call MPI_Comm_get_name(dup, cname, n, ierr)
  call check(cname == 'fortran dup' .and. n == 11, 'comm name: ['//trim(cname)//']')
  short = '############'
  call MPI_Comm_get_name(dup, short, n, ierr)
  call check(short == 'fortran dup ', 'short name blank-padded: ['//short//']')
  call MPI_Get_processor_name(host, n, ierr)
  call check(n > 0 .and. n == len_trim(host) .and. host(n+1:) == ' ', 'processor name')
  call MPI_Error_string(MPI_ERR_TRUNCATE, msg, n, ierr)
  call check(n > 0 .and. len_trim(msg) == n, 'error string')

  ! An error handler written in Fortran, then MPI_ERRORS_RETURN.
  call MPI_Comm_create_errhandler(on_error, eh, ierr)
  call MPI_Comm_set_errhandler(dup, eh, ierr)
  call MPI_Send(buf, 1, MPI_INTEGER, nproc + 3, 0, dup, ierr)
  call check(handled == 1 .and. handled_code /= MPI_SUCCESS, 'errhandler called')
  call MPI_Error_class(handled_code, cls, ierr)
  call check(cls == MPI_ERR_RANK, 'errhandler code is MPI_ERR_RANK')
  call MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN, ierr)
  call MPI_Send(buf, -1, MPI_INTEGER, next, 0, dup, ierr)
  call MPI_Error_class(ierr, cls, ierr)
  call check(cls == MPI_ERR_COUNT, 'MPI_ERRORS_RETURN')
  call MPI_Errhandler_free(eh, ierr)
  call MPI_Comm_free(dup, ierr)

  ! MPI_BOTTOM: a datatype built on an absolute address.
  call MPI_Get_address(buf, addr(1), ierr)
  blen(1) = 4
  types(1) = MPI_INTEGER
  call MPI_Type_create_struct(1, blen, addr, types, stype, ierr)
  call MPI_Type_commit(stype, ierr)
  buf = (/ 1, 2, 3, rank /)
  got = 0
  call MPI_Sendrecv(MPI_BOTTOM, 1, stype, next, 3, got, 4, MPI_INTEGER, prev, 3, &
                    MPI_COMM_WORLD, status, ierr)
  call check(ierr == MPI_SUCCESS .and. got(3) == 3 .and. got(4) == prev, 'MPI_BOTTOM send')
  call MPI_Type_free(stype, ierr)

  ! A cartesian grid (logical arrays in), and the time.
  dims = 0
  call MPI_Dims_create(nproc, 2, dims, ierr)
  call check(dims(1) * dims(2) == nproc, 'dims_create')
  t = MPI_Wtime()
  call check(t > 0.0d0 .and. MPI_Wtick() > 0.0d0, 'wtime')

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Finalize')
  if (rank == 0) print '(a)', 'PASS f77_basics'
end program
