! Operators through the module, forward and adjoint against serial references built here:
!  1. a block-diagonal of Fortran callback operators (rank r holds blocks 2r+1 and 2r+2, and
!     rank 1 also an empty 0 x 0 identity block), plus the dot test;
!  2. the first derivative (centered, order 3, and forward) of a 2-D model (n1, n2), distributed
!     in slabs of dimension 2, along dimension 2 (across ranks) and dimension 1 (local).
program test_f_ops
  use plm_ftest
  use plm_fblocks
  implicit none
  type(plm_comm) :: comm
  call start(comm)
  call check_blockdiag()
  call check_derivative(PLM_DERIV_CENTERED, 2)
  call check_derivative(PLM_DERIV_CENTERED, 1)
  call check_derivative(PLM_DERIV_FORWARD, 2)
  call finish(comm, 'test_f_ops')

contains

  subroutine check_blockdiag()
    type(plm_op), allocatable :: ops(:)
    type(plm_op) :: a
    type(plm_array) :: x, y
    type(dense_block) :: blk
    real(c_double), allocatable :: xg(:), yg(:), xr(:), yr(:), full(:, :)
    real(c_double) :: none(0)
    integer :: b, nblocks, m, n, i0, j0
    logical :: passed
    ! the global matrix: blocks 1 .. 2 np on the diagonal
    nblocks = 2 * np
    m = sum([(rows_of(b), b = 1, nblocks)])
    n = sum([(cols_of(b), b = 1, nblocks)])
    allocate(full(m, n), xg(n), yg(m), xr(n), yr(m))
    full = 0
    i0 = 0
    j0 = 0
    do b = 1, nblocks
      full(i0 + 1:i0 + rows_of(b), j0 + 1:j0 + cols_of(b)) = block_matrix(b)
      i0 = i0 + rows_of(b)
      j0 = j0 + cols_of(b)
    end do
    xg = [(sin(real(i0, c_double)), i0 = 1, n)]
    yg = [(cos(real(i0, c_double)), i0 = 1, m)]

    allocate(ops(merge(3, 2, me == 1)))
    do b = 1, 2
      blk%a = block_matrix(2 * me + b)
      call plm_op_callback(int(size(blk%a, 1), c_int64_t), int(size(blk%a, 2), c_int64_t), block_matvec, &
                           block_rmatvec, blk, ops(b))
    end do
    if (me == 1) call plm_op_identity(PLM_FLOAT64, 0_c_int64_t, ops(3))
    call plm_op_blockdiag(comm, ops, a)
    do b = 1, size(ops)
      call plm_op_destroy(ops(b))   ! the block-diagonal keeps its parts
    end do
    call plm_op_new_domain_array(a, x)
    call plm_op_new_range_array(a, y)
    call plm_array_set_global(x, xg)
    call plm_op_apply(a, x, y)
    if (me == 0) then
      call plm_array_gather_to(y, 0, yr)
      call expect_close(yr, matmul(full, xg), 1d-14, 'blockdiag of Fortran callbacks: forward')
    else
      call plm_array_gather_to(y, 0, none)
    end if
    call plm_array_set_global(y, yg)
    call plm_op_apply_adjoint(a, y, x)
    if (me == 0) then
      call plm_array_gather_to(x, 0, xr)
      call expect_close(xr, matmul(yg, full), 1d-14, 'blockdiag of Fortran callbacks: adjoint')
    else
      call plm_array_gather_to(x, 0, none)
    end if
    call plm_op_dottest(a, 1d-12, passed)
    call expect(passed, 'blockdiag of Fortran callbacks: dot test')
    call plm_array_destroy(x)
    call plm_array_destroy(y)
    call plm_op_destroy(a)
  end subroutine

  ! The serial derivative along dimension dim of x(n1, n2) (PyLops' FirstDerivative, edge 0).
  function serial_derivative(x, dim, kind, sampling) result(y)
    real(c_double), intent(in) :: x(:, :)
    integer, intent(in) :: dim, kind
    real(c_double), intent(in) :: sampling
    real(c_double) :: y(size(x, 1), size(x, 2))
    integer :: n, i
    y = 0
    n = size(x, dim)
    do i = 1, n
      if (kind == PLM_DERIV_CENTERED) then
        if (i == 1 .or. i == n) cycle
        if (dim == 1) then
          y(i, :) = (x(i + 1, :) - x(i - 1, :)) / 2 / sampling
        else
          y(:, i) = (x(:, i + 1) - x(:, i - 1)) / 2 / sampling
        end if
      else
        if (i == n) cycle
        if (dim == 1) then
          y(i, :) = (x(i + 1, :) - x(i, :)) / sampling
        else
          y(:, i) = (x(:, i + 1) - x(:, i)) / sampling
        end if
      end if
    end do
  end function

  subroutine check_derivative(kind, dim)
    integer, intent(in) :: kind, dim
    integer(c_int64_t), parameter :: n1 = 4, n2 = 9
    real(c_double), parameter :: dx = 0.5_c_double
    type(plm_op) :: d
    type(plm_array) :: x, y
    real(c_double) :: xg(n1, n2), yg(n1, n2), full(n1 * n2, n1 * n2), e(n1, n2), r(n1, n2), none(0), yref(n1 * n2)
    real(c_double), pointer :: p1(:), p2(:, :)
    integer(c_int64_t) :: lshape(1), off
    integer :: i, j, k
    character(len=40) :: what
    write(what, '(a,i0,a,i0)') 'first derivative kind ', kind, ' dim ', dim
    do j = 1, int(n2)
      do i = 1, int(n1)
        xg(i, j) = sin(0.3_c_double * i) + j**2
        yg(i, j) = cos(0.7_c_double * i * j)
      end do
    end do
    ! the serial matrix, column by column
    do k = 1, int(n1 * n2)
      e = 0
      e(mod(k - 1, int(n1)) + 1, (k - 1) / int(n1) + 1) = 1
      r = serial_derivative(e, dim, kind, dx)
      full(:, k) = reshape(r, [n1 * n2])
    end do
    call plm_op_first_derivative(comm, PLM_FLOAT64, [n1, n2], -1_c_int64_t, dim, dx, kind, 3, 0, d)
    call plm_op_new_domain_array(d, x)
    call plm_op_new_range_array(d, y)
    ! the domain is 1-D: this rank's slabs xg(:, off+1 : off+nloc), seen as a 2-D pointer
    call plm_array_local_shape(x, lshape)
    off = 0
    do i = 0, me - 1
      off = off + default_rows(n2, i, np)
    end do
    call expect(lshape(1) == n1 * default_rows(n2, me, np), trim(what) // ': local size of whole slabs')
    call plm_array_get_local_write(x, p1)
    p2(1:n1, 1:lshape(1) / n1) => p1
    p2 = xg(:, off + 1:off + lshape(1) / n1)
    call plm_array_restore_local_write(x, p1)
    call plm_op_apply(d, x, y)
    call plm_array_get_local_read(y, p1)
    yref = matmul(full, reshape(xg, [n1 * n2]))
    call expect_close(p1, yref(off * n1 + 1:off * n1 + lshape(1)), 1d-13, trim(what) // ': forward')
    call plm_array_restore_local_read(y, p1)
    call plm_array_set_global(y, yg)
    call plm_op_apply_adjoint(d, y, x)
    if (me == 0) then
      call plm_array_gather_to(x, 0, r)
      call expect_close(reshape(r, [n1 * n2]), matmul(reshape(yg, [n1 * n2]), full), 1d-13, trim(what) // ': adjoint')
    else
      call plm_array_gather_to(x, 0, none)
    end if
    call plm_array_destroy(x)
    call plm_array_destroy(y)
    call plm_op_destroy(d)
  end subroutine
end program
