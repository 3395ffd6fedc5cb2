// libtrainrt-mpi: the MPI world as a trt::dist::Communicator (docs/DISTRIBUTED.md). The only
// code of the project that includes mpi.h; built into its own module (mpi_module.h says why).
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/bf16.h"
#include "core/error.h"
#include "core/version.h"
#include "dist/communicator.h"
#include "dist/mpi_module.h"

namespace trt::dist {
namespace {

// Whether this module called MPI_Init (then it finalises at exit), and whether a session of
// this process failed mid-run in a world of several ranks (then it aborts the job at exit:
// Open MPI's MPI_Finalize waits for every rank, which would hang beside peers still waiting at
// a collective).
std::atomic<bool> g_initialised_here{false};
std::atomic<bool> g_failed{false};

void finish_at_exit() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (g_failed.load() && size > 1) {
        std::fflush(stdout);
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);  // mpirun ends every rank and reports which one failed
    }
    if (g_initialised_here.load()) MPI_Finalize();
}

std::string mpi_error(int code) {
    char text[MPI_MAX_ERROR_STRING] = {0};
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return cat("MPI error ", code);
    return std::string(text, static_cast<size_t>(len));
}

// MPI counts are int: collectives over longer buffers go in pieces of this many elements.
constexpr size_t kMaxPiece = size_t{1} << 30;

// bf16 sum as an MPI operation (MPI has no bf16 type): inout[i] = bf16(in[i] + inout[i]).
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
    const auto* a = static_cast<const uint16_t*>(in);
    auto* b = static_cast<uint16_t*>(inout);
    for (int i = 0; i < *len; ++i) b[i] = float_to_bf16(bf16_to_float(a[i]) + bf16_to_float(b[i]));
}

MPI_Op bf16_sum_op() {
    static MPI_Op op = [] {
        MPI_Op o = MPI_OP_NULL;
        MPI_Op_create(&bf16_sum, /*commute=*/1, &o);
        return o;
    }();
    return op;
}

class MpiRank final : public Communicator {
public:
    MpiRank(MPI_Comm base, int64_t timeout_s) : timeout_(std::chrono::seconds(timeout_s)) {
        check(MPI_Comm_dup(base, &comm_), "MPI_Comm_dup");
        MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
        MPI_Comm_rank(comm_, &rank_);
        MPI_Comm_size(comm_, &size_);
        watchdog_ = std::thread([this] { watch(); });
    }
    ~MpiRank() override {
        {
            std::lock_guard<std::mutex> lock(mu_);
            stopping_ = true;
        }
        cv_.notify_all();
        watchdog_.join();
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Comm_free(&comm_);
    }

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    std::string name() const override { return "mpi"; }

    void all_reduce_sum(float* data, size_t n) override { reduce(data, n, MPI_FLOAT, floats_); }
    void all_reduce_sum(double* data, size_t n) override {
        reduce(data, n, MPI_DOUBLE, doubles_);
    }
    void all_reduce_sum_bf16(uint16_t* data, size_t n) override {
        reduce(data, n, MPI_UINT16_T, halves_, bf16_sum_op());
    }

    void all_gather(const void* mine, size_t bytes, void* all) override {
        TRT_CHECK(bytes < kMaxPiece, "all_gather of ", bytes, " bytes");
        Collective c(*this, "MPI_Allgather");
        check(MPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all,
                            static_cast<int>(bytes), MPI_BYTE, comm_),
              "MPI_Allgather");
    }

    void reduce_scatter_sum(float* data, const std::vector<size_t>& bounds) override {
        Collective c(*this, "MPI_Reduce_scatter");
        set_parts(bounds);
        const size_t lo = bounds[static_cast<size_t>(rank_)], hi = bounds[static_cast<size_t>(rank_) + 1];
        floats_.resize(std::max<size_t>(1, hi - lo));
        check(MPI_Reduce_scatter(data, floats_.data(), counts_.data(), MPI_FLOAT, MPI_SUM, comm_),
              "MPI_Reduce_scatter");
        std::copy(floats_.begin(), floats_.begin() + static_cast<std::ptrdiff_t>(hi - lo), data + lo);
    }

    void all_gather_parts(float* data, const std::vector<size_t>& bounds) override {
        Collective c(*this, "MPI_Allgatherv");
        set_parts(bounds);
        check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, data, counts_.data(), displs_.data(),
                             MPI_FLOAT, comm_),
              "MPI_Allgatherv");
    }

    void barrier() override {
        Collective c(*this, "MPI_Barrier");
        check(MPI_Barrier(comm_), "MPI_Barrier");
    }

    void mark_failed() override {
        failed_ = true;
        if (size_ > 1) g_failed = true;
    }

