// The structs behind the C API's opaque handles.
#pragma once
#include <atomic>
#include <memory>

#include "capi/barrier.h"
#include "config/config.h"
#include "core/log.h"
#include "runtime/session.h"
#include "tokenizer/tokenizer.h"

struct trainrt_config {
    trt::Config config;
    trt::LogSink log_sink;  // handed to sessions created from this config
    const void* mpi_comm = nullptr;  // trainrt_config_set_mpi_comm: an MPI_Comm* of the host's
    // Set by every call that reads or writes the handle (BusyGuard): reads take it too, since
    // a read racing trainrt_config_set would see a value being replaced. Mutable so the
    // getters, which take a const handle, can take it.
    mutable trt::capi::BusyFlag busy;
};

struct trainrt_session {
    std::unique_ptr<trt::Session> session;
    trt::capi::BusyFlag busy;
};

// Immutable once loaded: no busy flag (several threads may encode at once).
struct trainrt_tokenizer {
    trt::tok::Tokenizer tokenizer;
};
