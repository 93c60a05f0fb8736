/* The emulated device: CUDA's complex pairs (layout of float[2] / double[2]). */
#ifndef PLM_EMU_CUCOMPLEX_H
#define PLM_EMU_CUCOMPLEX_H
typedef struct {
    float x, y;
} cuFloatComplex;
typedef struct {
    double x, y;
} cuDoubleComplex;
typedef cuFloatComplex cuComplex;
#endif
