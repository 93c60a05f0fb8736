#include "comm/agreement.hpp"
#include "comm/pool.hpp"
#include "core/sim.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <string>

namespace plm::comm {

namespace {

// Word ops beyond LaneOp: the header words of every agreement.
constexpr int64_t kMinInt = 1;   // first failing rank
constexpr int64_t kMaxBits = 2;  // fingerprint (unsigned max of h and of ~h)
constexpr size_t kHeader = 3;

using Word = Agreement::Word;

double as_double(int64_t b)
{
    double d;
    std::memcpy(&d, &b, sizeof d);
    return d;
}

int64_t as_bits(double d)
{
    int64_t b;
    std::memcpy(&b, &d, sizeof b);
    return b;
}

// One multiply-xorshift step per value (a fingerprint of arguments, not a cryptographic hash).
void mix(uint64_t &h, int64_t v)
{
    h = (h ^ static_cast<uint64_t>(v)) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
}

double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b); }

// Element-wise: each word says how it combines, so MPI may split the vector anywhere.
void reduce_words(void *in, void *inout, int *len, MPI_Datatype *)
{
    const Word *a = static_cast<const Word *>(in);
    Word *b = static_cast<Word *>(inout);
    for (int i = 0; i < *len; ++i) {
        const double x = as_double(a[i].bits), y = as_double(b[i].bits);
        switch (b[i].op) {
        case kMinInt: b[i].bits = a[i].bits < b[i].bits ? a[i].bits : b[i].bits; break;
        case kMaxBits:
            if (static_cast<uint64_t>(a[i].bits) > static_cast<uint64_t>(b[i].bits)) b[i].bits = a[i].bits;
            break;
        case int64_t(LaneOp::sum): b[i].bits = as_bits(x + y); break;
        case int64_t(LaneOp::max): b[i].bits = as_bits(nan_max(x, y)); break;
        case int64_t(LaneOp::min): b[i].bits = as_bits(nan_min(x, y)); break;
        case int64_t(LaneOp::imax): b[i].bits = a[i].bits > b[i].bits ? a[i].bits : b[i].bits; break;
        default: break;
        }
    }
}

// The word datatype and the op, made once and freed when MPI_Finalize deletes
// MPI_COMM_SELF's attributes (the first thing it does).
struct WordOp {
    std::mutex lock;
    std::atomic<bool> made{false};  // read without the lock on every agreement
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
};

WordOp &word_op()
{
    static WordOp w;
    return w;
}

int free_word_op(MPI_Comm, int keyval, void *, void *)
{
    WordOp &w = word_op();
    std::lock_guard<std::mutex> g(w.lock);
    if (w.made.load()) {
        MPI_Op_free(&w.op);
        MPI_Type_free(&w.type);
        w.made.store(false);
    }
    MPI_Comm_free_keyval(&keyval);
    return MPI_SUCCESS;
}

const WordOp &ensure_word_op()
{
    WordOp &w = word_op();
    if (w.made.load(std::memory_order_acquire)) return w;
    std::lock_guard<std::mutex> g(w.lock);
    if (w.made.load(std::memory_order_relaxed)) return w;
    mpi_check(MPI_Type_contiguous(2, MPI_INT64_T, &w.type), "MPI_Type_contiguous");
    mpi_check(MPI_Type_commit(&w.type), "MPI_Type_commit");
    mpi_check(MPI_Op_create(reduce_words, 1, &w.op), "MPI_Op_create");
    int keyval = MPI_KEYVAL_INVALID;
    mpi_check(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_word_op, &keyval, nullptr),
              "MPI_Comm_create_keyval");
    mpi_check(MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr), "MPI_Comm_set_attr");
    w.made.store(true, std::memory_order_release);
    return w;
}

}  // namespace

