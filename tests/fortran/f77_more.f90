! More of Billboard's Fortran 77 binding, through the paths written by hand: generalized requests
! and MPI_Keyval_create with Fortran callbacks, the INTEGER predefined MPI_DUP_FN, a file opened,
! written and read back by its Fortran handle with a Fortran file error handler, info strings
! (keys trimmed, values blank-padded), a periodic Cartesian grid from LOGICALs.
! Prints "PASS f77_more" on rank 0; a failed check prints FAIL and aborts the job.
module more_state
  implicit none
  integer :: frees = 0, file_errors = 0, file_code = 0
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

subroutine query_fn(extra, status, ierr)
  include 'mpif.h'
  integer(kind=MPI_ADDRESS_KIND) :: extra
  integer :: status(MPI_STATUS_SIZE), ierr
  call MPI_Status_set_elements(status, MPI_INTEGER, int(extra), ierr)
  call MPI_Status_set_cancelled(status, .false., ierr)
  status(MPI_SOURCE) = 3
  status(MPI_TAG) = 4
  ierr = MPI_SUCCESS
end subroutine

subroutine free_fn(extra, ierr)
  use more_state
  include 'mpif.h'
  integer(kind=MPI_ADDRESS_KIND) :: extra
  integer :: ierr
  frees = frees + int(extra)
  ierr = MPI_SUCCESS
end subroutine

subroutine cancel_fn(extra, complete, ierr)
  include 'mpif.h'
  integer(kind=MPI_ADDRESS_KIND) :: extra
  logical :: complete
  integer :: ierr
  ierr = MPI_SUCCESS
end subroutine

subroutine old_copy(oldcomm, keyval, extra, val_in, val_out, flag, ierr)
  integer :: oldcomm, keyval, extra, val_in, val_out, ierr
  logical :: flag
  val_out = val_in * extra
  flag = .true.
  ierr = 0
end subroutine

subroutine on_file_error(fh, code)
  use more_state
  integer :: fh, code
  file_errors = file_errors + 1
  file_code = code
end subroutine

program f77_more
  use more_state
  implicit none
  include 'mpif.h'
  external query_fn, free_fn, cancel_fn, old_copy, on_file_error
  integer :: ierr, rank, nproc, req, status(MPI_STATUS_SIZE), count, keyval, dup, val, i
  integer :: fh, eh, info, nkeys, vlen, cls, cart, dims(2), coords(2), buf(4), got(4), n_pid
  integer(kind=MPI_ADDRESS_KIND) :: extra
  integer(kind=MPI_OFFSET_KIND) :: offset, fsize
  logical :: flag, periods(2), cperiods(2)
  character(len=MPI_MAX_INFO_KEY) :: key
  character(len=40) :: value
  character(len=64) :: path

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)

  ! A generalized request: the Fortran query function fills the status.
  extra = 5
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, extra, req, ierr)
  call check(ierr == MPI_SUCCESS, 'grequest start')
  call MPI_Grequest_complete(req, ierr)
  call MPI_Wait(req, status, ierr)
  call check(ierr == MPI_SUCCESS .and. req == MPI_REQUEST_NULL, 'grequest wait')
  call MPI_Get_count(status, MPI_INTEGER, count, ierr)
  call check(count == 5 .and. status(MPI_SOURCE) == 3 .and. status(MPI_TAG) == 4, 'grequest status')
  call check(frees == 5, 'grequest free function')

  ! MPI_Keyval_create: INTEGER callbacks, the user's and MPI_DUP_FN.
  call MPI_Keyval_create(old_copy, MPI_NULL_DELETE_FN, keyval, 3, ierr)
  call MPI_Attr_put(MPI_COMM_WORLD, keyval, 14, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Attr_get(dup, keyval, val, flag, ierr)
  call check(flag .and. val == 42, 'old-style copy function')
  call MPI_Comm_free(dup, ierr)
  call MPI_Keyval_free(keyval, ierr)
  call MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, keyval, 0, ierr)
  call MPI_Attr_put(MPI_COMM_WORLD, keyval, -9, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Attr_get(dup, keyval, val, flag, ierr)
  call check(flag .and. val == -9, 'MPI_DUP_FN')
  call MPI_Comm_free(dup, ierr)

  ! Info: keys and values trimmed on the way in, blank-padded on the way out.
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'colour   ', 'deep blue  ', ierr)
  call MPI_Info_get_nkeys(info, nkeys, ierr)
  call MPI_Info_get_nthkey(info, 0, key, ierr)
  call check(nkeys == 1 .and. key == 'colour', 'info key ['//trim(key)//']')
  call MPI_Info_get_valuelen(info, 'colour', vlen, flag, ierr)
  call check(flag .and. vlen == 9, 'info valuelen')
  value = '?'
  call MPI_Info_get(info, 'colour', len(value), value, flag, ierr)
  call check(flag .and. value == 'deep blue', 'info value ['//value//']')
  call MPI_Info_free(info, ierr)

  ! A file by its Fortran handle: each rank writes its block, reads its neighbour's.
  ! One file per job (rank 0's pid), so that jobs running side by side do not share it.
  n_pid = getpid()
  call MPI_Bcast(n_pid, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  write (path, '(a,i0,a)') '/tmp/bb-f77-more-', n_pid, '.dat'
  if (rank == 0) then
    call MPI_File_delete(path, MPI_INFO_NULL, ierr)
  end if
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
  call check(ierr == MPI_SUCCESS .and. fh /= MPI_FILE_NULL, 'file open')
  buf = (/ rank, rank + 100, rank + 200, rank + 300 /)
  offset = rank * 16
  call MPI_File_write_at_all(fh, offset, buf, 4, MPI_INTEGER, status, ierr)
  call check(ierr == MPI_SUCCESS, 'file write_at_all')
  call MPI_File_sync(fh, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_sync(fh, ierr)
  offset = mod(rank + 1, nproc) * 16
  call MPI_File_read_at(fh, offset, got, 4, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  call check(got(1) == mod(rank + 1, nproc) .and. got(4) == got(1) + 300, 'file read back')
  call MPI_File_get_size(fh, fsize, ierr)
  call check(fsize == 16 * nproc, 'file size')
  call MPI_File_close(fh, ierr)
  call check(fh == MPI_FILE_NULL, 'file closed')
  ! A Fortran error handler on a file opened read-only: writing is MPI_ERR_READ_ONLY/ACCESS.
  call MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, fh, ierr)
  call MPI_File_create_errhandler(on_file_error, eh, ierr)
  call MPI_File_set_errhandler(fh, eh, ierr)
  call MPI_File_write(fh, buf, 4, MPI_INTEGER, status, ierr)
  call check(file_errors == 1, 'file error handler called')
  call MPI_Error_class(file_code, cls, ierr)
  call check(cls == MPI_ERR_READ_ONLY .or. cls == MPI_ERR_ACCESS, 'file error class')
  call MPI_File_close(fh, ierr)
  call MPI_Errhandler_free(eh, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) call MPI_File_delete(path, MPI_INFO_NULL, ierr)

  ! A periodic grid from LOGICALs, read back.
  dims = 0
  call MPI_Dims_create(nproc, 2, dims, ierr)
  periods = (/ .true., .false. /)
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
  call MPI_Cart_get(cart, 2, dims, cperiods, coords, ierr)
  call check(cperiods(1) .and. .not. cperiods(2), 'cart periods')
  call MPI_Cart_rank(cart, coords, i, ierr)
  call check(i == rank, 'cart rank')
  call MPI_Comm_free(cart, ierr)

  call MPI_Finalize(ierr)
  if (rank == 0) print '(a)', 'PASS f77_more'
end program
