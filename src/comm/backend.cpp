#include "comm/backend.hpp"

#include <cstdio>
#include <cstring>

#include "comm/pool.hpp"
#include "core/error.hpp"

namespace plm::comm {

void *Pending::operator new(std::size_t bytes) { return pool::take(bytes); }
void Pending::operator delete(void *p, std::size_t bytes) noexcept { pool::give(p, bytes); }

void Poison::mark(plm_status_t status, const char *message) noexcept
{
    std::lock_guard<std::mutex> g(lock_);
    if (set_.load(std::memory_order_relaxed)) return;
    status_ = status == PLM_SUCCESS ? PLM_ERR_INTERNAL : status;
    std::snprintf(text_, sizeof text_, "%s", message ? message : "");
    set_.store(true, std::memory_order_release);
}

plm_status_t Poison::status() const
{
    std::lock_guard<std::mutex> g(lock_);
    return status_;
}

void Poison::message(char *out, std::size_t n) const
{
    if (!out || n == 0) return;
    std::lock_guard<std::mutex> g(lock_);
    std::snprintf(out, n, "%s", text_);
}

Error Poison::error() const
{
    std::lock_guard<std::mutex> g(lock_);
    return Error(status_, std::string("the communicator is unusable after an earlier failure that could not be agreed "
                                      "(plm_comm_get_async_error): ") +
                              text_);
}

void fail_unagreed(Poison *p, const Error &e)
{
    if (p) p->mark(e.status(), e.what());
    char text[kMsgLen + 160];
    std::snprintf(text, sizeof text, "%s; the communicator is now unusable: every later collective call on it fails",
                  e.what());
    throw Error(e.status(), text);
}

namespace {

// Completes its parts in order. Holds the caller's vector: no allocation.
class Group final : public Pending {
public:
    explicit Group(std::vector<Request> parts) : parts_(std::move(parts)) {}
    bool test() override
    {
        for (Request &r : parts_)
            if (!r.test()) return false;
        return true;
    }
    void wait() override
    {
        for (Request &r : parts_) r.wait();
    }

private:
    std::vector<Request> parts_;
};

// Completes one request, then runs an action once.
class Then final : public Pending {
public:
    Then(Request inner, std::function<void()> f) : inner_(std::move(inner)), f_(std::move(f)) {}
    bool test() override
    {
        if (!inner_.test()) return false;
        finish();
        return true;
    }
    void wait() override
    {
        inner_.wait();
        finish();
    }

private:
    void finish()
    {
        std::function<void()> f;
        f.swap(f_);
        if (f) f();
    }
    Request inner_;
    std::function<void()> f_;
};

}  // namespace

Request &Request::operator=(Request &&o) noexcept
{
    if (this != &o) {
        finish_quietly();
        p_ = std::move(o.p_);
    }
    return *this;
}

Request::~Request() { finish_quietly(); }

void Request::finish_quietly() noexcept
{
    if (!p_) return;
    try {
        p_->wait();
    } catch (...) {  // a destructor cannot report; callers who care call wait()
    }
    p_.reset();
}

bool Request::test()
{
    if (!p_) return true;
    std::unique_ptr<Pending> p = std::move(p_);  // an error leaves the request complete
    if (!p->test()) {
        p_ = std::move(p);
        return false;
    }
    return true;
}

void Request::wait()
{
    if (!p_) return;
    std::unique_ptr<Pending> p = std::move(p_);
    p->wait();
}

Request Request::all(std::vector<Request> rs) { return Request(std::make_unique<Group>(std::move(rs))); }

Request Request::then(std::function<void()> f) &&
{
    return Request(std::make_unique<Then>(std::move(*this), std::move(f)));
}

const char *Backend::name() const { return plm_backend_name(kind()); }

void Backend::unsupported(const char *what) const
{
    PLM_FAIL(PLM_ERR_NOT_SUPPORTED, "the %s backend does not implement %s", name(), what);
}

Request Backend::iallreduce(const Exec &, const void *, void *, int64_t, DType, ReduceOp) { unsupported("allreduce"); }
Request Backend::ireduce(const Exec &, const void *, void *, int64_t, DType, ReduceOp, int) { unsupported("reduce"); }
Request Backend::iallgatherv(const Exec &, const void *, void *, const int64_t *, const int64_t *, DType)
{
    unsupported("allgatherv");
}
Request Backend::ibcast(const Exec &, void *, int64_t, DType, int) { unsupported("bcast"); }
Request Backend::isend(const Exec &, const void *, int64_t, DType, int, int) { unsupported("send"); }
Request Backend::irecv(const Exec &, void *, int64_t, DType, int, int) { unsupported("recv"); }
Request Backend::ialltoallv(const Exec &, const void *, const int64_t *, const int64_t *, void *, const int64_t *,
                            const int64_t *, DType, int)
{
    unsupported("alltoallv");
}
std::unique_ptr<Backend> Backend::split(const CommView &) const { unsupported("split"); }

void Backend::copy_own_block(const Exec &e, void *dst, const void *src, std::size_t bytes)
{
    copy_bytes(e.space, dst, e.space, src, bytes, e.stream);
}

Request Backend::iexchange(const Exec &e, DType dt, const Message *msgs, std::size_t n)
{
    std::vector<Request> rs;
    for (std::size_t i = 0; i < n; ++i) {
        const Message &m = msgs[i];
        rs.push_back(m.send ? isend(e, m.buf, m.count, dt, m.peer, m.tag) : irecv(e, m.buf, m.count, dt, m.peer, m.tag));
    }
    return Request::all(std::move(rs));
}

void Backend::allreduce(const Exec &e, const void *send, void *recv, int64_t count, DType dt, ReduceOp op)
{
    iallreduce(e, send, recv, count, dt, op).wait();
}

void Backend::allgatherv(const Exec &e, const void *send, void *recv, const int64_t *counts, const int64_t *displs,
                         DType dt)
{
    iallgatherv(e, send, recv, counts, displs, dt).wait();
}

void Backend::bcast(const Exec &e, void *buf, int64_t count, DType dt, int root) { ibcast(e, buf, count, dt, root).wait(); }

bool backend_built(plm_backend_t b)
{
    switch (b) {
    case PLM_BACKEND_MPI_HOST: return true;
    // The device paths need device memory: a CUDA build and a visible device.
    case PLM_BACKEND_MPI_CUDA_AWARE:
    case PLM_BACKEND_MPI_STAGED: return space_ops(Space::device) != nullptr;
#ifdef PLM_HAVE_NCCL
    case PLM_BACKEND_NCCL: return space_ops(Space::device) != nullptr;
#endif
    default: return false;
    }
}

void mpi_check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    PLM_FAIL(PLM_ERR_MPI, "%s: %.*s", what, len, text);
}

ReturnErrors::ReturnErrors()
{
    for (int i = 0; i < 2; ++i) {
        MPI_Comm_get_errhandler(comms_[i], &old_[i]);
        MPI_Comm_set_errhandler(comms_[i], MPI_ERRORS_RETURN);
    }
}

ReturnErrors::~ReturnErrors()
{
    // Only a handler MPI gave back (SimGrid's SMPI gives none for MPI_COMM_SELF).
    for (int i = 0; i < 2; ++i) {
        if (old_[i] == MPI_ERRHANDLER_NULL) continue;
        MPI_Comm_set_errhandler(comms_[i], old_[i]);
        MPI_Errhandler_free(&old_[i]);
    }
}

}  // namespace plm::comm
