! Helpers of the Fortran tests: checks counted per rank, one verdict reduced over every rank.
module plm_ftest
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use pylopsmpi
  implicit none
  integer :: failures = 0, me = 0, np = 1

contains

  subroutine start(comm)
    type(plm_comm), intent(out) :: comm
    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, me)
    call MPI_Comm_size(MPI_COMM_WORLD, np)
    call plm_check_version()
    call plm_comm_create(MPI_COMM_WORLD, comm)
  end subroutine

  subroutine expect(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      failures = failures + 1
      write(*, '(a,i0,a)') 'rank ', me, ': FAILED: ' // what
    end if
  end subroutine

  ! max |a - b| <= tol (1 + max |b|)
  subroutine expect_close(a, b, tol, what)
    real(c_double), intent(in) :: a(:), b(:)
    real(c_double), intent(in) :: tol
    character(len=*), intent(in) :: what
    real(c_double) :: err
    if (size(a) /= size(b)) then
      call expect(.false., what // ' (sizes differ)')
      return
    end if
    err = 0
    if (size(a) > 0) err = maxval(abs(a - b)) / (1 + maxval(abs(b)))
    if (err > tol) write(*, '(a,i0,a,es10.3)') 'rank ', me, ': ' // what // ': relative error ', err
    call expect(err <= tol, what)
  end subroutine

  ! Every rank got the same non-zero ierr, equal to `want` (0: any non-zero).
  subroutine expect_agreed(ierr, want, what)
    integer, intent(in) :: ierr, want
    character(len=*), intent(in) :: what
    integer :: lo, hi
    call MPI_Allreduce(ierr, lo, 1, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD)
    call MPI_Allreduce(ierr, hi, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
    call expect(lo == hi .and. lo /= 0, what // ': the same error on every rank')
    if (want /= 0) call expect(ierr == want, what // ': the expected status')
  end subroutine

  subroutine finish(comm, name)
    type(plm_comm), intent(inout) :: comm
    character(len=*), intent(in) :: name
    integer :: total
    call plm_comm_destroy(comm)
    call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    if (me == 0) then
      if (total == 0) then
        write(*, '(a,i0,a)') name // ': all checks passed at ', np, ' ranks'
      else
        write(*, '(a,i0,a)') name // ': ', total, ' checks FAILED'
      end if
    end if
    call MPI_Finalize()
    if (total /= 0) error stop 1
  end subroutine

  ! Rows of an n split over np ranks the library's default way (axis 0, C order): the first
  ! mod(n, np) ranks get one more.
  pure integer(c_int64_t) function default_rows(n, rank, nranks)
    integer(c_int64_t), intent(in) :: n
    integer, intent(in) :: rank, nranks
    default_rows = n / nranks
    if (rank < mod(n, int(nranks, c_int64_t))) default_rows = default_rows + 1
  end function
end module plm_ftest
