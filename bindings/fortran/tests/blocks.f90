! Dense blocks as Fortran callback operators, shared by the Fortran tests: block b (global
! index, from 1) is rows_of(b) x cols_of(b) with a(i,j) = 1/(i + j + b) + (i == j) * (2 + b).
module plm_fblocks
  use, intrinsic :: iso_c_binding
  implicit none
  type :: dense_block
    real(c_double), allocatable :: a(:, :)
    integer :: fail_rank = -1, rank = 0   ! the callback fails on fail_rank
  end type

contains

  pure integer function rows_of(b)
    integer, intent(in) :: b
    rows_of = 3 + mod(b, 3)
  end function
  pure integer function cols_of(b)
    integer, intent(in) :: b
    cols_of = 2 + mod(b, 2)
  end function

  function block_matrix(b) result(a)
    integer, intent(in) :: b
    real(c_double), allocatable :: a(:, :)
    integer :: i, j
    allocate(a(rows_of(b), cols_of(b)))
    do j = 1, cols_of(b)
      do i = 1, rows_of(b)
        a(i, j) = 1.0_c_double / (i + j + b)
        if (i == j) a(i, j) = a(i, j) + 2 + b
      end do
    end do
  end function

  subroutine block_matvec(ctx, x, y, ierr)
    class(*), intent(inout) :: ctx
    real(c_double), intent(in) :: x(:)
    real(c_double), intent(out) :: y(:)
    integer, intent(inout) :: ierr
    select type (ctx)
    type is (dense_block)
      if (ctx%rank == ctx%fail_rank) then
        ierr = 7
        return
      end if
      y = matmul(ctx%a, x)
    end select
  end subroutine

  subroutine block_rmatvec(ctx, x, y, ierr)
    class(*), intent(inout) :: ctx
    real(c_double), intent(in) :: x(:)
    real(c_double), intent(out) :: y(:)
    integer, intent(inout) :: ierr
    select type (ctx)
    type is (dense_block)
      if (ctx%rank == ctx%fail_rank) then
        ierr = 7
        return
      end if
      y = matmul(x, ctx%a)
    end select
  end subroutine
end module plm_fblocks
