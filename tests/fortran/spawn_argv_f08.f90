! MPI_Comm_spawn and MPI_Comm_spawn_multiple from `use mpi_f08` with arguments: the job spawns
! two copies of this program with argv ['child', 'two words', 'x'] (the blank entry after them
! ends the list; trailing blanks are not part of an argument), then one copy each of two commands
! with their own arguments (array_of_argv(i, j): argument j of command i). Every child checks
! the arguments it was started with and sends its verdict to the parents' rank 0, which checks
! that all children answered. Prints "PASS spawn_argv_f08" on rank 0 of the first job.
program spawn_argv_f08
  use mpi_f08
  implicit none
  type(MPI_Comm) :: parent, inter
  character(len=256) :: exe
  character(len=16) :: argv(4), argvs(2, 3), arg
  integer :: rank, i, verdict, errcodes(2)
  integer(MPI_ADDRESS_KIND) :: appnum
  logical :: flag
  call MPI_Init()
  call MPI_Comm_get_parent(parent)
  if (parent /= MPI_COMM_NULL) then
    ! A child: argument 1 says which spawn made it.
    verdict = 1
    call get_command_argument(1, arg)
    if (arg == 'child') then
      if (command_argument_count() /= 3) verdict = 0
      call get_command_argument(2, arg)
      if (arg /= 'two words') verdict = 0
      call get_command_argument(3, arg, i)
      if (arg /= 'x' .or. i /= 1) verdict = 0
    else
      call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, appnum, flag)
      if (.not. flag .or. command_argument_count() /= 2 - appnum) verdict = 0
      if (arg /= merge('multi-a', 'multi-b', appnum == 0)) verdict = 0
      if (appnum == 0) then
        call get_command_argument(2, arg)
        if (arg /= 'second') verdict = 0
      end if
    end if
    call MPI_Send(verdict, 1, MPI_INTEGER, 0, 5, parent)
    call MPI_Comm_disconnect(parent)
    call MPI_Finalize()
    stop
  end if
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call get_command_argument(0, exe)
  argv = [character(len=16) :: 'child', 'two words', 'x   ', ' ']
  call MPI_Comm_spawn(exe, argv, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, errcodes)
  if (any(errcodes /= MPI_SUCCESS)) call fail('MPI_Comm_spawn reported errors')
  call collect(inter, 2, 'MPI_Comm_spawn')
  ! Command 1 gets 'multi-a' 'second', command 2 'multi-b'; a blank entry ends each list.
  argvs = ' '
  argvs(1, 1:2) = [character(len=16) :: 'multi-a', 'second']
  argvs(2, 1) = 'multi-b'
  call MPI_Comm_spawn_multiple(2, [exe, exe], argvs, [1, 1], [MPI_INFO_NULL, MPI_INFO_NULL], 0, &
                               MPI_COMM_WORLD, inter, errcodes)
  if (any(errcodes /= MPI_SUCCESS)) call fail('MPI_Comm_spawn_multiple reported errors')
  call collect(inter, 2, 'MPI_Comm_spawn_multiple')
  call MPI_Finalize()
  if (rank == 0) print '(a)', 'PASS spawn_argv_f08'
contains
  ! Rank 0 hears from each of the n children that their arguments were right.
  subroutine collect(inter, n, what)
    type(MPI_Comm), intent(inout) :: inter
    integer, intent(in) :: n
    character(len=*), intent(in) :: what
    integer :: k, verdict
    type(MPI_Status) :: status
    if (rank == 0) then
      do k = 1, n
        call MPI_Recv(verdict, 1, MPI_INTEGER, MPI_ANY_SOURCE, 5, inter, status)
        if (verdict /= 1) call fail(what // ': a child got the wrong arguments')
      end do
    end if
    call MPI_Comm_disconnect(inter)
  end subroutine
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a,a,a,i0)', 'FAIL spawn_argv_f08: ', what, ' on rank ', rank
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine
end program
