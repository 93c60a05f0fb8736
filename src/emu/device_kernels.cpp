// The device kernels of CUDA builds (src/kernels/device.cu), compiled for the host against the
// emulated runtime: the same source, each kernel run once per emulated thread.
#include "kernels/device.cu"