Agreement::Agreement(const Communicator &c, const char *what) : c_(c), what_(what), n_(kHeader)
{
    for (const char *p = what; *p; ++p) fold(*p);
    // What the call's communication will take after the agreement (comm/pool.hpp).
    check([&] { pool::top_up(c.size()); });
}

void Agreement::fold(int64_t v) { mix(hash_, v); }

void Agreement::fold_double(double v) { fold(as_bits(v)); }

namespace {
double identity_of(int64_t op)
{
    return op == int64_t(LaneOp::max)   ? -std::numeric_limits<double>::infinity()
           : op == int64_t(LaneOp::min) ? std::numeric_limits<double>::infinity()
                                        : -0.0;  // -0.0 + x == x, also for x = -0.0
}

int64_t identity_bits(int64_t op)
{
    return op == int64_t(LaneOp::imax) ? std::numeric_limits<int64_t>::min() : as_bits(identity_of(op));
}
}  // namespace

size_t Agreement::add_lanes(size_t n, LaneOp op)
{
    const size_t first = n_ - kHeader;
    const Word w{static_cast<int64_t>(op), identity_bits(static_cast<int64_t>(op))};
    if (!short_) {
        try {
            if (heap_.empty() && n_ + n > kInlineWords) heap_.assign(inline_.begin(), inline_.begin() + n_);
        } catch (const std::bad_alloc &) {
            short_ = true;  // this rank keeps only the header: its error goes in the first reduction
            add_error(Error(PLM_ERR_OUT_OF_MEMORY, std::string(what_) + ": out of memory for the agreement"));
        }
    }
    if (!short_) {
        if (!heap_.empty()) {
            try {
                alloc::Allowed growth;  // the agreement carries its own failure
                heap_.resize(n_ + n, w);
            } catch (const std::bad_alloc &) {
                short_ = true;
                add_error(Error(PLM_ERR_OUT_OF_MEMORY, std::string(what_) + ": out of memory for the agreement"));
            }
        } else {
            std::fill(inline_.begin() + n_, inline_.begin() + n_ + n, w);
        }
    }
    n_ += n;  // the intended length, the same on every rank
    return first;
}

void Agreement::set(size_t i, double v)
{
    if (have(i)) words()[kHeader + i].bits = as_bits(v);
}

double Agreement::get(size_t i) const { return as_double(words()[kHeader + i].bits); }

void Agreement::set_int(size_t i, int64_t v)
{
    if (have(i)) words()[kHeader + i].bits = v;
}

int64_t Agreement::get_int(size_t i) const { return words()[kHeader + i].bits; }

size_t Agreement::add_gather(int64_t mine)
{
    const size_t first = add_lanes(static_cast<size_t>(c_.size()), LaneOp::imax);
    if (have(first + static_cast<size_t>(c_.rank()))) words()[kHeader + first + static_cast<size_t>(c_.rank())].bits = mine;
    return first;
}

int64_t Agreement::gathered(size_t first, int r) const { return words()[kHeader + first + static_cast<size_t>(r)].bits; }

void Agreement::rearm()
{
    local_.reset();
    if (short_) return;  // not reached: a short agreement fails its run
    Word *w = words();
    for (size_t i = kHeader; i < n_; ++i) w[i].bits = identity_bits(w[i].op);
}

void Agreement::reduce(Word *w, size_t n)
{
    const WordOp &op = ensure_word_op();
    sim::before_mpi();
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, w, static_cast<int>(n), op.type, op.op, c_.mpi()), "MPI_Allreduce (agreement)");
}

