! Post-stack-style inversion through the Fortran module:
!
!     min ||d - G m||^2 + eps^2 ||D_x m||^2 + damp^2 ||m||^2,     G = 1/2 W D_t
!
! m(NT, NX) is a 2-D section of log-impedance contrasts, NX traces of NT samples, split in whole
! traces (the last Fortran dimension) over the ranks. D_t is the distributed first derivative
! along t (dimension 1), W the convolution of every trace with a Ricker wavelet, written as a
! Fortran callback (one per rank, over its traces), and D_x the first derivative along x
! (dimension 2, across ranks), the regulariser. CGLS solves the stacked operator [G; eps D_x]
! from d = G m_true and prints its iteration table; rank 0 writes the inverted section to
! poststack_inversion_f.txt (NT lines of NX values).
!
! Check: rank 0 solves the normal equations (G^T G + eps^2 D_x^T D_x + damp^2 I) m = G^T d
! serially (Cholesky) and the program prints VERIFIED (exit 0) only if both agree to 1e-8.
!
!   mpiexec -n 4 ./poststack_inversion_f
module wavelet_op
  use, intrinsic :: iso_c_binding
  implicit none
  integer, parameter :: NT = 48, NX = 16, NW = 21
  type :: convolution
    real(c_double) :: w(NW)     ! the wavelet, centred on w(NW/2 + 1)
  end type
contains
  pure function ricker() result(w)
    real(c_double) :: w(NW), a
    integer :: k
    do k = 1, NW
      a = 3.14159265358979324_c_double * 20 * 0.004_c_double * (k - 1 - NW / 2)
      w(k) = (1 - 2 * a**2) * exp(-a**2)
    end do
  end function

  ! y(:, j) = w * x(:, j) for every local trace j, truncated at the trace ends
  subroutine convolve(ctx, x, y, ierr)
    class(*), intent(inout) :: ctx
    real(c_double), intent(in) :: x(:)
    real(c_double), intent(out) :: y(:)
    integer, intent(inout) :: ierr
    integer :: i, k, j0
    select type (ctx)
    type is (convolution)
      y = 0
      do j0 = 0, size(x) - NT, NT
        do i = 1, NT
          do k = max(1, i - NW / 2), min(NT, i + NW / 2)
            y(j0 + i) = y(j0 + i) + ctx%w(i - k + NW / 2 + 1) * x(j0 + k)
          end do
        end do
      end do
    class default
      ierr = 1
    end select
  end subroutine

  ! the adjoint: y(:, j) = w^T x(:, j)
  subroutine correlate(ctx, x, y, ierr)
    class(*), intent(inout) :: ctx
    real(c_double), intent(in) :: x(:)
    real(c_double), intent(out) :: y(:)
    integer, intent(inout) :: ierr
    integer :: i, k, j0
    select type (ctx)
    type is (convolution)
      y = 0
      do j0 = 0, size(x) - NT, NT
        do i = 1, NT
          do k = max(1, i - NW / 2), min(NT, i + NW / 2)
            y(j0 + k) = y(j0 + k) + ctx%w(i - k + NW / 2 + 1) * x(j0 + i)
          end do
        end do
      end do
    class default
      ierr = 1
    end select
  end subroutine
end module

