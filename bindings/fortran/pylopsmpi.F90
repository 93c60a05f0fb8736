! module pylopsmpi: the Fortran face of the library (docs/getting-started-fortran.md).
!
! It re-exports the generated module pylopsmpi_c (scripts/gen-fortran: every enum value as a
! parameter, one derived type per handle, a bind(C) interface c_plm_<name> for every public C
! function) and adds routines that make the library feel like Fortran:
!   - every routine is a subroutine with an optional trailing `ierr`: present, it receives the
!     status (PLM_SUCCESS = 0); absent, a failure stops the program (error stop) with the
!     library's message;
!   - communicators enter as type(MPI_Comm) (mpi_f08) or as an integer handle;
!   - shapes are Fortran-ordered (the reverse of the C library's row-major shapes) and the
!     distributed dimension is counted the Fortran way (1..ndim; ndim, the last, is the C
!     library's axis 0 and its default);
!   - local data are rank-1..3 Fortran pointers of the local shape onto the library's memory;
!   - dense matrices are column-major (plm_op_dense's col_major flag; MatrixMult's block is
!     transposed once, at construction);
!   - operator callbacks are ordinary Fortran subroutines on assumed-shape arrays, called through
!     trampolines.
! Collective routines never return early on one rank: a bad Fortran argument is passed on as a
! value the C library refuses, so every rank gets the same status from its agreement.
! Standard: Fortran 2008 + TS 29113 (gfortran >= 9); cpp preprocessed (.F90).
module pylopsmpi
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: error_unit
  use mpi_f08, only: MPI_Comm
  use pylopsmpi_c
  implicit none
  private :: error_unit, MPI_Comm

  ! --- user callbacks ---------------------------------------------------------------------------
  abstract interface
    !> out = A in (matvec) or A^H in (rmatvec), float64. ctx is the operator's own copy of the
    !> context given at creation (select type to use it). Leave ierr 0, or set it non-zero to
    !> fail the apply with PLM_ERR_CALLBACK on every rank.
    subroutine plm_matvec(ctx, x, y, ierr)
      import :: c_double
      class(*), intent(inout) :: ctx
      real(c_double), intent(in) :: x(:)
      real(c_double), intent(out) :: y(:)
      integer, intent(inout) :: ierr
    end subroutine
  end interface

  ! the trampolines' state: one per callback operator, freed by the operator's destroy
  type :: callback_state
    procedure(plm_matvec), pointer, nopass :: matvec => null()
    procedure(plm_matvec), pointer, nopass :: rmatvec => null()
    class(*), allocatable :: ctx
  end type

  interface plm_comm_create
    module procedure comm_create_f08, comm_create_int
  end interface
  interface plm_array_fill
    module procedure fill_real, fill_complex
  end interface
  interface plm_array_scale
    module procedure scale_real, scale_complex
  end interface
  interface plm_array_axpby
    module procedure axpby_real, axpby_complex
  end interface
  interface plm_array_dot
    module procedure dot_real, dot_complex
  end interface
  interface plm_array_vdot
    module procedure vdot_complex
  end interface
  interface plm_array_gather_to
    module procedure gather_r8, gather_c16, gather_r4, gather_c8
  end interface
  interface plm_array_set_global
    module procedure set_global_r8, set_global_c16, set_global_r4, set_global_c8
  end interface
  interface plm_op_diagonal
    module procedure diagonal_r8, diagonal_c16
  end interface
  interface plm_op_dense
    module procedure dense_r8, dense_c16
  end interface
  interface plm_op_matrix_mult
    module procedure matrix_mult_r8, matrix_mult_c16
  end interface
#include "plm_local_generics.inc"

  private :: callback_state, report, fail_here, local_get, local_restore, bytes_of, c_shape, c_axis, &
             f_shape, matvec_trampoline, rmatvec_trampoline, destroy_trampoline
  character(len=*), parameter :: tag = 'pylopsmpi: '

contains

  ! ============================================================================================
  ! errors
  ! ============================================================================================

  !> The library's message for the last failed call on this thread (plm_last_error()).
  function plm_error_message() result(msg)
    character(len=:), allocatable :: msg
    integer(c_int64_t) :: n
    character(kind=c_char) :: buf(4096)
    integer :: i
    n = 0
    if (c_plm_last_error_copy(buf, int(size(buf), c_int64_t), n) /= PLM_SUCCESS) n = 0
    n = min(n, int(size(buf) - 1, c_int64_t))
    allocate(character(len=n) :: msg)
    do i = 1, int(n)
      msg(i:i) = buf(i)
    end do
  end function

  !> The status's name and meaning (plm_status_string()).
  function plm_status_message(status) result(msg)
    integer, intent(in) :: status
    character(len=:), allocatable :: msg
    character(kind=c_char), pointer :: s(:)
    integer :: n
    call c_f_pointer(c_plm_status_string(int(status, c_int)), s, [1024])
    n = 0
    do while (s(n + 1) /= c_null_char)
      n = n + 1
    end do
    allocate(character(len=n) :: msg)
    msg = transfer(s(1:n), msg)
  end function

  ! ierr present: it gets the status. Absent: a failure stops the program with the message.
  subroutine report(status, ierr, what)
    integer(c_int), intent(in) :: status
    integer, intent(out), optional :: ierr
    character(len=*), intent(in) :: what
    if (present(ierr)) then
      ierr = int(status)
    else if (status /= PLM_SUCCESS) then
      write(error_unit, '(a)') tag // what // ': ' // plm_status_message(int(status)) // &
                               new_line('a') // '  ' // plm_error_message()
      flush(error_unit)
      error stop 1
    end if
  end subroutine

  ! An error the Fortran layer finds itself (in a non-collective routine).
  subroutine fail_here(status, ierr, what, why)
    integer(c_int), intent(in) :: status
    integer, intent(out), optional :: ierr
    character(len=*), intent(in) :: what, why
    if (present(ierr)) then
      ierr = int(status)
      return
    end if
    write(error_unit, '(a)') tag // what // ': ' // plm_status_message(int(status)) // new_line('a') // '  ' // why
    flush(error_unit)
    error stop 1
  end subroutine

  !> plm_check_version() with the version of the API description the interfaces come from.
  subroutine plm_check_version(ierr)
    integer, intent(out), optional :: ierr
    call report(c_plm_check_version(PLM_API_VERSION_MAJOR, PLM_API_VERSION_MINOR), ierr, 'plm_check_version')
  end subroutine

  ! ============================================================================================
  ! shapes: Fortran order <-> the C library's row-major order
  ! ============================================================================================

  pure function c_shape(fshape) result(s)
    integer(c_int64_t), intent(in) :: fshape(:)
    integer(c_int64_t) :: s(size(fshape))
    s = fshape(size(fshape):1:-1)
  end function

  pure function f_shape(cshape) result(s)
    integer(c_int64_t), intent(in) :: cshape(:)
    integer(c_int64_t) :: s(size(cshape))
    s = cshape(size(cshape):1:-1)
  end function

  ! Fortran dimension 1..ndim -> C axis ndim-1..0; anything else -> a value C refuses (so the
  ! error is agreed by every rank in the collective call that follows).
  pure integer(c_int) function c_axis(faxis, ndim)
    integer, intent(in) :: faxis, ndim
    if (faxis >= 1 .and. faxis <= ndim) then
      c_axis = int(ndim - faxis, c_int)
    else
      c_axis = -1000_c_int  ! below -PLM_MAX_NDIM
    end if
  end function

  ! ============================================================================================
  ! communicators
  ! ============================================================================================

  !> The library's communicator on a duplicate of `mpicomm` (type(MPI_Comm)). Collective.
  subroutine comm_create_f08(mpicomm, comm, ierr)
    type(MPI_Comm), intent(in) :: mpicomm
    type(plm_comm), intent(out) :: comm
    integer, intent(out), optional :: ierr
    call report(c_plm_comm_create_f(int(mpicomm%MPI_VAL, c_int), plm_comm_config(), comm), ierr, 'plm_comm_create')
  end subroutine

  !> The same from an integer (`use mpi`) handle. Collective.
  subroutine comm_create_int(mpicomm, comm, ierr)
    integer, intent(in) :: mpicomm
    type(plm_comm), intent(out) :: comm
    integer, intent(out), optional :: ierr
    call report(c_plm_comm_create_f(int(mpicomm, c_int), plm_comm_config(), comm), ierr, 'plm_comm_create')
  end subroutine

  !> Collective; NULL-safe; comm becomes the NULL handle.
  subroutine plm_comm_destroy(comm, ierr)
    type(plm_comm), intent(inout) :: comm
    integer, intent(out), optional :: ierr
    call report(c_plm_comm_destroy(comm), ierr, 'plm_comm_destroy')
  end subroutine

  subroutine plm_comm_rank(comm, rank, ierr)
    type(plm_comm), intent(in) :: comm
    integer, intent(out) :: rank
    integer, intent(out), optional :: ierr
    integer(c_int) :: r
    r = 0
    call report(c_plm_comm_rank(comm, r), ierr, 'plm_comm_rank')
    rank = int(r)
  end subroutine

  subroutine plm_comm_size(comm, nranks, ierr)
    type(plm_comm), intent(in) :: comm
    integer, intent(out) :: nranks
    integer, intent(out), optional :: ierr
    integer(c_int) :: n
    n = 0
    call report(c_plm_comm_size(comm, n), ierr, 'plm_comm_size')
    nranks = int(n)
  end subroutine

  !> The library's own duplicate, lent (do not free it; MPI_Comm_dup it for your own traffic).
  subroutine plm_comm_get_mpi(comm, mpicomm, ierr)
    type(plm_comm), intent(in) :: comm
    type(MPI_Comm), intent(out) :: mpicomm
    integer, intent(out), optional :: ierr
    integer(c_int) :: f
    f = 0
    call report(c_plm_comm_get_mpi_f(comm, f), ierr, 'plm_comm_get_mpi')
    mpicomm%MPI_VAL = int(f)
  end subroutine

  ! ============================================================================================
  ! arrays
  ! ============================================================================================

  !> A distributed array of Fortran shape `shape`, split along Fortran dimension `dim`
  !> (size(shape) is the last, the usual choice: each rank holds whole trailing slabs), with
  !> partition PLM_PARTITION_SCATTER / _BROADCAST / _UNSAFE_BROADCAST and dtype PLM_FLOAT64,
  !> PLM_COMPLEX128, PLM_FLOAT32 or PLM_COMPLEX64, in host memory. Collective.
  subroutine plm_array_create(comm, shape, dim, partition, dtype, x, ierr)
    type(plm_comm), intent(in) :: comm
    integer(c_int64_t), intent(in) :: shape(:)
    integer, intent(in) :: dim, partition, dtype
    type(plm_array), intent(out) :: x
    integer, intent(out), optional :: ierr
    call report(c_plm_array_create(comm, int(size(shape), c_int), c_shape(shape), c_axis(dim, size(shape)), &
                                   int(partition, c_int), int(dtype, c_int), PLM_MEMORY_HOST, x), ierr, 'plm_array_create')
  end subroutine

  !> Not collective; NULL-safe.
  subroutine plm_array_destroy(x, ierr)
    type(plm_array), intent(inout) :: x
    integer, intent(out), optional :: ierr
    call report(c_plm_array_destroy(x), ierr, 'plm_array_destroy')
  end subroutine

  !> A new array like x, zero-filled. Collective.
  subroutine plm_array_zeros_like(x, y, ierr)
    type(plm_array), intent(in) :: x
    type(plm_array), intent(out) :: y
    integer, intent(out), optional :: ierr
    call report(c_plm_array_zeros_like(x, y), ierr, 'plm_array_zeros_like')
  end subroutine

  subroutine plm_array_ndim(x, ndim, ierr)
    type(plm_array), intent(in) :: x
    integer, intent(out) :: ndim
    integer, intent(out), optional :: ierr
    integer(c_int) :: n
    n = 0
    call report(c_plm_array_ndim(x, n), ierr, 'plm_array_ndim')
    ndim = int(n)
  end subroutine

  !> Global shape, Fortran order (shape has at least ndim elements; the first ndim are set).
  subroutine plm_array_global_shape(x, shape, ierr)
    type(plm_array), intent(in) :: x
    integer(c_int64_t), intent(out) :: shape(:)
    integer, intent(out), optional :: ierr
    integer(c_int64_t) :: s(PLM_MAX_NDIM)
    integer :: n
    integer(c_int) :: st
    call plm_array_ndim(x, n, ierr)
    if (present(ierr)) then
      if (ierr /= 0) return
    end if
    if (size(shape) < n) then
      call fail_here(PLM_ERR_INVALID_ARG, ierr, 'plm_array_global_shape', 'shape has fewer elements than ndim')
      return
    end if
    st = c_plm_array_global_shape(x, s)
    if (st == PLM_SUCCESS) shape(1:n) = f_shape(s(1:n))
    call report(st, ierr, 'plm_array_global_shape')
  end subroutine

  !> This rank's local shape, Fortran order.
  subroutine plm_array_local_shape(x, shape, ierr)
    type(plm_array), intent(in) :: x
    integer(c_int64_t), intent(out) :: shape(:)
    integer, intent(out), optional :: ierr
    integer(c_int64_t) :: s(PLM_MAX_NDIM)
    integer :: n
    integer(c_int) :: st
    call plm_array_ndim(x, n, ierr)
    if (present(ierr)) then
      if (ierr /= 0) return
    end if
    if (size(shape) < n) then
      call fail_here(PLM_ERR_INVALID_ARG, ierr, 'plm_array_local_shape', 'shape has fewer elements than ndim')
      return
    end if
    st = c_plm_array_local_shape(x, s)
    if (st == PLM_SUCCESS) shape(1:n) = f_shape(s(1:n))
    call report(st, ierr, 'plm_array_local_shape')
  end subroutine

  !> The distributed dimension, counted the Fortran way (1..ndim).
  subroutine plm_array_dim(x, dim, ierr)
    type(plm_array), intent(in) :: x
    integer, intent(out) :: dim
    integer, intent(out), optional :: ierr
    integer(c_int) :: a, n, st
    a = 0
    n = 0
    st = c_plm_array_axis(x, a)
    if (st == PLM_SUCCESS) st = c_plm_array_ndim(x, n)
    dim = int(n - a)
    call report(st, ierr, 'plm_array_dim')
  end subroutine

  !> This rank's offset along the distributed dimension (0-based: its first slab is offset+1).
  subroutine plm_array_local_offset(x, offset, ierr)
    type(plm_array), intent(in) :: x
    integer(c_int64_t), intent(out) :: offset
    integer, intent(out), optional :: ierr
    offset = 0
    call report(c_plm_array_local_offset(x, offset), ierr, 'plm_array_local_offset')
  end subroutine

  subroutine fill_real(x, value, ierr)
    type(plm_array), intent(in) :: x
    real(c_double), intent(in) :: value
    integer, intent(out), optional :: ierr
    call report(c_plm_array_fill(x, value, 0.0_c_double), ierr, 'plm_array_fill')
  end subroutine

  subroutine fill_complex(x, value, ierr)
    type(plm_array), intent(in) :: x
    complex(c_double_complex), intent(in) :: value
    integer, intent(out), optional :: ierr
    call report(c_plm_array_fill(x, real(value, c_double), aimag(value)), ierr, 'plm_array_fill')
  end subroutine

  !> y = x (same layout and dtype).
  subroutine plm_array_copy(x, y, ierr)
    type(plm_array), intent(in) :: x, y
    integer, intent(out), optional :: ierr
    call report(c_plm_array_copy(x, y), ierr, 'plm_array_copy')
  end subroutine

  subroutine scale_real(x, alpha, ierr)
    type(plm_array), intent(in) :: x
    real(c_double), intent(in) :: alpha
    integer, intent(out), optional :: ierr
    call report(c_plm_array_scale(x, alpha, 0.0_c_double), ierr, 'plm_array_scale')
  end subroutine

  subroutine scale_complex(x, alpha, ierr)
    type(plm_array), intent(in) :: x
    complex(c_double_complex), intent(in) :: alpha
    integer, intent(out), optional :: ierr
    call report(c_plm_array_scale(x, real(alpha, c_double), aimag(alpha)), ierr, 'plm_array_scale')
  end subroutine

  !> y = alpha x + beta y.
  subroutine axpby_real(alpha, x, beta, y, ierr)
    real(c_double), intent(in) :: alpha, beta
    type(plm_array), intent(in) :: x, y
    integer, intent(out), optional :: ierr
    call report(c_plm_array_axpby(alpha, 0.0_c_double, x, beta, 0.0_c_double, y), ierr, 'plm_array_axpby')
  end subroutine

  subroutine axpby_complex(alpha, x, beta, y, ierr)
    complex(c_double_complex), intent(in) :: alpha, beta
    type(plm_array), intent(in) :: x, y
    integer, intent(out), optional :: ierr
    call report(c_plm_array_axpby(real(alpha, c_double), aimag(alpha), x, real(beta, c_double), aimag(beta), y), &
                ierr, 'plm_array_axpby')
  end subroutine

  !> sum(x * y) over every rank (real dtypes). Collective.
  subroutine dot_real(x, y, result, ierr)
    type(plm_array), intent(in) :: x, y
    real(c_double), intent(out) :: result
    integer, intent(out), optional :: ierr
    result = 0
    call report(c_plm_array_dot(x, y, 0_c_int, result), ierr, 'plm_array_dot')
  end subroutine

  !> sum(x * y), complex result. Collective.
  subroutine dot_complex(x, y, result, ierr)
    type(plm_array), intent(in) :: x, y
    complex(c_double_complex), intent(out) :: result
    integer, intent(out), optional :: ierr
    real(c_double) :: re, im
    re = 0
    im = 0
    call report(c_plm_array_dot(x, y, 0_c_int, re, im), ierr, 'plm_array_dot')
    result = cmplx(re, im, c_double_complex)
  end subroutine

  !> sum(conjg(x) * y) (numpy's vdot). Collective.
  subroutine vdot_complex(x, y, result, ierr)
    type(plm_array), intent(in) :: x, y
    complex(c_double_complex), intent(out) :: result
    integer, intent(out), optional :: ierr
    real(c_double) :: re, im
    re = 0
    im = 0
    call report(c_plm_array_dot(x, y, 1_c_int, re, im), ierr, 'plm_array_vdot')
    result = cmplx(re, im, c_double_complex)
  end subroutine

  !> Vector norm of every element: ord 2, 1, 0, huge/-huge via ieee infinities, any p. Collective.
  subroutine plm_array_norm(x, ord, result, ierr)
    type(plm_array), intent(in) :: x
    real(c_double), intent(in) :: ord
    real(c_double), intent(out) :: result
    integer, intent(out), optional :: ierr
    result = 0
    call report(c_plm_array_norm(x, ord, result), ierr, 'plm_array_norm')
  end subroutine

  ! bytes of a contiguous array of any kind
  pure integer(c_int64_t) function bytes_of(n, bits)
    integer(c_int64_t), intent(in) :: n
    integer, intent(in) :: bits
    bytes_of = n * int(bits / 8, c_int64_t)
  end function

  !> The whole global array on rank `root`, as a Fortran array of the global shape (any rank
  !> count of dimensions, contiguous; other ranks pass any array, e.g. of size 0). Collective.
  subroutine gather_r8(x, root, out, ierr)
    type(plm_array), intent(in) :: x
    integer, intent(in) :: root
    real(c_double), contiguous, target, intent(inout) :: out(..)
    integer, intent(out), optional :: ierr
    call report(c_plm_array_gather_to(x, int(root, c_int), c_loc(out), bytes_of(size(out, kind=c_int64_t), &
                storage_size(out))), ierr, 'plm_array_gather_to')
  end subroutine
  subroutine gather_c16(x, root, out, ierr)
    type(plm_array), intent(in) :: x
    integer, intent(in) :: root
    complex(c_double_complex), contiguous, target, intent(inout) :: out(..)
    integer, intent(out), optional :: ierr
    call report(c_plm_array_gather_to(x, int(root, c_int), c_loc(out), bytes_of(size(out, kind=c_int64_t), &
                storage_size(out))), ierr, 'plm_array_gather_to')
  end subroutine
  subroutine gather_r4(x, root, out, ierr)
    type(plm_array), intent(in) :: x
    integer, intent(in) :: root
    real(c_float), contiguous, target, intent(inout) :: out(..)
    integer, intent(out), optional :: ierr
    call report(c_plm_array_gather_to(x, int(root, c_int), c_loc(out), bytes_of(size(out, kind=c_int64_t), &
                storage_size(out))), ierr, 'plm_array_gather_to')
  end subroutine
  subroutine gather_c8(x, root, out, ierr)
    type(plm_array), intent(in) :: x
    integer, intent(in) :: root
    complex(c_float_complex), contiguous, target, intent(inout) :: out(..)
    integer, intent(out), optional :: ierr
    call report(c_plm_array_gather_to(x, int(root, c_int), c_loc(out), bytes_of(size(out, kind=c_int64_t), &
                storage_size(out))), ierr, 'plm_array_gather_to')
  end subroutine

  !> Every rank sets its part from the same global array (Fortran shape = the global shape).
  !> Collective.
  subroutine set_global_r8(x, global, ierr)
    type(plm_array), intent(in) :: x
    real(c_double), contiguous, target, intent(in) :: global(..)
    integer, intent(out), optional :: ierr
    call report(c_plm_array_set_global(x, c_loc(global), bytes_of(size(global, kind=c_int64_t), &
                storage_size(global))), ierr, 'plm_array_set_global')
  end subroutine
  subroutine set_global_c16(x, global, ierr)
    type(plm_array), intent(in) :: x
    complex(c_double_complex), contiguous, target, intent(in) :: global(..)
    integer, intent(out), optional :: ierr
    call report(c_plm_array_set_global(x, c_loc(global), bytes_of(size(global, kind=c_int64_t), &
                storage_size(global))), ierr, 'plm_array_set_global')
  end subroutine
  subroutine set_global_r4(x, global, ierr)
    type(plm_array), intent(in) :: x
    real(c_float), contiguous, target, intent(in) :: global(..)
    integer, intent(out), optional :: ierr
    call report(c_plm_array_set_global(x, c_loc(global), bytes_of(size(global, kind=c_int64_t), &
                storage_size(global))), ierr, 'plm_array_set_global')
  end subroutine
  subroutine set_global_c8(x, global, ierr)
    type(plm_array), intent(in) :: x
    complex(c_float_complex), contiguous, target, intent(in) :: global(..)
    integer, intent(out), optional :: ierr
    call report(c_plm_array_set_global(x, c_loc(global), bytes_of(size(global, kind=c_int64_t), &
                storage_size(global))), ierr, 'plm_array_set_global')
  end subroutine

  ! The local data pointer and the Fortran local shape, after checking dtype and rank (a rank-1
  ! pointer takes any array: it sees the local data flat, in Fortran order). Not collective.
  logical function local_get(x, dtype, rank, write, c, s, ierr)
    type(plm_array), intent(in) :: x
    integer(c_int), intent(in) :: dtype
    integer, intent(in) :: rank
    logical, intent(in) :: write
    type(c_ptr), intent(out) :: c
    integer(c_int64_t), intent(out) :: s(rank)
    integer, intent(out), optional :: ierr
    integer(c_int) :: dt, n, st
    integer(c_int64_t) :: cs(PLM_MAX_NDIM)
    character(len=*), parameter :: what = 'plm_array_get_local'
    local_get = .false.
    c = c_null_ptr
    s = 0
    dt = -1
    n = 0
    st = c_plm_array_dtype(x, dt)
    if (st == PLM_SUCCESS) st = c_plm_array_ndim(x, n)
    if (st == PLM_SUCCESS) st = c_plm_array_local_shape(x, cs)
    if (st /= PLM_SUCCESS) then
      call report(st, ierr, what)
      return
    end if
    if (dt /= dtype) then
      call fail_here(PLM_ERR_DTYPE_MISMATCH, ierr, what, 'the pointer''s type and kind differ from the array''s dtype')
      return
    end if
    if (rank == 1) then
      s(1) = product(cs(1:n))
    else if (rank == n) then
      s = f_shape(cs(1:n))
    else
      call fail_here(PLM_ERR_SIZE_MISMATCH, ierr, what, 'the pointer''s rank is neither 1 nor the array''s ndim')
      return
    end if
    if (write) then
      st = c_plm_array_get_local_write(x, c)
    else
      st = c_plm_array_get_local_read(x, c)
    end if
    call report(st, ierr, what)
    local_get = st == PLM_SUCCESS
  end function

  ! Restore what local_get lent. c is the pointer's address, or NULL for an empty (or
  ! unassociated) pointer, whose address Fortran cannot take: then the array's own data
  ! pointer is asked for (get + restore read, which change nothing).
  subroutine local_restore(x, write, c, ierr)
    type(plm_array), intent(in) :: x
    logical, intent(in) :: write
    type(c_ptr), value :: c
    integer, intent(out), optional :: ierr
    integer(c_int) :: st
    type(c_ptr) :: d
    st = PLM_SUCCESS
    if (.not. c_associated(c)) then
      st = c_plm_array_get_local_read(x, d)
      if (st == PLM_SUCCESS) then
        c = d
        st = c_plm_array_restore_local_read(x, d)
      end if
    end if
    if (st == PLM_SUCCESS) then
      if (write) then
        st = c_plm_array_restore_local_write(x, c)
      else
        st = c_plm_array_restore_local_read(x, c)
      end if
    end if
    call report(st, ierr, 'plm_array_restore_local')
  end subroutine

#include "plm_local_instances.inc"

  ! ============================================================================================
  ! stacks of arrays (for the stacked operators and solvers)
  ! ============================================================================================

  !> A stack of arrays (they stay alive while the stack holds them). Not collective.
  subroutine plm_stacked_create(arrays, s, ierr)
    type(plm_array), intent(in) :: arrays(:)
    type(plm_stacked), intent(out) :: s
    integer, intent(out), optional :: ierr
    call report(c_plm_stacked_create(int(size(arrays), c_int), arrays, s), ierr, 'plm_stacked_create')
  end subroutine

  subroutine plm_stacked_destroy(s, ierr)
    type(plm_stacked), intent(inout) :: s
    integer, intent(out), optional :: ierr
    call report(c_plm_stacked_destroy(s), ierr, 'plm_stacked_destroy')
  end subroutine

  ! ============================================================================================
  ! layouts
  ! ============================================================================================

  subroutine plm_layout_destroy(layout, ierr)
    type(plm_layout), intent(inout) :: layout
    integer, intent(out), optional :: ierr
    call report(c_plm_layout_destroy(layout), ierr, 'plm_layout_destroy')
  end subroutine

  ! ============================================================================================
  ! operators
  ! ============================================================================================

  subroutine plm_op_destroy(op, ierr)
    type(plm_op), intent(inout) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_destroy(op), ierr, 'plm_op_destroy')
  end subroutine

  !> Local diagonal operator diag(d) (copied).
  subroutine diagonal_r8(d, op, ierr)
    real(c_double), contiguous, target, intent(in) :: d(:)
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_diagonal(PLM_FLOAT64, size(d, kind=c_int64_t), c_loc(d), &
                bytes_of(size(d, kind=c_int64_t), storage_size(d)), op), ierr, 'plm_op_diagonal')
  end subroutine
  subroutine diagonal_c16(d, op, ierr)
    complex(c_double_complex), contiguous, target, intent(in) :: d(:)
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_diagonal(PLM_COMPLEX128, size(d, kind=c_int64_t), c_loc(d), &
                bytes_of(size(d, kind=c_int64_t), storage_size(d)), op), ierr, 'plm_op_diagonal')
  end subroutine

  !> Local dense operator from a Fortran (column-major) matrix a(rows, cols), copied: the C
  !> library's col_major flag, no transpose.
  subroutine dense_r8(a, op, ierr)
    real(c_double), contiguous, target, intent(in) :: a(:, :)
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_dense(PLM_FLOAT64, size(a, 1, kind=c_int64_t), size(a, 2, kind=c_int64_t), c_loc(a), &
                bytes_of(size(a, kind=c_int64_t), storage_size(a)), 1_c_int, 0_c_int, op), ierr, 'plm_op_dense')
  end subroutine
  subroutine dense_c16(a, op, ierr)
    complex(c_double_complex), contiguous, target, intent(in) :: a(:, :)
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_dense(PLM_COMPLEX128, size(a, 1, kind=c_int64_t), size(a, 2, kind=c_int64_t), c_loc(a), &
                bytes_of(size(a, kind=c_int64_t), storage_size(a)), 1_c_int, 0_c_int, op), ierr, 'plm_op_dense')
  end subroutine

  !> n x n local identity.
  subroutine plm_op_identity(dtype, n, op, ierr)
    integer, intent(in) :: dtype
    integer(c_int64_t), intent(in) :: n
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_identity(int(dtype, c_int), n, op), ierr, 'plm_op_identity')
  end subroutine

  !> A rows x cols float64 local operator whose matvec (and rmatvec, the adjoint) are Fortran
  !> subroutines (interface plm_matvec). The operator keeps its own copy of ctx and passes it
  !> to both. Not collective.
  subroutine plm_op_callback(rows, cols, matvec, rmatvec, ctx, op, ierr)
    integer(c_int64_t), intent(in) :: rows, cols
    procedure(plm_matvec) :: matvec, rmatvec
    class(*), intent(in) :: ctx
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    type(callback_state), pointer :: s
    integer(c_int) :: st
    allocate(s)
    s%matvec => matvec
    s%rmatvec => rmatvec
    allocate(s%ctx, source=ctx)
    st = c_plm_op_callback(PLM_FLOAT64, rows, cols, c_funloc(matvec_trampoline), c_funloc(rmatvec_trampoline), &
                           c_loc(s), c_funloc(destroy_trampoline), op)
    if (st /= PLM_SUCCESS) deallocate(s)  ! the context stays the caller's when the call fails
    call report(st, ierr, 'plm_op_callback')
  end subroutine

  integer(c_int) function matvec_trampoline(ctx, in, n_in, out, n_out, dtype, memory) bind(C, name="")
    type(c_ptr), value :: ctx, in, out
    integer(c_int64_t), value :: n_in, n_out
    integer(c_int), value :: dtype, memory
    type(callback_state), pointer :: s
    real(c_double), pointer :: x(:), y(:)
    integer :: ierr
    call c_f_pointer(ctx, s)
    call c_f_pointer(in, x, [n_in])
    call c_f_pointer(out, y, [n_out])
    ierr = 0
    call s%matvec(s%ctx, x, y, ierr)
    matvec_trampoline = int(ierr, c_int)
  end function

  integer(c_int) function rmatvec_trampoline(ctx, in, n_in, out, n_out, dtype, memory) bind(C, name="")
    type(c_ptr), value :: ctx, in, out
    integer(c_int64_t), value :: n_in, n_out
    integer(c_int), value :: dtype, memory
    type(callback_state), pointer :: s
    real(c_double), pointer :: x(:), y(:)
    integer :: ierr
    call c_f_pointer(ctx, s)
    call c_f_pointer(in, x, [n_in])
    call c_f_pointer(out, y, [n_out])
    ierr = 0
    call s%rmatvec(s%ctx, x, y, ierr)
    rmatvec_trampoline = int(ierr, c_int)
  end function

  subroutine destroy_trampoline(ctx) bind(C, name="")
    type(c_ptr), value :: ctx
    type(callback_state), pointer :: s
    call c_f_pointer(ctx, s)
    deallocate(s)
  end subroutine

  !> Block-diagonal of this rank's local operators (MPIBlockDiag). Collective.
  subroutine plm_op_blockdiag(comm, ops, op, ierr)
    type(plm_comm), intent(in) :: comm
    type(plm_op), intent(in) :: ops(:)
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_blockdiag(comm, int(size(ops), c_int), ops, 0_c_int, out=op), ierr, 'plm_op_blockdiag')
  end subroutine

  !> Vertical stack of this rank's local operators (MPIVStack). Collective.
  subroutine plm_op_vstack(comm, ops, op, ierr)
    type(plm_comm), intent(in) :: comm
    type(plm_op), intent(in) :: ops(:)
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_vstack(comm, int(size(ops), c_int), ops, op), ierr, 'plm_op_vstack')
  end subroutine

  !> Horizontal stack of this rank's local operators (MPIHStack). Collective.
  subroutine plm_op_hstack(comm, ops, op, ierr)
    type(plm_comm), intent(in) :: comm
    type(plm_op), intent(in) :: ops(:)
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_hstack(comm, int(size(ops), c_int), ops, op), ierr, 'plm_op_hstack')
  end subroutine

  subroutine plm_op_adjoint(a, op, ierr)
    type(plm_op), intent(in) :: a
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_adjoint(a, op), ierr, 'plm_op_adjoint')
  end subroutine

  !> op = alpha a.
  subroutine plm_op_scale(a, alpha, op, ierr)
    type(plm_op), intent(in) :: a
    real(c_double), intent(in) :: alpha
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_scale(a, alpha, 0.0_c_double, op), ierr, 'plm_op_scale')
  end subroutine

  !> op = a + b.
  subroutine plm_op_sum(a, b, op, ierr)
    type(plm_op), intent(in) :: a, b
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_sum(a, b, op), ierr, 'plm_op_sum')
  end subroutine

  !> op = a b.
  subroutine plm_op_product(a, b, op, ierr)
    type(plm_op), intent(in) :: a, b
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_product(a, b, op), ierr, 'plm_op_product')
  end subroutine

  !> First derivative along Fortran dimension `dim` of a model of Fortran shape `dims`,
  !> distributed in slabs of its LAST dimension (local_slabs: this rank's, or -1 on every rank
  !> for the default split), divided by `sampling`; kind PLM_DERIV_FORWARD / _BACKWARD /
  !> _CENTERED, order 3 or 5 (centered), edge 0/1. Domain and range: 1-D arrays of this rank's
  !> slabs (view them as p(dims(1), ..., local_slabs) by pointer rank remapping). Collective.
  subroutine plm_op_first_derivative(comm, dtype, dims, local_slabs, dim, sampling, kind, order, edge, op, ierr)
    type(plm_comm), intent(in) :: comm
    integer, intent(in) :: dtype, dim, kind, order, edge
    integer(c_int64_t), intent(in) :: dims(:), local_slabs
    real(c_double), intent(in) :: sampling
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_first_derivative(comm, int(dtype, c_int), int(size(dims), c_int), c_shape(dims), local_slabs, &
                c_axis(dim, size(dims)), sampling, int(kind, c_int), int(order, c_int), int(edge, c_int), op), &
                ierr, 'plm_op_first_derivative')
  end subroutine

  !> Second derivative (same conventions as plm_op_first_derivative). Collective.
  subroutine plm_op_second_derivative(comm, dtype, dims, local_slabs, dim, sampling, kind, edge, op, ierr)
    type(plm_comm), intent(in) :: comm
    integer, intent(in) :: dtype, dim, kind, edge
    integer(c_int64_t), intent(in) :: dims(:), local_slabs
    real(c_double), intent(in) :: sampling
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_second_derivative(comm, int(dtype, c_int), int(size(dims), c_int), c_shape(dims), &
                local_slabs, c_axis(dim, size(dims)), sampling, int(kind, c_int), int(edge, c_int), op), &
                ierr, 'plm_op_second_derivative')
  end subroutine

  !> Vertical stack of distributed operators with one domain (MPIStackedVStack): maps an array
  !> (a stack of one) to a stack of their ranges. Not collective.
  subroutine plm_op_stacked_vstack(ops, op, ierr)
    type(plm_op), intent(in) :: ops(:)
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_stacked_vstack(int(size(ops), c_int), ops, op), ierr, 'plm_op_stacked_vstack')
  end subroutine

  !> Block-diagonal of distributed operators (MPIStackedBlockDiag), stack to stack. Not collective.
  subroutine plm_op_stacked_blockdiag(ops, op, ierr)
    type(plm_op), intent(in) :: ops(:)
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    call report(c_plm_op_stacked_blockdiag(int(size(ops), c_int), ops, op), ierr, 'plm_op_stacked_blockdiag')
  end subroutine

  !> Distributed matrix product Y = A X (MatrixMult) with this rank's block of A given as a
  !> Fortran (column-major) matrix of the block's rows x columns (plm_matmul_blocks() tells
  !> which; pass a 0 x 0 array where it is empty). The block is transposed once here into
  !> the C library's row-major order; X and Y are the library's 1-D row-major blocks.
  !> Collective.
  subroutine matrix_mult_r8(comm, kind, grid_rows, n, k, m, a, op, ierr)
    type(plm_comm), intent(in) :: comm
    integer, intent(in) :: kind, grid_rows
    integer(c_int64_t), intent(in) :: n, k, m
    real(c_double), intent(in) :: a(:, :)
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    real(c_double), allocatable, target :: at(:, :)
    allocate(at(size(a, 2), size(a, 1)))
    at = transpose(a)
    call report(c_plm_op_matrix_mult(comm, int(kind, c_int), int(grid_rows, c_int), PLM_FLOAT64, n, k, m, c_loc(at), &
                bytes_of(size(at, kind=c_int64_t), storage_size(at)), op), ierr, 'plm_op_matrix_mult')
  end subroutine
  subroutine matrix_mult_c16(comm, kind, grid_rows, n, k, m, a, op, ierr)
    type(plm_comm), intent(in) :: comm
    integer, intent(in) :: kind, grid_rows
    integer(c_int64_t), intent(in) :: n, k, m
    complex(c_double_complex), intent(in) :: a(:, :)
    type(plm_op), intent(out) :: op
    integer, intent(out), optional :: ierr
    complex(c_double_complex), allocatable, target :: at(:, :)
    allocate(at(size(a, 2), size(a, 1)))
    at = transpose(a)
    call report(c_plm_op_matrix_mult(comm, int(kind, c_int), int(grid_rows, c_int), PLM_COMPLEX128, n, k, m, &
                c_loc(at), bytes_of(size(at, kind=c_int64_t), storage_size(at)), op), ierr, 'plm_op_matrix_mult')
  end subroutine

  !> Global shape (rows, cols) of an operator.
  subroutine plm_op_shape(op, rows, cols, ierr)
    type(plm_op), intent(in) :: op
    integer(c_int64_t), intent(out) :: rows, cols
    integer, intent(out), optional :: ierr
    rows = 0
    cols = 0
    call report(c_plm_op_shape(op, rows, cols), ierr, 'plm_op_shape')
  end subroutine

  !> A new (uninitialised) array on the operator's domain, host memory. Collective.
  subroutine plm_op_new_domain_array(op, x, ierr)
    type(plm_op), intent(in) :: op
    type(plm_array), intent(out) :: x
    integer, intent(out), optional :: ierr
    call report(c_plm_op_new_domain_array(op, PLM_MEMORY_HOST, x), ierr, 'plm_op_new_domain_array')
  end subroutine

  !> A new (uninitialised) array on the operator's range, host memory. Collective.
  subroutine plm_op_new_range_array(op, y, ierr)
    type(plm_op), intent(in) :: op
    type(plm_array), intent(out) :: y
    integer, intent(out), optional :: ierr
    call report(c_plm_op_new_range_array(op, PLM_MEMORY_HOST, y), ierr, 'plm_op_new_range_array')
  end subroutine

  !> y = Op x. Collective.
  subroutine plm_op_apply(op, x, y, ierr)
    type(plm_op), intent(in) :: op
    type(plm_array), intent(in) :: x, y
    integer, intent(out), optional :: ierr
    call report(c_plm_op_apply(op, x, y), ierr, 'plm_op_apply')
  end subroutine

  !> x = Op^H y. Collective.
  subroutine plm_op_apply_adjoint(op, y, x, ierr)
    type(plm_op), intent(in) :: op
    type(plm_array), intent(in) :: y, x
    integer, intent(out), optional :: ierr
    call report(c_plm_op_apply_adjoint(op, y, x), ierr, 'plm_op_apply_adjoint')
  end subroutine

  !> Dot test (u^H Op^H v vs (Op u)^H v on random vectors) within rtol. Collective.
  subroutine plm_op_dottest(op, rtol, passed, ierr)
    type(plm_op), intent(in) :: op
    real(c_double), intent(in) :: rtol
    logical, intent(out) :: passed
    integer, intent(out), optional :: ierr
    integer(c_int) :: p
    p = 0
    call report(c_plm_op_dottest(op, rtol, p), ierr, 'plm_op_dottest')
    passed = p /= 0
  end subroutine

  ! ============================================================================================
  ! solvers
  ! ============================================================================================

  subroutine plm_solver_info_create(info, ierr)
    type(plm_solver_info), intent(out) :: info
    integer, intent(out), optional :: ierr
    call report(c_plm_solver_info_create(info), ierr, 'plm_solver_info_create')
  end subroutine

  subroutine plm_solver_info_destroy(info, ierr)
    type(plm_solver_info), intent(inout) :: info
    integer, intent(out), optional :: ierr
    call report(c_plm_solver_info_destroy(info), ierr, 'plm_solver_info_destroy')
  end subroutine

  !> show: rank 0 prints the iteration table during solves (PyLops' show=True).
  subroutine plm_solver_info_set_show(info, show, ierr)
    type(plm_solver_info), intent(in) :: info
    logical, intent(in) :: show
    integer, intent(out), optional :: ierr
    call report(c_plm_solver_info_set_show(info, merge(1_c_int, 0_c_int, show)), ierr, 'plm_solver_info_set_show')
  end subroutine

  !> Why the last solve stopped (PLM_STOP_*) and how many iterations it ran.
  subroutine plm_solver_info_get(info, reason, iterations, ierr)
    type(plm_solver_info), intent(in) :: info
    integer, intent(out) :: reason
    integer(c_int64_t), intent(out) :: iterations
    integer, intent(out), optional :: ierr
    integer(c_int) :: r, st
    r = 0
    iterations = 0
    st = c_plm_solver_info_reason(info, r)
    if (st == PLM_SUCCESS) st = c_plm_solver_info_iterations(info, iterations)
    reason = int(r)
    call report(st, ierr, 'plm_solver_info_get')
  end subroutine

  !> r1norm and r2norm of the last solve.
  subroutine plm_solver_info_norms(info, r1norm, r2norm, ierr)
    type(plm_solver_info), intent(in) :: info
    real(c_double), intent(out) :: r1norm, r2norm
    integer, intent(out), optional :: ierr
    r1norm = 0
    r2norm = 0
    call report(c_plm_solver_info_norms(info, r1norm, r2norm), ierr, 'plm_solver_info_norms')
  end subroutine

  !> CGLS: min ||y - Op x||^2 + damp^2 ||x||^2; x holds x0 and gets the solution. info may be a
  !> NULL handle (a default-initialised type(plm_solver_info)). Collective.
  subroutine plm_solve_cgls(op, y, x, niter, damp, tol, info, ierr)
    type(plm_op), intent(in) :: op
    type(plm_array), intent(in) :: y, x
    integer(c_int64_t), intent(in) :: niter
    real(c_double), intent(in) :: damp, tol
    type(plm_solver_info), intent(in) :: info
    integer, intent(out), optional :: ierr
    call report(c_plm_solve_cgls(op, y, x, niter, damp, tol, info), ierr, 'plm_solve_cgls')
  end subroutine

  !> CGLS on stacks (stacked operators). Collective.
  subroutine plm_solve_cgls_stacked(op, y, x, niter, damp, tol, info, ierr)
    type(plm_op), intent(in) :: op
    type(plm_stacked), intent(in) :: y, x
    integer(c_int64_t), intent(in) :: niter
    real(c_double), intent(in) :: damp, tol
    type(plm_solver_info), intent(in) :: info
    integer, intent(out), optional :: ierr
    call report(c_plm_solve_cgls_stacked(op, y, x, niter, damp, tol, info), ierr, 'plm_solve_cgls_stacked')
  end subroutine

  !> CG on a square Hermitian positive definite Op. Collective.
  subroutine plm_solve_cg(op, y, x, niter, tol, info, ierr)
    type(plm_op), intent(in) :: op
    type(plm_array), intent(in) :: y, x
    integer(c_int64_t), intent(in) :: niter
    real(c_double), intent(in) :: tol
    type(plm_solver_info), intent(in) :: info
    integer, intent(out), optional :: ierr
    call report(c_plm_solve_cg(op, y, x, niter, tol, info), ierr, 'plm_solve_cg')
  end subroutine

  !> FISTA for min 0.5 ||y - Op x||^2 + eps ||x||_1 (threshold kind PLM_THRESH_*, step alpha or
  !> <= 0 for 1/lambda_max, no decay). Collective.
  subroutine plm_solve_fista(op, y, x, niter, eps, alpha, kind, monitorres, tol, info, ierr)
    type(plm_op), intent(in) :: op
    type(plm_array), intent(in) :: y, x
    integer(c_int64_t), intent(in) :: niter
    real(c_double), intent(in) :: eps, alpha, tol
    integer, intent(in) :: kind
    logical, intent(in) :: monitorres
    type(plm_solver_info), intent(in) :: info
    integer, intent(out), optional :: ierr
    call report(c_plm_solve_fista(op, y, x, niter, eps, alpha, int(kind, c_int), &
                monitorres=merge(1_c_int, 0_c_int, monitorres), tol=tol, info=info), ierr, 'plm_solve_fista')
  end subroutine

  !> ISTA (as plm_solve_fista without momentum). Collective.
  subroutine plm_solve_ista(op, y, x, niter, eps, alpha, kind, monitorres, tol, info, ierr)
    type(plm_op), intent(in) :: op
    type(plm_array), intent(in) :: y, x
    integer(c_int64_t), intent(in) :: niter
    real(c_double), intent(in) :: eps, alpha, tol
    integer, intent(in) :: kind
    logical, intent(in) :: monitorres
    type(plm_solver_info), intent(in) :: info
    integer, intent(out), optional :: ierr
    call report(c_plm_solve_ista(op, y, x, niter, eps, alpha, int(kind, c_int), &
                monitorres=merge(1_c_int, 0_c_int, monitorres), tol=tol, info=info), ierr, 'plm_solve_ista')
  end subroutine

end module pylopsmpi
