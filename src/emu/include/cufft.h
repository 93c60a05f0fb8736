/* The emulated device: the cuFFT calls pylopsmpi makes, served by FFTW (advanced layout: the
 * same n / embed / stride / dist conventions) on the plan's stream, with cuFFT's rules: no
 * auto-allocation means a work area must be set, and c2r transforms overwrite their input. */
#ifndef PLM_EMU_CUFFT_H
#define PLM_EMU_CUFFT_H

#include "cuda_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cufftResult_t {
    CUFFT_SUCCESS = 0,
    CUFFT_INVALID_PLAN = 1,
    CUFFT_ALLOC_FAILED = 2,
    CUFFT_INVALID_TYPE = 3,
    CUFFT_INVALID_VALUE = 4,
    CUFFT_INTERNAL_ERROR = 5,
    CUFFT_EXEC_FAILED = 6,
    CUFFT_SETUP_FAILED = 7,
    CUFFT_INVALID_SIZE = 8,
    CUFFT_UNALIGNED_DATA = 9,
    CUFFT_INVALID_DEVICE = 11,
    CUFFT_NO_WORKSPACE = 13,
    CUFFT_NOT_IMPLEMENTED = 14,
    CUFFT_NOT_SUPPORTED = 16
} cufftResult;

typedef int cufftHandle;
typedef float cufftReal;
typedef double cufftDoubleReal;
typedef cuComplex cufftComplex;
typedef cuDoubleComplex cufftDoubleComplex;

typedef enum cufftType_t {
    CUFFT_R2C = 0x2a,
    CUFFT_C2R = 0x2c,
    CUFFT_C2C = 0x29,
    CUFFT_D2Z = 0x6a,
    CUFFT_Z2D = 0x6c,
    CUFFT_Z2Z = 0x69
} cufftType;

#define CUFFT_FORWARD -1
#define CUFFT_INVERSE 1

cufftResult cufftCreate(cufftHandle *plan);
cufftResult cufftDestroy(cufftHandle plan);
cufftResult cufftSetAutoAllocation(cufftHandle plan, int auto_allocate);
cufftResult cufftSetWorkArea(cufftHandle plan, void *work);
cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream);
cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long *n, long long *inembed, long long istride,
                                long long idist, long long *onembed, long long ostride, long long odist,
                                cufftType type, long long batch, size_t *work_size);
cufftResult cufftExecC2C(cufftHandle plan, cufftComplex *in, cufftComplex *out, int direction);
cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex *in, cufftDoubleComplex *out, int direction);
cufftResult cufftExecR2C(cufftHandle plan, cufftReal *in, cufftComplex *out);
cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal *in, cufftDoubleComplex *out);
cufftResult cufftExecC2R(cufftHandle plan, cufftComplex *in, cufftReal *out);
cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex *in, cufftDoubleReal *out);

#ifdef __cplusplus
}
#endif

#endif