program poststack_inversion_f
  use mpi_f08
  use pylopsmpi
  use wavelet_op
  implicit none
  integer(c_int64_t), parameter :: NM = NT * NX
  real(c_double), parameter :: EPS = 0.5_c_double, DAMP = 0.05_c_double, TOL = 1d-24
  type(plm_comm) :: comm
  type(plm_op) :: w(1), wop, dt, dx, wd, g, epsdx, op
  type(plm_array) :: m, mt, d, zero
  type(plm_stacked) :: ys, xs
  type(plm_solver_info) :: info
  real(c_double), pointer :: p(:), p2(:, :)
  real(c_double), allocatable :: mg(:, :), dg(:, :), mref(:), none(:)
  integer(c_int64_t) :: nloc, off, iters, lshape(1)
  integer :: me, np, j, reason, unit
  real(c_double) :: rel

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, me)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  call plm_comm_create(MPI_COMM_WORLD, comm)

  ! G = 1/2 W D_t; the regulariser eps D_x; the stack [G; eps D_x]
  call plm_op_first_derivative(comm, PLM_FLOAT64, [int(NT, c_int64_t), int(NX, c_int64_t)], -1_c_int64_t, 1, &
                               1.0_c_double, PLM_DERIV_CENTERED, 3, 1, dt)
  call plm_op_first_derivative(comm, PLM_FLOAT64, [int(NT, c_int64_t), int(NX, c_int64_t)], -1_c_int64_t, 2, &
                               1.0_c_double, PLM_DERIV_CENTERED, 3, 1, dx)
  call plm_op_new_domain_array(dt, mt)
  call plm_array_local_shape(mt, lshape)
  nloc = lshape(1)
  call plm_op_callback(nloc, nloc, convolve, correlate, convolution(w=ricker()), w(1))
  call plm_op_blockdiag(comm, w, wop)
  call plm_op_product(wop, dt, wd)
  call plm_op_scale(wd, 0.5_c_double, g)
  call plm_op_scale(dx, EPS, epsdx)
  call plm_op_stacked_vstack([g, epsdx], op)

  ! the true model: three layers, the middle one dipping; its local traces m(:, off+1 : off+nloc/NT)
  call plm_array_local_offset(mt, off)          ! in elements along the 1-D domain
  call plm_array_get_local_write(mt, p)
  p2(1:NT, 1:nloc / NT) => p
  do j = 1, int(nloc / NT)
    p2(:, j) = layers(int(off / NT) + j)
  end do
  call plm_array_restore_local_write(mt, p)
  call plm_op_new_domain_array(g, m)
  call plm_op_new_range_array(g, d)
  call plm_op_new_range_array(epsdx, zero)
  call plm_op_apply(g, mt, d)
  call plm_array_fill(zero, 0.0_c_double)
  call plm_array_fill(m, 0.0_c_double)
  call plm_stacked_create([d, zero], ys)
  call plm_stacked_create([m], xs)

  call plm_solver_info_create(info)
  call plm_solver_info_set_show(info, .true.)
  call plm_solve_cgls_stacked(op, ys, xs, 2 * NM, DAMP, TOL, info)
  call plm_solver_info_get(info, reason, iters)

  ! gather the result and the data on rank 0, write the section, check it
  allocate(none(0))
  if (me == 0) then
    allocate(mg(NT, NX), dg(NT, NX))
    call plm_array_gather_to(m, 0, mg)
    call plm_array_gather_to(d, 0, dg)
    open(newunit=unit, file='poststack_inversion_f.txt', status='replace', action='write')
    do j = 1, NT
      write(unit, '(*(es14.6))') mg(j, :)
    end do
    close(unit)
    mref = serial_solution(reshape(dg, [NM]))
    rel = maxval(abs(reshape(mg, [NM]) - mref)) / maxval(abs(mref))
    write(*, '(a,i0,a,i0,a,i0,a,es9.2)') 'poststack_inversion_f: ', np, ' ranks, ', iters, ' iterations (reason ', &
                                        reason, '); max error vs the serial normal equations, relative: ', rel
    write(*, '(a)') 'poststack_inversion_f: the inverted section is in poststack_inversion_f.txt'
    if (rel < 1d-8) write(*, '(a)') 'VERIFIED'
  else
    call plm_array_gather_to(m, 0, none)
    call plm_array_gather_to(d, 0, none)
  end if
  call MPI_Bcast(rel, 1, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD)

  call plm_solver_info_destroy(info)
  call plm_stacked_destroy(ys)
  call plm_stacked_destroy(xs)
  call plm_array_destroy(m)
  call plm_array_destroy(mt)
  call plm_array_destroy(d)
  call plm_array_destroy(zero)
  call plm_op_destroy(w(1))
  call plm_op_destroy(wop)
  call plm_op_destroy(dt)
  call plm_op_destroy(dx)
  call plm_op_destroy(wd)
  call plm_op_destroy(g)
  call plm_op_destroy(epsdx)
  call plm_op_destroy(op)
  call plm_comm_destroy(comm)
  call MPI_Finalize()
  if (rel >= 1d-8) error stop 1

