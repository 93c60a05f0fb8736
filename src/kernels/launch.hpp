// Kernel launches in device.cu: PLM_LAUNCH(grid, block, shared bytes, stream, kernel)(args...)
// is kernel<<<grid, block, shared bytes, stream>>>(args...) under nvcc; in the emulated device
// (PLM_DEVICE_EMULATION: device.cu compiled for the host, src/emu) it queues the same kernel
// on the emulated stream. The kernel comes last, so template arguments may hold commas.
#pragma once

#if defined(PLM_DEVICE_EMULATION)
#define PLM_LAUNCH(grid, block, smem, stream, ...) \
    ::plm_emu::make_launch(grid, block, smem, stream, [](auto &&...plm_args) { __VA_ARGS__(plm_args...); })
#else
#define PLM_LAUNCH(grid, block, smem, stream, ...) __VA_ARGS__<<<grid, block, smem, stream>>>
#endif
