! Arrays through the module: create (Fortran shapes, distributed dimension counted the Fortran
! way), fill, local rank-3 pointers, dot, norms, set_global and gather to root, checked against
! the serial global array g(i,j,k) = i + 10 j + 100 k built here on every rank.
program test_f_array
  use plm_ftest
  use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_positive_inf
  implicit none
  integer(c_int64_t), parameter :: n1 = 5, n2 = 3, n3 = 7
  type(plm_comm) :: comm
  type(plm_array) :: x, y
  real(c_double) :: g(n1, n2, n3), back(n1, n2, n3), empty(0), d, nrm
  real(c_double), pointer :: p(:, :, :), flat(:)
  integer(c_int64_t) :: lshape(3), gshape(3), off
  integer :: i, j, k, dim
  do k = 1, int(n3)
    do j = 1, int(n2)
      do i = 1, int(n1)
        g(i, j, k) = i + 10 * j + 100 * k
      end do
    end do
  end do
  call start(comm)

  ! distributed along the last dimension (the default split, slabs g(:,:,k))
  call plm_array_create(comm, [n1, n2, n3], 3, PLM_PARTITION_SCATTER, PLM_FLOAT64, x)
  call plm_array_global_shape(x, gshape)
  call plm_array_local_shape(x, lshape)
  call plm_array_dim(x, dim)
  call plm_array_local_offset(x, off)
  call expect(all(gshape == [n1, n2, n3]), 'global shape in Fortran order')
  call expect(dim == 3, 'distributed dimension 3')
  call expect(all(lshape == [n1, n2, default_rows(n3, me, np)]), 'local shape: whole trailing slabs')
  call plm_array_fill(x, 2.0_c_double)
  call plm_array_get_local_write(x, p)
  call expect(all(shape(p) == lshape), 'the local pointer has the local shape')
  call expect(all(p == 2), 'fill')
  p = g(:, :, off + 1:off + lshape(3))
  call plm_array_restore_local_write(x, p)
  call expect(.not. associated(p), 'restore nullifies the pointer')
  call plm_array_dot(x, x, d)
  call expect_close([d], [sum(g**2)], 1d-13, 'dot')
  call plm_array_norm(x, 2.0_c_double, nrm)
  call expect_close([nrm], [sqrt(sum(g**2))], 1d-13, 'norm 2')
  call plm_array_norm(x, 1.0_c_double, nrm)
  call expect_close([nrm], [sum(abs(g))], 1d-13, 'norm 1')
  call plm_array_norm(x, ieee_value(1.0_c_double, ieee_positive_inf), nrm)
  call expect_close([nrm], [maxval(abs(g))], 1d-13, 'norm inf')
  back = 0
  if (me == 0) then
    call plm_array_gather_to(x, 0, back)
    call expect_close(reshape(back, [size(back)]), reshape(g, [size(g)]), 0d0, 'gather to root')
  else
    call plm_array_gather_to(x, 0, empty)
  end if
  ! a flat read view of the same data, in Fortran order
  call plm_array_get_local_read(x, flat)
  call expect(size(flat, kind=c_int64_t) == product(lshape), 'flat pointer size')
  if (size(flat) > 0) call expect(flat(1) == g(1, 1, off + 1), 'flat pointer order')
  call plm_array_restore_local_read(x, flat)

  ! distributed along the first dimension (not the default): set_global, then gather
  call plm_array_create(comm, [n1, n2, n3], 1, PLM_PARTITION_SCATTER, PLM_FLOAT64, y)
  call plm_array_local_shape(y, lshape)
  call plm_array_local_offset(y, off)
  call expect(all(lshape == [default_rows(n1, me, np), n2, n3]), 'local shape along dimension 1')
  call plm_array_set_global(y, g)
  call plm_array_get_local_read(y, p)
  call expect_close(reshape(p, [size(p)]), reshape(g(off + 1:off + lshape(1), :, :), [size(p)]), 0d0, &
                    'set_global: the local block along dimension 1')
  call plm_array_restore_local_read(y, p)
  back = 0
  if (me == np - 1) then
    call plm_array_gather_to(y, np - 1, back)
    call expect_close(reshape(back, [size(back)]), reshape(g, [size(g)]), 0d0, 'gather to the last rank')
  else
    call plm_array_gather_to(y, np - 1, empty)
  end if
  call plm_array_axpby(2.0_c_double, y, -1.0_c_double, y)
  call plm_array_dot(y, y, d)
  call expect_close([d], [sum(g**2)], 1d-13, 'axpby 2y - y')

  call plm_array_destroy(x)
  call plm_array_destroy(y)
  call expect(.not. c_associated(x%p), 'destroy sets the handle to NULL')

  ! fewer elements than ranks: the last rank's block is empty (at 1 rank, the whole array);
  ! its pointer has size 0 and restores all the same
  call plm_array_create(comm, [int(np - 1, c_int64_t)], 1, PLM_PARTITION_SCATTER, PLM_FLOAT64, x)
  call plm_array_get_local_write(x, flat)
  call expect(size(flat) == merge(0, 1, me == np - 1), 'a rank with no element gets an empty pointer')
  flat = 3
  call plm_array_restore_local_write(x, flat)
  call plm_array_norm(x, 1.0_c_double, nrm)
  call expect_close([nrm], [3.0_c_double * (np - 1)], 1d-14, 'norm with an empty block')
  call plm_array_destroy(x)
  call finish(comm, 'test_f_array')
end program
