! MPI_Register_datarep from `use mpi_f08`: the program's conversion functions, called through
! the Fortran library's trampolines when a file view names the representation. "bbplus" keeps
! each integer in the file plus extra_state (1000): every rank writes its four integers through
! a "bbplus" view, reads the raw file through a "native" view (each + 1000: the write function
! ran), then through "bbplus" again (the integers: the read function ran). A representation
! with MPI_CONVERSION_FN_NULL moves the data as it is; one of null conversions whose integer is 8
! bytes in the file is refused at MPI_File_set_view (sizes that change need both functions: the
! C suite's datarep.c tests those); a second registration of a name fails. Prints
! "PASS datarep_f08" on rank 0.
module datarep_f08_conversions
  use mpi_f08
  use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
  implicit none
  integer :: reads = 0, writes = 0, extents = 0
contains
  subroutine write_plus(userbuf, datatype, count, filebuf, position, extra_state, ierror)
    type(c_ptr), value :: userbuf, filebuf
    type(MPI_Datatype) :: datatype
    integer :: count, ierror
    integer(MPI_OFFSET_KIND) :: position
    integer(MPI_ADDRESS_KIND) :: extra_state
    integer, pointer :: user(:), file(:)
    ierror = MPI_ERR_TYPE
    if (datatype /= MPI_INTEGER) return
    call c_f_pointer(userbuf, user, [position + count])
    call c_f_pointer(filebuf, file, [count])
    file = user(position + 1:position + count) + int(extra_state)
    writes = writes + 1
    ierror = MPI_SUCCESS
  end subroutine
  subroutine read_plus(userbuf, datatype, count, filebuf, position, extra_state, ierror)
    type(c_ptr), value :: userbuf, filebuf
    type(MPI_Datatype) :: datatype
    integer :: count, ierror
    integer(MPI_OFFSET_KIND) :: position
    integer(MPI_ADDRESS_KIND) :: extra_state
    integer, pointer :: user(:), file(:)
    ierror = MPI_ERR_TYPE
    if (datatype /= MPI_INTEGER) return
    call c_f_pointer(userbuf, user, [position + count])
    call c_f_pointer(filebuf, file, [count])
    user(position + 1:position + count) = file - int(extra_state)
    reads = reads + 1
    ierror = MPI_SUCCESS
  end subroutine
  subroutine extent_4(datatype, extent, extra_state, ierror)
    type(MPI_Datatype) :: datatype
    integer(MPI_ADDRESS_KIND) :: extent, extra_state
    integer :: ierror
    extent = 4
    if (extra_state /= 1000) extent = -1
    extents = extents + 1
    ierror = MPI_SUCCESS
  end subroutine
  subroutine extent_8(datatype, extent, extra_state, ierror)
    type(MPI_Datatype) :: datatype
    integer(MPI_ADDRESS_KIND) :: extent, extra_state
    integer :: ierror
    extent = 8
    ierror = MPI_SUCCESS
  end subroutine
end module

program datarep_f08
  use mpi_f08
  use datarep_f08_conversions
  implicit none
  type(MPI_File) :: fh
  integer :: rank, p, i, ierr, pid, vals(4), got(4)
  integer(MPI_OFFSET_KIND) :: at
  integer(MPI_ADDRESS_KIND) :: extent
  character(len=64) :: name
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, p)
  pid = getpid()
  call MPI_Bcast(pid, 1, MPI_INTEGER, 0, MPI_COMM_WORLD)
  write (name, '(a,i0)') '/tmp/bb-datarep-f08-', pid

  call MPI_Register_datarep('bbplus', read_plus, write_plus, extent_4, 1000_MPI_ADDRESS_KIND)
  call MPI_Register_datarep('bbplus', read_plus, write_plus, extent_4, 1000_MPI_ADDRESS_KIND, ierr)
  if (ierr /= MPI_ERR_DUP_DATAREP) call fail('a second registration of bbplus was not refused')
  call MPI_Register_datarep('bbnull', MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, extent_4, &
                            1000_MPI_ADDRESS_KIND)
  call MPI_Register_datarep('bbwide', MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, extent_8, &
                            0_MPI_ADDRESS_KIND)

  call MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh)
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'bbplus', MPI_INFO_NULL)
  if (extents == 0) call fail('MPI_File_set_view did not ask the extent function')
  call MPI_File_get_type_extent(fh, MPI_INTEGER, extent)
  if (extent /= 4) call fail('MPI_File_get_type_extent of a user representation')
  vals = [(100 * rank + i, i = 1, 4)]
  at = 4 * rank
  call MPI_File_write_at(fh, at, vals, 4, MPI_INTEGER, MPI_STATUS_IGNORE)
  if (writes == 0) call fail('the write conversion function was not called')
  call MPI_File_sync(fh)
  call MPI_Barrier(MPI_COMM_WORLD)
  call MPI_File_sync(fh)
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'native', MPI_INFO_NULL)
  call MPI_File_read_at(fh, at, got, 4, MPI_INTEGER, MPI_STATUS_IGNORE)
  if (any(got /= vals + 1000)) call fail('the file does not hold what the write function made')
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'bbplus', MPI_INFO_NULL)
  got = -1
  call MPI_File_read_at(fh, at, got, 4, MPI_INTEGER, MPI_STATUS_IGNORE)
  if (reads == 0) call fail('the read conversion function was not called')
  if (any(got /= vals)) call fail('what the read function made of the file')

  ! MPI_CONVERSION_FN_NULL: no conversion either way.
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'bbnull', MPI_INFO_NULL)
  call MPI_File_write_at(fh, at, vals, 4, MPI_INTEGER, MPI_STATUS_IGNORE)
  got = -1
  call MPI_File_read_at(fh, at, got, 4, MPI_INTEGER, MPI_STATUS_IGNORE)
  if (any(got /= vals)) call fail('a representation of MPI_CONVERSION_FN_NULL converted')

  ! An integer of 8 bytes in the file that no function converts: refused.
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'bbwide', MPI_INFO_NULL, ierr)
  if (ierr == MPI_SUCCESS) call fail('a view whose etype changes size unconverted was accepted')
  call MPI_Error_class(ierr, i)
  if (i /= MPI_ERR_UNSUPPORTED_DATAREP) call fail('bbwide refused with another class')

  call MPI_File_close(fh)
  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) call MPI_File_delete(name, MPI_INFO_NULL)
  call MPI_Finalize()
  if (rank == 0) print '(a)', 'PASS datarep_f08'
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a,a,a,i0)', 'FAIL datarep_f08: ', what, ' on rank ', rank
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine
end program
