#include "solvers/solvers.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "core/alloc.hpp"
#include "kernels/kernels.hpp"
#include "solvers/local_math.hpp"

namespace plm::solvers {

namespace {

using cplx = std::complex<double>;

// ---- solver vectors -------------------------------------------------------------------------

// A solver vector: one array, or the members of a stack (the parts of an operator's domain or
// range), on one side of the operator. Work vectors own their arrays.
struct Vec {
    std::vector<DistributedArray *> p;
    ops::Operator::In in;  // p, as an operator's input
    std::vector<DistributedArray::Ptr> own;
    bool range = false;  // which side of the operator: its parts' layouts
    const DistributedArray &front() const { return *p.front(); }
};

Vec view(const Parts &a, bool range)
{
    Vec v;
    v.p = a;
    v.in.assign(a.begin(), a.end());
    v.range = range;
    return v;
}

// New vectors on the operator's domain or range parts, in memory space s.
Vec on(const ops::Operator &op, bool range, DType dt, Space s)
{
    Vec v;
    v.range = range;
    for (const ArrayLayout::Ptr &l : range ? op.range_parts() : op.domain_parts()) {
        v.own.push_back(DistributedArray::create_from_layout(l, to_public(dt), space_to_public(s), nullptr, 0));
        v.p.push_back(v.own.back().get());
        v.in.push_back(v.p.back());
    }
    return v;
}

// y = a x + b y on the local blocks (real coefficients).
void axpby(double a, const Vec &x, double b, Vec &y)
{
    for (size_t i = 0; i < y.p.size(); ++i) local::axpby(a, *x.p[i], b, *y.p[i]);
}

void copy(const Vec &x, Vec &y)
{
    for (size_t i = 0; i < y.p.size(); ++i) local::copy(*x.p[i], *y.p[i]);
}

// ---- the mask groups of a solve -------------------------------------------------------------

// The ranks that solve together: those in the same mask group of every part of both sides.
// For a rank of group g and member m of a side, the ranks whose partials make up its
// reductions over that member are ranks(side, m, g), ascending.
class Groups {
public:
    Groups(const ops::Operator &op)
    {
        const std::vector<ArrayLayout::Ptr> sides[2] = {op.domain_parts(), op.range_parts()};
        const int P = op.comm().size();
        for (const auto &side : sides)
            for (const ArrayLayout::Ptr &l : side) masked_ = masked_ || !l->mask().empty();
        std::vector<std::vector<int>> keys;  // each rank's group in every part
        for (int q = 0; q < P; ++q) {
            std::vector<int> key;
            for (const auto &side : sides)
                for (const ArrayLayout::Ptr &l : side) key.push_back(l->group_of(q));
            keys.push_back(key);
        }
        std::vector<std::vector<int>> distinct;
        for (int q = 0; q < P; ++q) {
            auto it = std::find(distinct.begin(), distinct.end(), keys[static_cast<size_t>(q)]);
            if (it == distinct.end()) {
                distinct.push_back(keys[static_cast<size_t>(q)]);
                rep_.push_back(q);
                it = distinct.end() - 1;
            }
            if (q == op.comm().rank()) mine_ = static_cast<int>(it - distinct.begin());
        }
        for (int side = 0; side < 2; ++side) {
            for (const ArrayLayout::Ptr &l : sides[side]) {
                std::vector<std::vector<int>> by_group;
                for (int g : rep_) {
                    std::vector<int> r;
                    for (int q = 0; q < P; ++q)
                        if (l->group_of(q) == l->group_of(g)) r.push_back(q);
                    by_group.push_back(r);
                }
                ranks_[side].push_back(by_group);
            }
        }
    }
    bool masked() const { return masked_; }
    int count() const { return static_cast<int>(rep_.size()); }
    int mine() const { return mine_; }
    const std::vector<int> &ranks(bool range, size_t member, int g) const
    {
        return ranks_[range][member][static_cast<size_t>(g)];
    }

private:
    bool masked_ = false;
    int mine_ = 0;
    std::vector<int> rep_;  // a rank of each group
    std::vector<std::vector<std::vector<int>>> ranks_[2];
};

// ---- a solve's common state -----------------------------------------------------------------

// The operator, the execution context of the operands, the groups, the operator's Work and the
// reduction slots of every reduction point of the solve. Planned inside the solve's agreement
// check: the Steps take their slots (take), then plan() makes them in the operands' memory
// space and stream, with the host room collect() copies them into.
struct Solve {
    Solve(const ops::Operator &op, const Exec &e) : op(op), e(e), groups(op), work(op, e) {}
    const ops::Operator &op;
    Exec e;
    Groups groups;
    ops::WorkLease work;
    kernels::Reductions red;
    std::vector<double> host;  // 2 per slot, after a collect()
    int slots = 0;
    void apply(const Vec &x, Vec &y, bool adjoint) const { op.apply_parts(x.in, y.p, adjoint, work.get()); }
    int G() const { return groups.count(); }
    int mine() const { return groups.mine(); }
    int take(size_t n)
    {
        const int first = slots;
        slots += static_cast<int>(n);
        return first;
    }
    void plan()
    {
        red = kernels::Reductions(e, slots);
        host.assign(2 * static_cast<size_t>(slots), 0.0);
    }
};

// ---- reduction points -----------------------------------------------------------------------

// One reduction point of an iteration: its dot products and 1-norms, the stop callback's
// answer, made before the solve's agreement and re-run every iteration. Each entry takes one
// reduction slot of the solve per member; a run enqueues every partial into its slot, collects
// them all with one copy to the host (one synchronisation on device), then agrees. Without
// masks each entry is one sum over the ranks; with masks every rank's partial has its own
// lanes, added in rank order within each group.
class Step {
public:
    Step(Solve &s, const char *what) : ag_(s.op.comm(), what), s_(s) { stop_ = ag_.add_lanes(1, comm::LaneOp::max); }
    // a^H b (a and b on one side) or sum |a| (b null); returns the entry's index. Before the
    // solve's plan().
    size_t add(const Vec &a, const Vec *b)
    {
        Entry e{&a, b, 0, s_.take(a.p.size())};
        const size_t per = b ? 2 : 1;  // re, im
        const size_t P = static_cast<size_t>(ag_.comm().size());
        e.lane = ag_.add_lanes(s_.groups.masked() ? per * P * a.p.size() : per, comm::LaneOp::sum);
        entries_.push_back(e);
        return entries_.size() - 1;
    }
    // Computes this rank's partials, carries the callback's answer (stop, or its error), agrees.
    void run(bool stop = false, const std::optional<Error> &err = std::nullopt)
    {
        ag_.rearm();
        ag_.add_error(err);
        ag_.set(stop_, stop);
        // Outside check(): the partials run every iteration and allocate nothing; a device
        // error in them is agreed here like any other.
        ag_.add_error(comm::capture([&] { partials(); }));
        ag_.run();
    }
    bool stopped() const { return ag_.get(stop_) > 0; }
    // Entry k's value for group g (a real entry's imaginary part is 0).
    cplx value(size_t k, int g) const
    {
        const Entry &e = entries_[k];
        const size_t per = e.b ? 2 : 1;
        if (!s_.groups.masked()) return {ag_.get(e.lane), e.b ? ag_.get(e.lane + 1) : 0.0};
        const size_t P = static_cast<size_t>(ag_.comm().size());
        cplx s = 0;
        for (size_t m = 0; m < e.a->p.size(); ++m)
            for (int q : s_.groups.ranks(e.a->range, m, g)) {
                const size_t at = e.lane + per * (m * P + static_cast<size_t>(q));
                s += cplx(ag_.get(at), e.b ? ag_.get(at + 1) : 0.0);
            }
        return s;
    }
    double real(size_t k, int g) const { return value(k, g).real(); }

private:
    struct Entry {
        const Vec *a, *b;
        size_t lane;
        int slot;  // member m's partial: slot + m
    };
    void partials()
    {
        if (entries_.empty()) return;
        const Exec &ex = s_.red.exec();
        for (const Entry &e : entries_)
            for (size_t m = 0; m < e.a->p.size(); ++m) {
                const DistributedArray &a = *e.a->p[m];
                int64_t begin = 0, count = 0;
                a.reduce_share(&begin, &count);
                const int64_t es = static_cast<int64_t>(dtype_size(a.dtype()));
                const char *pa = static_cast<const char *>(a.data()) + begin * es;
                const int slot = e.slot + static_cast<int>(m);
                if (e.b)
                    kernels::dot(ex, a.dtype(), count, pa, static_cast<const char *>(e.b->p[m]->data()) + begin * es,
                                 true, s_.red, slot);
                else
                    kernels::norm_partial(ex, a.dtype(), kernels::NormKind::pow_sum, 1.0, count, pa, s_.red, slot);
            }
        kernels::collect(ex, s_.red, s_.host.data());
        const size_t P = static_cast<size_t>(ag_.comm().size()), me = static_cast<size_t>(ag_.comm().rank());
        for (const Entry &e : entries_) {
            const size_t per = e.b ? 2 : 1;
            double sum[2] = {0, 0};
            for (size_t m = 0; m < e.a->p.size(); ++m) {
                const double *part = &s_.host[2 * (static_cast<size_t>(e.slot) + m)];
                for (size_t i = 0; i < per; ++i) {
                    if (s_.groups.masked()) ag_.set(e.lane + per * (m * P + me) + i, part[i]);
                    sum[i] += part[i];
                }
            }
            if (!s_.groups.masked())
                for (size_t i = 0; i < per; ++i) ag_.set(e.lane + i, sum[i]);
        }
    }

