// Proximal operators: handle <-> object and the firewall; the work is in solvers/proximal.cpp.
#include <cmath>
#include <memory>

#include "c_api/guard.hpp"
#include "solvers/proximal.hpp"

using namespace plm;
using plm::detail::array_of;
using plm::detail::guard;

struct plm_prox_s {
    uint32_t magic;
    solvers::Prox prox;
};

namespace {

constexpr uint32_t kProxMagic = 0x504c4d50u;

const solvers::Prox &prox_of(const plm_prox_s *h)
{
    PLM_REQUIRE(h && h->magic == kProxMagic, PLM_ERR_INVALID_ARG, "plm_prox_t is not a valid proximal operator");
    return h->prox;
}

plm_status_t make(solvers::Prox::Kind kind, double sigma, plm_prox_t *out)
{
    return guard([&] {
        detail::clear_out(out, "out");
        PLM_REQUIRE(std::isfinite(sigma) && sigma >= 0, PLM_ERR_INVALID_ARG, "sigma %g is not finite and >= 0", sigma);
        std::unique_ptr<plm_prox_s> h(new plm_prox_s());
        h->prox.kind = kind;
        h->prox.sigma = sigma;
        h->magic = kProxMagic;
        *out = h.release();
    });
}

}  // namespace

PLM_API plm_status_t plm_prox_create_l1(double sigma, plm_prox_t *out)
{
    return make(solvers::Prox::Kind::l1, sigma, out);
}

PLM_API plm_status_t plm_prox_create_l0(double sigma, plm_prox_t *out)
{
    return make(solvers::Prox::Kind::l0, sigma, out);
}

PLM_API plm_status_t plm_prox_apply(plm_const_prox_t prox, plm_const_array_t x, double tau, plm_array_t out)
{
    return guard([&] {
        const DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), "prox_apply");
        const solvers::Prox *p = nullptr;
        DistributedArray *o = nullptr;
        ag.check([&] {
            p = &prox_of(prox);
            o = &array_of(out);
        });
        // A failed check leaves p or o unset: apply() still joins the agreement (with placeholders;
        // its run() throws before anything is written).
        static const solvers::Prox none;
        (p ? *p : none).apply(ag, a, tau, o ? *o : const_cast<DistributedArray &>(a));
    });
}

PLM_API plm_status_t plm_prox_value(plm_const_prox_t prox, plm_const_array_t x, double *value)
{
    return guard([&] {
        const DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), "prox_value");
        const solvers::Prox *p = nullptr;
        ag.check([&] {
            p = &prox_of(prox);
            PLM_REQUIRE(value, PLM_ERR_INVALID_ARG, "prox_value: value is NULL");
        });
        static const solvers::Prox none;
        const double v = (p ? *p : none).value(ag, a);
        *value = v;
    });
}

PLM_API plm_status_t plm_prox_destroy(plm_prox_t *prox)
{
    return guard([&] {
        if (!prox || !*prox) return;
        prox_of(*prox);
        (*prox)->magic = 0;
        delete *prox;
        *prox = nullptr;
    });
}
