// Device faults after a collective call's agreement. A device error (a faulting kernel, a
// failed stream synchronisation or library call) found after the agreement cannot be agreed
// any more: throwing would take this rank out of the rest of the call's communication while
// its peers wait in it for ever (a solve's next halo exchange, say). So it is recorded
// instead: the call's communicator is poisoned (comm sets the sink when its agreement runs),
// this rank carries on with the call's communication on whatever data it has, and the next
// call on the communicator fails on every rank (plm_comm_get_async_error reports it at once).
// That is how CUDA itself reports a kernel's fault: at a later synchronisation.
#pragma once

#include <memory>
#include <string>

#include "core/error.hpp"

namespace plm {

// What receives the deferred faults of a call (the communicator's poison).
class FaultSink {
public:
    virtual void mark(plm_status_t status, const char *message) noexcept = 0;

protected:
    ~FaultSink() = default;
};

// The calling thread's current call: its agreement has run on the communicator of `sink`.
void set_device_fault_sink(std::shared_ptr<FaultSink> sink) noexcept;

// A device failure with status and message: after the agreement of the thread's current call
// (core/alloc.hpp), marks the sink and returns; before it (or without a sink), throws Error.
void device_fault(plm_status_t status, const std::string &message);

}  // namespace plm