contains

  ! trace j of the true model
  pure function layers(j) result(t)
    integer, intent(in) :: j
    real(c_double) :: t(NT)
    integer :: i
    do i = 1, NT
      t(i) = 0
      if (i > 12 + j / 4) t(i) = 0.4_c_double
      if (i > 32) t(i) = -0.2_c_double
    end do
  end function

  ! d/dt (centered, one-sided ends) as an n x n matrix
  pure function derivative_matrix(n) result(a)
    integer, intent(in) :: n
    real(c_double) :: a(n, n)
    integer :: i
    a = 0
    do i = 2, n - 1
      a(i, i - 1) = -0.5_c_double
      a(i, i + 1) = 0.5_c_double
    end do
    a(1, 1:2) = [-1.0_c_double, 1.0_c_double]
    a(n, n - 1:n) = [-1.0_c_double, 1.0_c_double]
  end function

  ! The serial reference: the normal equations, by Cholesky, in float64.
  function serial_solution(dv) result(x)
    real(c_double), intent(in) :: dv(:)
    real(c_double) :: x(NM)
    real(c_double), allocatable :: gm(:, :), nm_(:, :), l(:, :), rhs(:), wt(:, :), dxm(:, :), ddx(:, :)
    integer :: i, k, j1, j2
    type(convolution) :: c
    integer :: ierr
    c%w = ricker()
    ! one trace's block 1/2 W D_t, column by column through the callback itself
    allocate(wt(NT, NT))
    do k = 1, NT
      block
        real(c_double) :: e(NT)
        e = 0
        e(k) = 1
        call convolve(c, e, wt(:, k), ierr)
      end block
    end do
    wt = 0.5_c_double * matmul(wt, derivative_matrix(NT))
    allocate(gm(NM, NM), dxm(NM, NM))
    gm = 0
    do j1 = 0, NX - 1
      gm(j1 * NT + 1:(j1 + 1) * NT, j1 * NT + 1:(j1 + 1) * NT) = wt
    end do
    ! D_x acts on sample i of every trace: kron(derivative_matrix(NX), I_NT)
    ddx = derivative_matrix(NX)
    dxm = 0
    do j1 = 1, NX
      do j2 = 1, NX
        if (ddx(j1, j2) /= 0) then
          do i = 1, NT
            dxm((j1 - 1) * NT + i, (j2 - 1) * NT + i) = ddx(j1, j2)
          end do
        end if
      end do
    end do
    nm_ = matmul(transpose(gm), gm) + EPS**2 * matmul(transpose(dxm), dxm)
    do i = 1, int(NM)
      nm_(i, i) = nm_(i, i) + DAMP**2
    end do
    rhs = matmul(transpose(gm), dv)
    ! Cholesky: nm_ = l l^T, then two triangular solves
    allocate(l(NM, NM))
    l = 0
    do k = 1, int(NM)
      l(k, k) = sqrt(nm_(k, k) - sum(l(k, 1:k - 1)**2))
      do i = k + 1, int(NM)
        l(i, k) = (nm_(i, k) - sum(l(i, 1:k - 1) * l(k, 1:k - 1))) / l(k, k)
      end do
    end do
    do i = 1, int(NM)
      x(i) = (rhs(i) - sum(l(i, 1:i - 1) * x(1:i - 1))) / l(i, i)
    end do
    do i = int(NM), 1, -1
      x(i) = (x(i) - sum(l(i + 1:, i) * x(i + 1:))) / l(i, i)
    end do
  end function
end program
