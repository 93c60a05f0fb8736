// Circular shifts of local blocks (numpy.roll along one axis), built on copy_slab so they run
// on host and device buffers alike: the fft shifts of the FFT operators and of arrays.
#include "kernels/kernels.hpp"

namespace plm::kernels {

void roll(const Exec &e, DType dt, int ndim, const int64_t *shape, int axis, int64_t shift, const void *src, void *dst)
{
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; ++k) outer *= shape[k];
    for (int k = axis + 1; k < ndim; ++k) inner *= shape[k];
    const int64_t n = shape[axis];
    if (n == 0 || outer == 0 || inner == 0) return;
    const int64_t s = ((shift % n) + n) % n;
    // dst[s + k] = src[k] for k < n - s, and dst[k] = src[n - s + k] for k < s.
    copy_slab(e, dt, outer, inner, src, n, 0, dst, n, s, n - s);
    copy_slab(e, dt, outer, inner, src, n, n - s, dst, n, 0, s);
}

}  // namespace plm::kernels