private:
    // The sum is reduce-scattered (rank r sums part r, once) and then all-gathered (everyone
    // copies each part from its owner), so every rank holds the same bits by construction,
    // whichever algorithm MPI picks — an MPI_Allreduce may sum in another order on each rank
    // and let their weights drift apart. The same bandwidth as a ring all-reduce; and the
    // order of each part's sum is fixed for a fixed world size, so runs repeat bit for bit.
    template <typename T>
    void reduce(T* data, size_t n, MPI_Datatype type, std::vector<T>& part, MPI_Op op = MPI_SUM) {
        Collective c(*this, "MPI_Reduce_scatter + MPI_Allgatherv");
        for (size_t off = 0; off < n; off += kMaxPiece) {
            const size_t len = std::min(kMaxPiece, n - off);
            counts_.resize(static_cast<size_t>(size_));
            displs_.resize(static_cast<size_t>(size_));
            for (int r = 0; r < size_; ++r) {
                const size_t lo = len * static_cast<size_t>(r) / static_cast<size_t>(size_);
                const size_t hi = len * static_cast<size_t>(r + 1) / static_cast<size_t>(size_);
                counts_[static_cast<size_t>(r)] = static_cast<int>(hi - lo);
                displs_[static_cast<size_t>(r)] = static_cast<int>(lo);
            }
            part.resize(std::max<size_t>(1, len / static_cast<size_t>(size_) + 1));
            check(MPI_Reduce_scatter(data + off, part.data(), counts_.data(), type, op, comm_),
                  "MPI_Reduce_scatter");
            check(MPI_Allgatherv(part.data(), counts_[static_cast<size_t>(rank_)], type,
                                 data + off, counts_.data(), displs_.data(), type, comm_),
                  "MPI_Allgatherv");
        }
    }

    // counts_/displs_ from cut points; MPI's int counts and displacements bound the buffer.
    void set_parts(const std::vector<size_t>& bounds) {
        TRT_CHECK(bounds.size() == static_cast<size_t>(size_) + 1 && bounds.back() < (size_t{1} << 31),
                  "data parallel: ZeRO-1 over ", bounds.back(), " floats: MPI counts are int, so "
                  "buffers of 2^31 floats and more are not supported yet");
        counts_.resize(static_cast<size_t>(size_));
        displs_.resize(static_cast<size_t>(size_));
        for (size_t r = 0; r < static_cast<size_t>(size_); ++r) {
            counts_[r] = static_cast<int>(bounds[r + 1] - bounds[r]);
            displs_[r] = static_cast<int>(bounds[r]);
        }
    }

    void check(int code, const char* what) const {
        if (code != MPI_SUCCESS)
            fail(Status::Internal, "data parallel: ", what, " failed on rank ", rank_, " of ",
                 size_, ": ", mpi_error(code));
    }

    // Marks a collective in progress for the watchdog; refuses one after a failure.
    class Collective {
    public:
        Collective(MpiRank& world, const char* what) : world_(world) {
            if (world.failed_)
                fail(Status::Internal, "data parallel: rank ", world.rank_, " failed earlier in "
                     "this run; its MPI world cannot be used any more");
            std::lock_guard<std::mutex> lock(world.mu_);
            world.current_ = what;
            world.since_ = std::chrono::steady_clock::now();
        }
        ~Collective() {
            std::lock_guard<std::mutex> lock(world_.mu_);
            world_.current_ = nullptr;
        }

    private:
        MpiRank& world_;
    };

    // A peer that hangs (alive, but never reaching the collective) would hold every other
    // rank forever; one that dies is ended by mpirun. After dist.timeout at one collective
    // this rank ends the whole job.
    void watch() {
        std::unique_lock<std::mutex> lock(mu_);
        while (!stopping_) {
            cv_.wait_for(lock, std::chrono::seconds(1));
            if (stopping_ || !current_) continue;
            const auto waited = std::chrono::steady_clock::now() - since_;
            if (waited < timeout_) continue;
            std::fprintf(stderr,
                         "[rank %d/%d] error: data parallel: waited %lld s in %s (dist.timeout): "
                         "another rank has hung or left; ending the job\n",
                         rank_, size_,
                         static_cast<long long>(
                             std::chrono::duration_cast<std::chrono::seconds>(waited).count()),
                         current_);
            std::fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
            std::_Exit(1);  // if MPI_Abort returned
        }
    }

    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1;
    bool failed_ = false;
    std::vector<int> counts_, displs_;
    std::vector<float> floats_;
    std::vector<double> doubles_;
    std::vector<uint16_t> halves_;

    const std::chrono::seconds timeout_;
    std::mutex mu_;
    std::condition_variable cv_;
    const char* current_ = nullptr;  // the collective in progress, or null
    std::chrono::steady_clock::time_point since_;
    bool stopping_ = false;
    std::thread watchdog_;
};

