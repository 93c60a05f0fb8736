! Solvers through the module against serial references computed here:
!  1. CGLS on a block-diagonal of Fortran callback blocks (rank r: blocks 2r+1, 2r+2), damped:
!     the reference solves each block's normal equations (A^T A + damp^2 I) x = A^T y;
!  2. FISTA on a block-diagonal of diagonals d: the reference is the minimiser
!     x_i = soft(d_i y_i, eps/2) / d_i^2 (threshold eps alpha / 2 per step of alpha).
program test_f_solvers
  use plm_ftest
  use plm_fblocks
  implicit none
  type(plm_comm) :: comm
  call start(comm)
  call check_cgls()
  call check_fista()
  call finish(comm, 'test_f_solvers')

contains

  ! Solves s x = b (s symmetric positive definite) by Gaussian elimination without pivoting.
  function spd_solve(s, b) result(x)
    real(c_double), intent(in) :: s(:, :), b(:)
    real(c_double) :: x(size(b)), a(size(b), size(b)), r(size(b))
    integer :: i, k, n
    a = s
    r = b
    n = size(b)
    do k = 1, n
      do i = k + 1, n
        r(i) = r(i) - a(i, k) / a(k, k) * r(k)
        a(i, :) = a(i, :) - a(i, k) / a(k, k) * a(k, :)
      end do
    end do
    do i = n, 1, -1
      x(i) = (r(i) - dot_product(a(i, i + 1:), x(i + 1:))) / a(i, i)
    end do
  end function

  subroutine check_cgls()
    real(c_double), parameter :: damp = 0.3_c_double
    type(plm_op) :: ops(2), a
    type(plm_array) :: x, y
    type(plm_solver_info) :: info
    type(dense_block) :: blk
    real(c_double), allocatable :: ab(:, :), xr(:), yl(:)
    real(c_double), pointer :: p(:)
    integer :: b, i, at, reason
    integer(c_int64_t) :: iters
    allocate(xr(0), yl(0))
    do b = 1, 2
      blk%a = block_matrix(2 * me + b)
      call plm_op_callback(int(size(blk%a, 1), c_int64_t), int(size(blk%a, 2), c_int64_t), block_matvec, &
                           block_rmatvec, blk, ops(b))
    end do
    call plm_op_blockdiag(comm, ops, a)
    call plm_op_destroy(ops(1))
    call plm_op_destroy(ops(2))
    call plm_op_new_domain_array(a, x)
    call plm_op_new_range_array(a, y)
    ! this rank's data and the serial solution of its blocks
    do b = 1, 2
      ab = block_matrix(2 * me + b)
      at = size(yl)
      yl = [yl, [(1 + 0.1_c_double * (at + i) + me, i = 1, size(ab, 1))]]
      xr = [xr, spd_solve(matmul(transpose(ab), ab) + damp**2 * identity(size(ab, 2)), &
                          matmul(transpose(ab), yl(at + 1:)))]
    end do
    call plm_array_get_local_write(y, p)
    p = yl
    call plm_array_restore_local_write(y, p)
    call plm_array_fill(x, 0.0_c_double)
    call plm_solver_info_create(info)
    call plm_solve_cgls(a, y, x, 100_c_int64_t, damp, 1d-28, info)
    call plm_solver_info_get(info, reason, iters)
    call expect(iters >= 1 .and. iters <= 100, 'cgls: iterations reported')
    call plm_array_get_local_read(x, p)
    call expect_close(p, xr, 1d-10, 'cgls on Fortran callback blocks vs the serial normal equations')
    call plm_array_restore_local_read(x, p)
    call plm_solver_info_destroy(info)
    call plm_array_destroy(x)
    call plm_array_destroy(y)
    call plm_op_destroy(a)
  end subroutine

  function identity(n) result(e)
    integer, intent(in) :: n
    real(c_double) :: e(n, n)
    integer :: i
    e = 0
    do i = 1, n
      e(i, i) = 1
    end do
  end function

  subroutine check_fista()
    real(c_double), parameter :: eps = 0.4_c_double
    integer, parameter :: nloc = 6
    type(plm_op) :: dg(1), a
    type(plm_array) :: x, y
    type(plm_solver_info) :: none
    real(c_double) :: d(nloc), yl(nloc), b(nloc), xr(nloc)
    real(c_double), pointer :: p(:)
    integer :: i
    do i = 1, nloc
      d(i) = 1 + 0.25_c_double * mod(i + me, 4)
      yl(i) = (-1)**i * (0.1_c_double * i + 0.05_c_double * me)
    end do
    b = d * yl
    xr = sign(max(abs(b) - eps / 2, 0.0_c_double), b) / d**2
    call plm_op_diagonal(d, dg(1))
    call plm_op_blockdiag(comm, dg, a)
    call plm_op_destroy(dg(1))
    call plm_op_new_domain_array(a, x)
    call plm_op_new_range_array(a, y)
    call plm_array_get_local_write(y, p)
    p = yl
    call plm_array_restore_local_write(y, p)
    call plm_array_fill(x, 0.0_c_double)
    ! alpha 1 / max d^2 over every rank: 1 / 1.75^2
    call plm_solve_fista(a, y, x, 500_c_int64_t, eps, 1 / 1.75_c_double**2, PLM_THRESH_SOFT, .false., 0.0_c_double, none)
    call plm_array_get_local_read(x, p)
    call expect_close(p, xr, 1d-9, 'fista on a block-diagonal vs the soft-threshold minimiser')
    call plm_array_restore_local_read(x, p)
    call plm_array_destroy(x)
    call plm_array_destroy(y)
    call plm_op_destroy(a)
  end subroutine
end program