    comm::Agreement ag_;
    Solve &s_;
    size_t stop_;
    std::vector<Entry> entries_;
};

bool any(const std::vector<char> &v) { return std::find(v.begin(), v.end(), 1) != v.end(); }

// The stop callback and the show table, with the callback's answer kept for the next
// reduction point (which carries it to every rank).
class Progress {
public:
    Progress(const Monitor &m, const Vec &x, const char *name, int64_t niter, double tol, bool print_ok)
        : m_(m), x_(x), niter_(niter), print_(m.show && print_ok && x.front().base().rank() == 0)
    {
        if (!print_) return;
        int64_t n = 0;
        for (const DistributedArray *a : x.p) n += product(a->layout().global);
        std::printf("%s\n", std::string(72, '-').c_str());
        std::printf("%s (pylopsmpi): %lld ranks, %lld unknowns, niter = %lld, tol = %g\n", name,
                    static_cast<long long>(x.front().base().size()), static_cast<long long>(n),
                    static_cast<long long>(niter), tol);
        std::printf("%s\n%8s %14s %14s %14s\n", std::string(72, '-').c_str(), "Itn", "x[0]", "r1norm", "r2norm");
    }
    ~Progress()
    {
        if (print_) std::printf("%s\n", std::string(72, '-').c_str());
    }
    // After iteration it (1-based) of this rank's group: prints, then asks the callback.
    void after(int64_t it, double r1, double r2)
    {
        if (print_ && (it <= 10 || it % 10 == 0 || it > niter_ - 10))
            std::printf("%8lld %14.6e %14.6e %14.6e\n", static_cast<long long>(it), first(), r1, r2);
        if (!m_.stop || err_) return;
        alloc::Allowed user_code;  // its failure is agreed at the next reduction point
        err_ = comm::capture([&] { stop_ = m_.stop(it, r2) || stop_; });
    }
    // The answer for the next reduction point, then cleared.
    bool take_stop() { return std::exchange(stop_, false); }
    std::optional<Error> take_error() { return std::exchange(err_, std::nullopt); }

private:
    double first() const { return local::first(x_.front()); }
    const Monitor &m_;
    const Vec &x_;
    int64_t niter_;
    bool print_;
    bool stop_ = false;
    std::optional<Error> err_;
};

// The callback's last answer (an error on some rank after the final iteration) agreed: fin is a
// reduction point with no entries.
void settle(Step &fin, Progress &progress) { fin.run(progress.take_stop(), progress.take_error()); }

// Checks shared by the solvers and resolves the operands' execution context.
Exec check_operands(comm::Agreement &ag, const ops::Operator &op, const Parts &y, const Parts &x, int64_t niter,
                    const char *what)
{
    Exec e{};
    ag.check([&] {
        PLM_REQUIRE(niter >= 0, PLM_ERR_INVALID_ARG, "%s: niter %lld is negative", what, static_cast<long long>(niter));
        PLM_REQUIRE(!op.is_local(), PLM_ERR_INVALID_ARG, "%s needs a distributed operator", what);
        op.check_parts(ops::Operator::In(x.begin(), x.end()), y, false);
        const Space s = x.front()->space();
        for (const DistributedArray *a : x) PLM_REQUIRE(a->space() == s, PLM_ERR_INVALID_ARG, "%s: x mixes memory spaces", what);
        for (const DistributedArray *a : y)
            PLM_REQUIRE(a->space() == s, PLM_ERR_INVALID_ARG, "%s: y and x must be in one memory space", what);
        e = x.front()->exec();
    });
    ag.fold(niter);
    return e;
}

bool square(const ops::Operator &op)
{
    const std::vector<ArrayLayout::Ptr> d = op.domain_parts(), r = op.range_parts();
    if (d.size() != r.size()) return false;
    for (size_t i = 0; i < d.size(); ++i)
        if (!d[i]->same_as(*r[i])) return false;
    return true;
}

// Stops group i for reason r (the first reason given sticks).
void end(std::vector<char> &active, std::vector<Stop> &why, size_t i, Stop r)
{
    active[i] = 0;
    if (why[i] == Stop::none) why[i] = r;
}

// Every group still running stops for reason r (a stop callback).
void end_all(std::vector<char> &active, std::vector<Stop> &why, Stop r)
{
    for (size_t i = 0; i < active.size(); ++i)
        if (active[i]) end(active, why, i, r);
}

// The reason of a group that ran to the end of its loop: why it was stopped, else tolerance or
// iterations.
Stop reason(const std::vector<Stop> &why, size_t i, bool met)
{
    return why[i] != Stop::none ? why[i] : met ? Stop::tolerance : Stop::iterations;
}

void reset(Info &info, int64_t niter)
{
    info = Info{};
    info.cost.reserve(static_cast<size_t>(niter) + 1);  // no growth inside the loop
}

}  // namespace

// ---- CG ---------------------------------------------------------------------------------------

void cg(comm::Agreement &ag, const ops::Operator &op, const Parts &yp, const Parts &xp, int64_t niter, double tol,
        Info &info, const Monitor &mon)
{
    const Exec e = check_operands(ag, op, yp, xp, niter, "CG");
    ag.check([&] { PLM_REQUIRE(square(op), PLM_ERR_SIZE_MISMATCH, "CG needs a square operator (domain == range)"); });
    ag.fold_double(tol);
    const DType dt = op.dtype();
    std::optional<Vec> yv, xv;
    std::optional<Solve> s;
    std::optional<Vec> r, c, opc;
    std::optional<Step> s0, s1, s2, fin;
    ag.check([&] {
        yv.emplace(view(yp, true));
        xv.emplace(view(xp, false));
        s.emplace(op, e);
        fin.emplace(*s, "CG end");
        r.emplace(on(op, true, dt, e.space));
        c.emplace(on(op, false, dt, e.space));
        opc.emplace(on(op, true, dt, e.space));
        s0.emplace(*s, "CG r.r");
        s1.emplace(*s, "CG c.Opc");
        s2.emplace(*s, "CG r.r");
        s0->add(*r, &*r);
        s1->add(*c, &*opc);
        s2->add(*r, &*r);
        s->plan();
        reset(info, niter);
    });
    std::vector<double> kold;
    std::vector<char> active;
    std::vector<int64_t> its;
    std::vector<Stop> why;
    ag.check([&] {
        for (auto *v : {&kold}) v->resize(static_cast<size_t>(s->G()));
        active.resize(static_cast<size_t>(s->G()));
        its.resize(static_cast<size_t>(s->G()));
        why.assign(static_cast<size_t>(s->G()), Stop::none);
    });
    ag.run();
    const Vec &y = *yv;
    Vec &x = *xv;
    const int G = s->G(), me = s->mine();
    s->apply(x, *r, false);
    axpby(1, y, -1, *r);  // r = y - Op x
    copy(*r, *c);
    s0->run();
    for (int g = 0; g < G; ++g) {
        kold[static_cast<size_t>(g)] = s0->real(0, g);
        active[static_cast<size_t>(g)] = niter > 0 && kold[static_cast<size_t>(g)] > tol;
        if (!std::isfinite(kold[static_cast<size_t>(g)])) end(active, why, static_cast<size_t>(g), Stop::nan);
    }
    info.cost.push_back(std::sqrt(kold[static_cast<size_t>(me)]));
    Progress progress(mon, x, "CG", niter, tol, true);
    while (any(active)) {
        s->apply(*c, *opc, false);
        s1->run(progress.take_stop(), progress.take_error());
        if (s1->stopped()) {
            end_all(active, why, Stop::callback);
            break;
        }
        const auto den = [&](int g) { return std::abs(s1->value(0, g)); };  // c^H Op c
        for (int g = 0; g < G; ++g) {  // the same verdict on every rank
            const size_t i = static_cast<size_t>(g);
            if (active[i] && !std::isfinite(den(g))) end(active, why, i, Stop::nan);
            if (active[i] && den(g) == 0) end(active, why, i, Stop::breakdown);
        }
        const bool mine = active[static_cast<size_t>(me)];
        if (mine) {
            const double a = kold[static_cast<size_t>(me)] / den(me);
            axpby(a, *c, 1, x);
            axpby(-a, *opc, 1, *r);
        }
        s2->run();
        if (mine) {
            const double b = s2->real(0, me) / kold[static_cast<size_t>(me)];
            axpby(1, *r, b, *c);  // c = r + b c
        }
        for (int g = 0; g < G; ++g) {
            const size_t i = static_cast<size_t>(g);
            if (!active[i]) continue;
            kold[i] = s2->real(0, g);
            active[i] = ++its[i] < niter && kold[i] > tol;
            if (!std::isfinite(kold[i])) end(active, why, i, Stop::nan);
        }
        if (mine) {
            info.cost.push_back(std::sqrt(kold[static_cast<size_t>(me)]));
            progress.after(its[static_cast<size_t>(me)], kold[static_cast<size_t>(me)],
                           std::sqrt(kold[static_cast<size_t>(me)]));
        }
    }
    settle(*fin, progress);
    const double k = kold[static_cast<size_t>(me)];
    info.iterations = its[static_cast<size_t>(me)];
    info.reason = reason(why, static_cast<size_t>(me), k <= tol);
    info.r1norm = k;
    info.r2norm = std::sqrt(k);
}

// ---- CGLS -------------------------------------------------------------------------------------

// Everything a CGLS run uses, made by the plan: views of y and x, the work vectors, the
// reduction points and the per-group state (reset by each run).
struct Cgls::Impl {
    Impl(const ops::Operator &op, const Parts &yp, const Parts &xp, const Exec &e, int64_t niter, double damp,
         double tol, Info &info)
        : niter(niter), d2(damp * damp), tol(tol), info(info), yv(view(yp, true)), xv(view(xp, false)), sv(op, e),
          fin(sv, "CGLS end"), s0(sv, "CGLS r.r, s.s"), s1(sv, "CGLS q.q"), s3(sv, "CGLS r.r, s.s")
    {
        const DType dt = op.dtype();
        s.emplace(on(op, true, dt, e.space));
        q.emplace(on(op, true, dt, e.space));
        r.emplace(on(op, false, dt, e.space));
        c.emplace(on(op, false, dt, e.space));
        // ||x||^2 and ||c||^2 only matter with damping: without it they are not reduced.
        for (Step *st : {&s0, &s3}) {
            st->add(*r, &*r);
            st->add(*s, &*s);
            if (d2 != 0) k_xx = st->add(xv, &xv);
        }
        s1.add(*q, &*q);
        if (d2 != 0) k_cc = s1.add(*c, &*c);
        sv.plan();
        reset(info, niter);
        const size_t G = static_cast<size_t>(sv.G());
        kold.resize(G);
        r2.resize(G);
        active.resize(G);
        its.resize(G);
        why.resize(G);
    }
    int64_t niter;
    double d2, tol;
    Info &info;
    Vec yv, xv;
    Solve sv;
    Step fin, s0, s1, s3;
    std::optional<Vec> s, q, r, c;
    size_t k_xx = 0, k_cc = 0;
    std::vector<double> kold, r2;
    std::vector<char> active;
    std::vector<int64_t> its;
    std::vector<Stop> why;
};

Cgls::Cgls(comm::Agreement &ag, const ops::Operator &op, const Parts &yp, const Parts &xp, int64_t niter, double damp,
           double tol, Info &info)
{
    const Exec e = check_operands(ag, op, yp, xp, niter, "CGLS");
    ag.fold_double(damp);
    ag.fold_double(tol);
    ag.check([&] { m_ = std::make_unique<Impl>(op, yp, xp, e, niter, damp, tol, info); });
}

Cgls::~Cgls() = default;

void Cgls::run(const Monitor *mon)
{
    static const Monitor none;
    Impl &m = *m_;
    Info &info = m.info;
    info.reason = Stop::none;  // the room reserved by the plan is kept
    info.iterations = 0;
    info.r1norm = info.r2norm = 0;
    info.cost.clear();
    const double d2 = m.d2, tol = m.tol;
    const int64_t niter = m.niter;
    std::vector<double> &kold = m.kold, &r2 = m.r2;
    std::vector<char> &active = m.active;
    std::vector<int64_t> &its = m.its;
    std::vector<Stop> &why = m.why;
    std::fill(its.begin(), its.end(), 0);
    std::fill(why.begin(), why.end(), Stop::none);
    Solve *sv = &m.sv;
    Step *s0 = &m.s0, *s1 = &m.s1, *s3 = &m.s3;
    std::optional<Vec> &s = m.s, &q = m.q, &r = m.r, &c = m.c;
    const size_t k_xx = m.k_xx, k_cc = m.k_cc;
    const Vec &y = m.yv;
    Vec &x = m.xv;
    const int G = sv->G(), me = sv->mine();
    const size_t mi = static_cast<size_t>(me);
    sv->apply(x, *s, false);
    axpby(1, y, -1, *s);  // s = y - Op x
    sv->apply(*s, *r, true);
    if (d2 != 0) axpby(-d2, x, 1, *r);  // r = Op^H s - damp^2 x (PyLops: damp, unsquared)
    copy(*r, *c);
    sv->apply(*c, *q, false);
    s0->run();
    for (int g = 0; g < G; ++g) {
        const size_t i = static_cast<size_t>(g);
        kold[i] = s0->real(0, g);
        r2[i] = std::sqrt(s0->real(1, g) + (d2 != 0 ? d2 * s0->real(k_xx, g) : 0));
        active[i] = niter > 0 && kold[i] > tol;
        if (!std::isfinite(kold[i]) || !std::isfinite(r2[i])) end(active, why, i, Stop::nan);
    }
    info.cost.push_back(std::sqrt(s0->real(1, me)));
    Progress progress(mon ? *mon : none, x, "CGLS", niter, tol, true);
    while (any(active)) {
        s1->run(progress.take_stop(), progress.take_error());
        if (s1->stopped()) {
            end_all(active, why, Stop::callback);
            break;
        }
        // ||q||^2 + damp^2 ||c||^2
        const auto den = [&](int g) { return s1->real(0, g) + (d2 != 0 ? d2 * s1->real(k_cc, g) : 0); };
        for (int g = 0; g < G; ++g) {  // the same verdict on every rank
            const size_t i = static_cast<size_t>(g);
            if (active[i] && !std::isfinite(den(g))) end(active, why, i, Stop::nan);
            if (active[i] && den(g) == 0) end(active, why, i, Stop::breakdown);
        }
        const bool mine = active[mi];
        if (mine) {
            const double a = kold[mi] / den(me);
            axpby(a, *c, 1, x);
            axpby(-a, *q, 1, *s);
        }
        sv->apply(*s, *r, true);
        if (mine && d2 != 0) axpby(-d2, x, 1, *r);
        s3->run();
        if (mine) axpby(1, *r, s3->real(0, me) / kold[mi], *c);  // c = r + b c
        sv->apply(*c, *q, false);
        for (int g = 0; g < G; ++g) {
            const size_t i = static_cast<size_t>(g);
            if (!active[i]) continue;
            kold[i] = s3->real(0, g);
            r2[i] = std::sqrt(s3->real(1, g) + (d2 != 0 ? d2 * s3->real(k_xx, g) : 0));
            active[i] = ++its[i] < niter && kold[i] > tol;
            if (!std::isfinite(kold[i]) || !std::isfinite(r2[i])) end(active, why, i, Stop::nan);
        }
        if (mine) {
            info.cost.push_back(std::sqrt(s3->real(1, me)));
            progress.after(its[mi], kold[mi], r2[mi]);
        }
    }
    if (mon) settle(m.fin, progress);
    info.iterations = its[mi];
    info.reason = reason(why, mi, kold[mi] < tol);
    info.r1norm = kold[mi];
    info.r2norm = r2[mi];
}

void cgls(comm::Agreement &ag, const ops::Operator &op, const Parts &yp, const Parts &xp, int64_t niter, double damp,
          double tol, Info &info, const Monitor &mon)
{
    Cgls plan(ag, op, yp, xp, niter, damp, tol, info);
    ag.run();
    plan.run(&mon);
}

// ---- dot test and power iteration -------------------------------------------------------------

namespace {

// The same value for global index g on every rank count: a hash of (g, seed) in [-1, 1).
double noise(int64_t g, int seed)
{
    uint64_t z = static_cast<uint64_t>(g) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(seed) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
}

// Offset of this rank's block among its mask group's blocks (the global offset without a
// mask), so copies of replicated data held by different groups draw the same values.
int64_t noise_offset(const DistributedArray &a)
{
    const Layout &l = a.layout();
    if (!a.has_mask() || !l.scattered()) return l.offset(a.rank());
    int64_t off = 0;
    for (int q = 0; q < a.rank(); ++q)
        if (a.mask()[static_cast<size_t>(q)] == a.mask()[static_cast<size_t>(a.rank())])
            off += l.local[static_cast<size_t>(q)][static_cast<size_t>(l.axis)];
    return off;
}

// Host buffers the noise of a vector is drawn into before it goes to device arrays.
std::vector<Buffer> noise_staging(const Vec &v)
{
    std::vector<Buffer> b;
    for (const DistributedArray *a : v.p)
        if (a->space() != Space::host)
            b.push_back(Buffer::allocate(Space::host, static_cast<size_t>(a->local_size()) * dtype_size(a->dtype())));
    return b;
}

// Fills vectors from their global indices within the mask group (replicated data stay equal;
// member i draws from seed + 100 i), through host staging for device arrays.
void fill_noise(Vec &v, int seed, std::vector<Buffer> &staging)
{
    size_t next = 0;
    for (size_t m = 0; m < v.p.size(); ++m) {
        DistributedArray &a = *v.p[m];
        const int64_t off = noise_offset(a);
        const int sd = seed + 100 * static_cast<int>(m);
        void *dst = a.space() == Space::host ? a.data() : staging[next++].data();
        dispatch_float(a.dtype(), [&](auto t) {
            using T = decltype(t);
            T *p = static_cast<T *>(dst);
            for (int64_t i = 0; i < a.local_size(); ++i) {
                const int64_t g = off + i;
                if constexpr (is_complex_v<T>)
                    p[i] = T(static_cast<real_t<T>>(noise(g, sd)), static_cast<real_t<T>>(noise(g, sd + 7)));
                else
                    p[i] = static_cast<T>(noise(g, sd));
            }
        });
        if (dst != a.data())
            copy_bytes(a.space(), a.data(), Space::host, dst, static_cast<size_t>(a.local_size()) * dtype_size(a.dtype()),
                       a.exec().stream);
    }
}

Exec exec_of(const ops::Operator &op, Space s) { return op.comm().exec(s); }

// Power iteration on a square operator, planned inside an agreement's check (so that ISTA can
// plan it as part of its own solve) and run after it.
class Power {
public:
    Power(const ops::Operator &op, const Exec &e, uint64_t seed)
        : s_(op, e), b_(on(op, false, op.dtype(), e.space)), b1_(on(op, true, op.dtype(), e.space)),
          staging_(noise_staging(b_)), st0_(s_, "power iteration b.b"),
          st_(s_, "power iteration b.Ob, Ob.Ob"), seed_(seed),
          lambda_(static_cast<size_t>(s_.G())), active_(static_cast<size_t>(s_.G())), its_(static_cast<size_t>(s_.G()))
    {
        st0_.add(b_, &b_);
        st_.add(b_, &b1_);
        st_.add(b1_, &b1_);
        s_.plan();
    }
    Eigen run(int64_t niter, double tol)
    {
        const int G = s_.G(), me = s_.mine();
        std::vector<cplx> &lambda = lambda_;
        std::vector<char> &active = active_;
        std::vector<int64_t> &its = its_;
        std::fill(lambda.begin(), lambda.end(), cplx(0));
        std::fill(active.begin(), active.end(), niter > 0);
        std::fill(its.begin(), its.end(), 0);
        fill_noise(b_, static_cast<int>(seed_ % 1000003) + 11, staging_);
        st0_.run();
        axpby(0, b_, 1 / std::sqrt(st0_.real(0, me)), b_);  // b /= ||b||
        while (any(active)) {
            s_.apply(b_, b1_, false);
            st_.run();
            const double n1 = std::sqrt(st_.real(1, me));
            if (active[static_cast<size_t>(me)] && n1 != 0) axpby(1 / n1, b1_, 0, b_);
            for (int g = 0; g < G; ++g) {
                const size_t i = static_cast<size_t>(g);
                if (!active[i]) continue;
                const cplx old = lambda[i];
                lambda[i] = st_.value(0, g);  // lambda = b^H Op b
                ++its[i];
                // Op b = 0: lambda is 0. Converged, or niter: this group is done.
                active[i] = st_.real(1, g) != 0 && its[i] < niter && !(std::abs(lambda[i] - old) < tol * std::abs(lambda[i]));
            }
        }
        const cplx l = lambda[static_cast<size_t>(me)];
        return {l.real(), l.imag(), its[static_cast<size_t>(me)]};
    }

private:
    Solve s_;
    Vec b_, b1_;
    std::vector<Buffer> staging_;
    Step st0_, st_;
    uint64_t seed_;
    std::vector<cplx> lambda_;  // per group, kept between iterations
    std::vector<char> active_;
    std::vector<int64_t> its_;
};

}  // namespace

DotTest dottest(comm::Agreement &ag, const ops::Operator &op, double rtol)
{
    ag.check([&] {
        PLM_REQUIRE(!op.is_local(), PLM_ERR_INVALID_ARG, "dottest needs a distributed operator");
        PLM_REQUIRE(rtol >= 0, PLM_ERR_INVALID_ARG, "rtol %g is negative or NaN", rtol);
    });
    ag.fold_double(rtol);
    const DType dt = op.dtype();
    std::optional<Solve> s;
    std::optional<Vec> u, v, y, x;
    std::optional<Step> st;
    std::vector<Buffer> su, sv;
    ag.check([&] {
        const Exec e = exec_of(op, Space::host);
        s.emplace(op, e);
        u.emplace(on(op, false, dt, e.space));
        v.emplace(on(op, true, dt, e.space));
        y.emplace(on(op, true, dt, e.space));
        x.emplace(on(op, false, dt, e.space));
        st.emplace(*s, "dottest");
        st->add(*y, &*v);  // (Op u)^H v
        st->add(*u, &*x);  // u^H Op^H v
        s->plan();
        su = noise_staging(*u);
        sv = noise_staging(*v);
    });
    ag.run();
    fill_noise(*u, 1, su);
    fill_noise(*v, 2, sv);
    s->apply(*u, *y, false);
    s->apply(*v, *x, true);
    st->run();
    cplx yy = st->value(0, s->mine()), xx = st->value(1, s->mine());
    if (!op.clinear()) {  // real-linear only: complex numbers as pairs of reals (PyLops' dottest)
        yy = yy.real();
        xx = xx.real();
    }
    DotTest t{yy.real(), yy.imag(), xx.real(), xx.imag(), false};
    t.passed = std::abs(xx - yy) <= rtol * std::max(std::abs(xx), std::abs(yy)) + 1e-300;
    return t;
}

Eigen power_iteration(comm::Agreement &ag, const ops::Operator &op, int64_t niter, double tol, uint64_t seed)
{
    ag.check([&] {
        PLM_REQUIRE(!op.is_local(), PLM_ERR_INVALID_ARG, "power iteration needs a distributed operator");
        PLM_REQUIRE(niter >= 0 && tol >= 0, PLM_ERR_INVALID_ARG, "niter and tol must be non-negative");
        PLM_REQUIRE(square(op), PLM_ERR_SIZE_MISMATCH, "power iteration needs a square operator (domain == range)");
    });
    ag.fold(niter);
    ag.fold_double(tol);
    ag.fold(static_cast<int64_t>(seed));
    std::optional<Power> p;
    ag.check([&] { p.emplace(op, exec_of(op, Space::host), seed); });
    ag.run();
    return p->run(niter, tol);
}

// ---- ISTA / FISTA -----------------------------------------------------------------------------

namespace {

// ISTA/FISTA's thresholds of x, in place, in x's memory space.
void threshold(Vec &x, kernels::Threshold kind, double t)
{
    for (DistributedArray *a : x.p) kernels::threshold(a->exec(), a->dtype(), kind, t, a->local_size(), a->data());
}

}  // namespace

void ista(comm::Agreement &ag, const ops::Operator::Ptr &opp, const Parts &yp, const Parts &xp, const Sparse &o,
          Info &info, const Monitor &mon)
{
    const ops::Operator &op = *opp;
    const char *name = o.fista ? "FISTA" : "ISTA";
    const Exec e = check_operands(ag, op, yp, xp, o.niter, name);
    kernels::Threshold kind{};
    ag.check([&] {
        switch (o.kind) {
        case PLM_THRESH_SOFT: kind = kernels::Threshold::soft; break;
        case PLM_THRESH_HARD: kind = kernels::Threshold::hard; break;
        case PLM_THRESH_HALF: kind = kernels::Threshold::half; break;
        default: PLM_FAIL(PLM_ERR_INVALID_ARG, "unknown threshold kind %d", o.kind);
        }
        PLM_REQUIRE(o.decay.empty() || static_cast<int64_t>(o.decay.size()) >= o.niter, PLM_ERR_SIZE_MISMATCH,
                    "decay has %zu values for %lld iterations", o.decay.size(), static_cast<long long>(o.niter));
    });
    for (double v : {o.eps, o.alpha, o.tol}) ag.fold_double(v);
    ag.fold(o.kind);
    ag.fold(o.monitorres);
    ag.fold(o.fista);
    for (double v : o.decay) ag.fold_double(v);  // equal on every rank
    const DType dt = op.dtype();
    std::optional<Vec> yv, xv;
    std::optional<Solve> s;
    std::optional<Vec> res, grad, xold, z;
    ops::Operator::Ptr normal;   // Op^H Op for the automatic step (outlives its power iteration)
    std::optional<Step> smon, st, fin;
    std::optional<Power> power;
    size_t k_dx = 0, k_rr = 0, k_l1 = 0;
    std::vector<double> normres, last_res, xupdate;
    std::vector<char> active;
    std::vector<int64_t> its;
    std::vector<Stop> why;
    ag.check([&] {
        yv.emplace(view(yp, true));
        xv.emplace(view(xp, false));
        s.emplace(op, e);
        fin.emplace(*s, "ISTA end");
        res.emplace(on(op, true, dt, e.space));
        grad.emplace(on(op, false, dt, e.space));
        xold.emplace(on(op, false, dt, e.space));
        z.emplace(on(op, false, dt, e.space));
        smon.emplace(*s, "ISTA monitorres");
        st.emplace(*s, "ISTA step");
        smon->add(*res, &*res);
        k_dx = st->add(*xold, &*xold);
        k_rr = st->add(*res, &*res);
        k_l1 = st->add(*xv, nullptr);
        s->plan();
        if (o.alpha <= 0) {
            normal = ops::product(ops::adjoint(opp), opp);
            power.emplace(*normal, e, 0);
        }
        reset(info, o.niter);
        const size_t G = static_cast<size_t>(s->G());
        normres.assign(G, std::numeric_limits<double>::infinity());
        xupdate.assign(G, std::numeric_limits<double>::infinity());
        last_res.assign(G, 0.0);
        active.assign(G, o.niter > 0);
        its.assign(G, 0);
        why.assign(G, Stop::none);
    });
    ag.run();
    const Vec &y = *yv;
    Vec &x = *xv;
    double alpha = o.alpha;
    if (power) {  // 1 / |lambda_max(Op^H Op)|
        const Eigen ev = power->run(30, 1e-5);
        alpha = 1 / std::abs(cplx(ev.re, ev.im));
    }
    const double thresh = o.eps * alpha * 0.5;
    const int G = s->G(), me = s->mine();
    const size_t mi = static_cast<size_t>(me);
    copy(x, *z);
    Progress progress(mon, x, name, o.niter, o.tol, true);
    double t = 1;
    while (any(active)) {
        const bool mine = active[mi];
        copy(x, *xold);
        const Vec &base = o.fista ? *z : x;
        s->apply(base, *res, false);
        axpby(1, y, -1, *res);  // res = y - Op base
        if (o.monitorres) {
            smon->run(progress.take_stop(), progress.take_error());
            if (smon->stopped()) {
                end_all(active, why, Stop::callback);
                break;
            }
            for (int g = 0; g < G; ++g) {
                const size_t i = static_cast<size_t>(g);
                if (!active[i]) continue;
                const double nr = std::sqrt(smon->real(0, g));  // the same verdict on every rank
                if (nr > normres[i]) info.reason = Stop::diverged;
                PLM_REQUIRE(nr <= normres[i], PLM_ERR_NOT_CONVERGED,
                            "%s: the residual norm grew from %g to %g at iteration %lld (monitorres%s)", name,
                            normres[i], nr, static_cast<long long>(its[i] + 1), G > 1 ? ", in one mask group" : "");
                normres[i] = nr;
            }
        }
        s->apply(*res, *grad, true);
        if (mine) {
            copy(base, x);
            axpby(alpha, *grad, 1, x);  // x = base + alpha Op^H res
            threshold(x, kind, (o.decay.empty() ? 1.0 : o.decay[static_cast<size_t>(its[mi])]) * thresh);
        }
        if (o.fista) {
            const double told = t;
            t = (1 + std::sqrt(1 + 4 * t * t)) / 2;
            if (mine) {
                copy(x, *z);
                axpby(-(told - 1) / t, *xold, 1 + (told - 1) / t, *z);  // z = x + (told-1)/t (x - xold)
            }
            s->apply(x, *res, false);  // FISTA's cost: a fresh residual
            axpby(1, y, -1, *res);
        }
        axpby(1, x, -1, *xold);  // xold = x - xold
        if (o.monitorres) st->run();
        else st->run(progress.take_stop(), progress.take_error());
        if (st->stopped()) {
            end_all(active, why, Stop::callback);
            break;
        }
        for (int g = 0; g < G; ++g) {
            const size_t i = static_cast<size_t>(g);
            if (!active[i]) continue;
            xupdate[i] = std::sqrt(st->real(k_dx, g));
            last_res[i] = st->real(k_rr, g);
            active[i] = ++its[i] < o.niter && xupdate[i] > o.tol;
            if (!std::isfinite(xupdate[i]) || !std::isfinite(last_res[i])) end(active, why, i, Stop::nan);
            if (g == me) info.cost.push_back(0.5 * last_res[i] + o.eps * st->real(k_l1, g));
        }
        if (mine) progress.after(its[mi], info.cost.back(), std::sqrt(last_res[mi]));
    }
    settle(*fin, progress);
    info.iterations = its[mi];
    info.reason = reason(why, mi, xupdate[mi] <= o.tol);
    info.r1norm = xupdate[mi];
    info.r2norm = std::sqrt(last_res[mi]);
}

}  // namespace plm::solvers