void Agreement::raise(int64_t first)
{
    // Everyone learns the root cause from the lowest failing rank.
    struct {
        int64_t status;
        char text[kMsgLen];
    } m{};
    if (first == c_.rank()) {
        m.status = local_->status();
        std::strncpy(m.text, local_->what(), sizeof m.text - 1);
    }
    mpi_check(MPI_Bcast(&m, static_cast<int>(sizeof m), MPI_BYTE, static_cast<int>(first), c_.mpi()),
              "MPI_Bcast (agreement)");
    m.text[sizeof m.text - 1] = '\0';
    const auto status = static_cast<plm_status_t>(m.status);
    // Every rank returns the root cause's status; a rank that failed otherwise keeps its own
    // message too (two ranks failing differently - an allocation here, an unsupported operand
    // there - must not return two statuses).
    if (local_ && local_->status() == status) throw *local_;
    std::string text = "on rank " + std::to_string(first) + ": " + m.text;
    if (local_) text += std::string(" (and here: ") + local_->what() + ")";
    throw Error(status, text);
}

void Agreement::run()
{
    require_mpi_usable();
    add_error(c_.poison_error());  // a poisoned rank makes every rank fail (comm/backend.hpp)
    // The word count joins the fingerprint, and the first reduction has kFirstWords words on
    // every rank: ranks whose arguments give different lane counts (another mask, another
    // kind of operand) fail on the fingerprint instead of reducing vectors of different lengths.
    uint64_t h = hash_;
    mix(h, static_cast<int64_t>(n_));
    Word spare[kFirstWords];
    Word *first = short_ ? spare : words();  // in place: the inline words hold kFirstWords
    first[0] = {kMinInt, local_ ? c_.rank() : c_.size()};
    first[1] = {kMaxBits, static_cast<int64_t>(h)};
    first[2] = {kMaxBits, static_cast<int64_t>(~h)};
    for (size_t i = short_ ? kHeader : n_; i < kFirstWords; ++i) first[i] = {0, 0};  // op 0: kept as is
    reduce(first, kFirstWords);
    if (first[0].bits < c_.size()) raise(first[0].bits);
    PLM_REQUIRE(first[1].bits == ~first[2].bits, PLM_ERR_INVALID_ARG,
                "%s: ranks passed different values of arguments that must be equal on every rank", what_);
    if (n_ > kFirstWords) reduce(words() + kFirstWords, n_ - kFirstWords);
    alloc::set_after_agreement(true);
    set_device_fault_sink(c_.poison_ptr());  // device faults from here on poison c_ (core/device_fault.hpp)
}

bool same_ranks(const Communicator &a, const Communicator &b)
{
    if (&a == &b) return true;
    if (a.size() != b.size()) return false;
    require_mpi_usable();
    int r = MPI_UNEQUAL;
    mpi_check(MPI_Comm_compare(a.mpi(), b.mpi(), &r), "MPI_Comm_compare");
    return r == MPI_IDENT || r == MPI_CONGRUENT;
}

void require_mpi_usable()
{
    int init = 0, done = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&done);
    PLM_REQUIRE(init && !done, PLM_ERR_INVALID_ARG, "MPI is %s", done ? "already finalized" : "not initialized");
}

void require_user_comm(MPI_Comm c)
{
    require_mpi_usable();
    PLM_REQUIRE(c != MPI_COMM_NULL && c != MPI_Comm{}, PLM_ERR_INVALID_ARG, "MPI communicator is MPI_COMM_NULL");
    int inter = 0, rc = MPI_SUCCESS;
    {
        ReturnErrors quiet;
        rc = MPI_Comm_test_inter(c, &inter);
    }
    PLM_REQUIRE(rc == MPI_SUCCESS, PLM_ERR_INVALID_ARG, "MPI communicator handle is not valid");
    PLM_REQUIRE(!inter, PLM_ERR_INVALID_ARG, "inter-communicators are not supported");
}

MPI_Comm comm_from_fortran(MPI_Fint f)
{
    require_mpi_usable();
    MPI_Comm c = MPI_COMM_NULL;
    {
        ReturnErrors quiet;
        c = MPI_Comm_f2c(f);
    }
    PLM_REQUIRE(c != MPI_Comm{}, PLM_ERR_INVALID_ARG, "Fortran communicator handle %d is not valid",
                static_cast<int>(f));
    return c;
}

}  // namespace plm::comm
