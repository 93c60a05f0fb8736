// The emulated device's kernel launch (included by cuda_runtime.h in C++). A launch copies the
// kernel's arguments, as CUDA does, and queues the grid on the stream; it runs when the
// stream is next drained (src/emu/runtime.cpp).
#pragma once

#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace plm_emu {

// Queues grid x block threads of body on stream (checks the configuration as CUDA does: a bad
// one sets the error cudaGetLastError() returns, and nothing runs).
void launch(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream, std::function<void()> body);

template <typename K> class Launch {
public:
    Launch(dim3 g, dim3 b, size_t m, cudaStream_t s, K k) : g_(g), b_(b), m_(m), s_(s), k_(k) {}
    template <typename... A> void operator()(A &&...a) const
    {
        auto args = std::make_tuple(std::decay_t<A>(std::forward<A>(a))...);
        K k = k_;
        launch(g_, b_, m_, s_, [k, args]() { std::apply(k, args); });
    }

private:
    dim3 g_, b_;
    size_t m_;
    cudaStream_t s_;
    K k_;
};

template <typename K> Launch<K> make_launch(dim3 g, dim3 b, size_t m, cudaStream_t s, K k)
{
    return Launch<K>(g, b, m, s, k);
}

}  // namespace plm_emu