// MPI_THREAD_MULTIPLE when the library has it (the watchdog may call MPI_Abort while the
// session's thread is inside a collective); at least SERIALIZED, since a host may step a
// session from any thread (a Go program, a thread pool).
void init_mpi() {
    int initialised = 0, finalized = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalized);
    if (finalized) fail(Status::Unsupported, "MPI was finalised already in this process");
    if (initialised) {
        int level = MPI_THREAD_SINGLE;
        MPI_Query_thread(&level);
        if (level < MPI_THREAD_SERIALIZED)
            fail(Status::Unsupported, "MPI was initialised by the host program with thread "
                 "level ", level, "; libtrainrt needs MPI_THREAD_SERIALIZED or more "
                 "(MPI_Init_thread)");
        return;
    }
    int provided = MPI_THREAD_SINGLE;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) fail(Status::Internal, "MPI_Init_thread: ", mpi_error(rc));
    g_initialised_here = true;
    std::atexit(finish_at_exit);
    if (provided < MPI_THREAD_SERIALIZED)
        fail(Status::Unsupported, "this MPI library offers thread level ", provided,
             "; libtrainrt needs MPI_THREAD_SERIALIZED or more");
}

Communicator* join(const void* host_comm, int64_t timeout_s, char* err, size_t err_cap) noexcept {
    try {
        init_mpi();
        const MPI_Comm base = host_comm ? *static_cast<const MPI_Comm*>(host_comm) : MPI_COMM_WORLD;
        return new MpiRank(base, timeout_s > 0 ? timeout_s : 300);
    } catch (const std::exception& e) {
        std::snprintf(err, err_cap, "%s", e.what());
    } catch (...) {
        std::snprintf(err, err_cap, "unknown error");
    }
    return nullptr;
}

std::string library_version() {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len = 0;
    MPI_Get_library_version(text, &len);
    std::string v(text, static_cast<size_t>(len));
    const size_t comma = v.find(',');  // "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4"
    return comma == std::string::npos ? v : v.substr(0, comma);
}

}  // namespace
}  // namespace trt::dist

extern "C" const trt::dist::MpiModuleTable* trainrt_mpi_module_v1(void) {
    static const std::string version = trt::dist::library_version();
    static const trt::dist::MpiModuleTable table = {
        sizeof(trt::dist::MpiModuleTable), trt::dist::kMpiModuleAbi, trt::kVersionString,
        version.c_str(), &trt::dist::join};
    return &table;
}
