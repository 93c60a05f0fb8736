// The emulated device's kernel launch (included by cuda_runtime.h in C++). A launch copies the
// kernel's arguments, as CUDA does, and queues the grid on the stream; it runs when the
// stream is next drained (src/emu/runtime.cpp). The caller allocates nothing (a real launch
// does not): the arguments are moved into storage the runtime allocates.
#pragma once

#include <cstddef>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

namespace plm_emu {

// A kernel call with its arguments, type-erased: run() calls it (once per emulated thread),
// move_to() moves it into storage of size bytes, destroy() ends it there.
struct Body {
    void (*run)(const void *call);
    void (*move_to)(void *dst, void *src);
    void (*destroy)(void *call);
    std::size_t size, align;
};

// Queues grid x block threads of the call at `call` (moved out of it) on stream; checks the
// configuration as CUDA does: a bad one sets the error cudaGetLastError() returns, and nothing runs.
void launch(dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t stream, const Body &body, void *call);

template <typename K> class Launch {
public:
    Launch(dim3 g, dim3 b, std::size_t m, cudaStream_t s, K k) : g_(g), b_(b), m_(m), s_(s), k_(k) {}
    template <typename... A> void operator()(A &&...a) const
    {
        struct Call {
            K k;
            std::tuple<std::decay_t<A>...> args;
        };
        Call call{k_, std::tuple<std::decay_t<A>...>(std::forward<A>(a)...)};
        static const Body body = {
            [](const void *p) {
                const Call *c = static_cast<const Call *>(p);
                std::apply(c->k, c->args);
            },
            [](void *dst, void *src) { new (dst) Call(std::move(*static_cast<Call *>(src))); },
            [](void *p) { static_cast<Call *>(p)->~Call(); },
            sizeof(Call),
            alignof(Call),
        };
        launch(g_, b_, m_, s_, body, &call);
    }

private:
    dim3 g_, b_;
    std::size_t m_;
    cudaStream_t s_;
    K k_;
};

template <typename K> Launch<K> make_launch(dim3 g, dim3 b, std::size_t m, cudaStream_t s, K k)
{
    return Launch<K>(g, b, m, s, k);
}

}  // namespace plm_emu
