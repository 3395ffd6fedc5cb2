// The cuDNN run-time loader (src/backend/cuda/cudnn_loader.h) on the CPU: no GPU is needed to
// dlopen libcudnn and ask its version. Registered from tests/gpu/CMakeLists.txt (it needs the
// CUDA toolkit's headers) with label cpu.
//   - the installed libcudnn.so.9 loads, every entry point resolves, its version passes the
//     floor (skipped, with the reason, where no libcudnn.so.9 exists at all);
//   - TRAINRT_CUDNN_LIBRARY pointing nowhere: no library, the reason names the path and says
//     nothing else was tried;
//   - a real shared object that is not cuDNN (libm): the reason names the missing symbol;
//   - the version floor as a pure function, at its boundaries.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "backend/cuda/cudnn_loader.h"

namespace {

using trt::cuda::CudnnApi;
using trt::cuda::CudnnLoadError;

// Sets an environment variable for one test and restores it afterwards.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) {
            had_ = true;
            old_ = old;
        }
        if (value)
            setenv(name, value, 1);
        else
            unsetenv(name);
    }
    ~ScopedEnv() {
        if (had_)
            setenv(name_.c_str(), old_.c_str(), 1);
        else
            unsetenv(name_.c_str());
    }

private:
    std::string name_, old_;
    bool had_ = false;
};

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

void expect_complete(const CudnnApi& api) {
    EXPECT_NE(api.GetVersion, nullptr);
    EXPECT_NE(api.GetCudartVersion, nullptr);
    EXPECT_NE(api.GetErrorString, nullptr);
    EXPECT_NE(api.GetLastErrorString, nullptr);
    EXPECT_NE(api.Create, nullptr);
    EXPECT_NE(api.Destroy, nullptr);
    EXPECT_NE(api.SetStream, nullptr);
    EXPECT_NE(api.BackendCreateDescriptor, nullptr);
    EXPECT_NE(api.BackendDestroyDescriptor, nullptr);
    EXPECT_NE(api.BackendSetAttribute, nullptr);
    EXPECT_NE(api.BackendGetAttribute, nullptr);
    EXPECT_NE(api.BackendFinalize, nullptr);
    EXPECT_NE(api.BackendExecute, nullptr);
}

TEST(CudnnLoader, VersionFloorIsAPureBoundaryCheck) {
    using trt::cuda::cudnn_version_ok;
    using trt::cuda::kMinCudnnVersion;
    EXPECT_EQ(kMinCudnnVersion, 91002) << "docs/CUDNN_ATTENTION.md states 9.10.2";
    EXPECT_TRUE(cudnn_version_ok(kMinCudnnVersion));
    EXPECT_FALSE(cudnn_version_ok(kMinCudnnVersion - 1));  // 9.10.1: known SDPA bugs
    EXPECT_FALSE(cudnn_version_ok(91000));
    EXPECT_FALSE(cudnn_version_ok(90100));
    EXPECT_FALSE(cudnn_version_ok(8907));  // cuDNN 8.9.7
    EXPECT_FALSE(cudnn_version_ok(0));
    EXPECT_FALSE(cudnn_version_ok(-1));
    EXPECT_TRUE(cudnn_version_ok(91400));  // the deployment target
    EXPECT_TRUE(cudnn_version_ok(91900));  // this machine's headers
    EXPECT_TRUE(cudnn_version_ok(99999));
    EXPECT_FALSE(cudnn_version_ok(100000));  // a 10.x ABI is unknown
    EXPECT_EQ(trt::cuda::cudnn_version_string(91002), "9.10.2");
    EXPECT_EQ(trt::cuda::cudnn_version_string(91400), "9.14.0");
    EXPECT_EQ(trt::cuda::cudnn_version_string(90100), "9.1.0");
}

TEST(CudnnLoader, InstalledLibraryLoadsWithAVersionAboveTheFloor) {
    const ScopedEnv no_override("TRAINRT_CUDNN_LIBRARY", nullptr);
    std::string why;
    CudnnLoadError err = CudnnLoadError::None;
    auto api = trt::cuda::load_cudnn(&why, &err);
    if (!api && err == CudnnLoadError::NotFound)
        GTEST_SKIP() << "no libcudnn.so.9 on this machine: " << why;
    ASSERT_NE(api, nullptr) << why;
    EXPECT_EQ(err, CudnnLoadError::None);
    expect_complete(*api);
    EXPECT_EQ(api->path, "libcudnn.so.9");
    EXPECT_GE(api->version, trt::cuda::kMinCudnnVersion);
    EXPECT_EQ(api->version, static_cast<long>(api->GetVersion()));
    EXPECT_GT(api->cudart_version, 0);
    EXPECT_EQ(std::string(api->GetErrorString(CUDNN_STATUS_SUCCESS)), "CUDNN_STATUS_SUCCESS");
    const std::string d = api->describe();
    EXPECT_TRUE(contains(d, trt::cuda::cudnn_version_string(api->version))) << d;
    std::printf("[ loaded   ] %s\n", d.c_str());

    // The same file named explicitly loads too (what TRAINRT_CUDNN_LIBRARY does).
    Dl_info info{};
    ASSERT_NE(dladdr(reinterpret_cast<const void*>(api->GetVersion), &info), 0);
    ASSERT_NE(info.dli_fname, nullptr);
    const ScopedEnv exact("TRAINRT_CUDNN_LIBRARY", info.dli_fname);
    auto again = trt::cuda::load_cudnn(&why);
    ASSERT_NE(again, nullptr) << why;
    EXPECT_EQ(again->path, info.dli_fname);
    EXPECT_EQ(again->file, api->file);
    EXPECT_EQ(api->file, info.dli_fname);
    EXPECT_EQ(again->version, api->version);
}

TEST(CudnnLoader, OverrideThatDoesNotExistIsReportedAndNotPapered) {
    const ScopedEnv env("TRAINRT_CUDNN_LIBRARY", "/nonexistent/libcudnn.so.9");
    std::string why;
    CudnnLoadError err = CudnnLoadError::None;
    auto api = trt::cuda::load_cudnn(&why, &err);
    EXPECT_EQ(api, nullptr) << "loaded " << (api ? api->describe() : "");
    EXPECT_EQ(err, CudnnLoadError::NotFound);
    EXPECT_TRUE(contains(why, "/nonexistent/libcudnn.so.9")) << why;
    EXPECT_TRUE(contains(why, "TRAINRT_CUDNN_LIBRARY")) << why;
    EXPECT_TRUE(contains(why, "no other location is tried")) << why;
}

TEST(CudnnLoader, ASharedObjectThatIsNotCudnnNamesTheMissingSymbol) {
    // libm: certainly loadable, certainly not cuDNN. Found through a function it defines.
    Dl_info info{};
    double (*cos_fn)(double) = &std::cos;
    ASSERT_NE(dladdr(reinterpret_cast<const void*>(cos_fn), &info), 0);
    ASSERT_NE(info.dli_fname, nullptr);
    const std::string libm = info.dli_fname;
    std::string why;
    CudnnLoadError err = CudnnLoadError::None;
    auto api = trt::cuda::load_cudnn_from(libm, &why, &err);
    EXPECT_EQ(api, nullptr);
    EXPECT_EQ(err, CudnnLoadError::MissingSymbol);
    EXPECT_TRUE(contains(why, libm)) << why;
    EXPECT_TRUE(contains(why, "cudnnGetVersion")) << why;  // the first entry point resolved

    // Through the override the same reason comes back, naming the variable.
    const ScopedEnv env("TRAINRT_CUDNN_LIBRARY", libm.c_str());
    auto api2 = trt::cuda::load_cudnn(&why, &err);
    EXPECT_EQ(api2, nullptr);
    EXPECT_EQ(err, CudnnLoadError::MissingSymbol);
    EXPECT_TRUE(contains(why, "TRAINRT_CUDNN_LIBRARY=" + libm)) << why;
    EXPECT_TRUE(contains(why, "cudnnGetVersion")) << why;
}

TEST(CudnnLoader, CachedEntryPointAnswersTheSameEveryTime) {
    // Whatever this process's environment gives: the answer never changes afterwards.
    std::string why1, why2;
    const CudnnApi* a = trt::cuda::cudnn_api(&why1);
    const CudnnApi* b = trt::cuda::cudnn_api(&why2);
    EXPECT_EQ(a, b);
    EXPECT_EQ(why1, why2);
    if (a) {
        expect_complete(*a);
        EXPECT_TRUE(trt::cuda::cudnn_version_ok(a->version));
    } else {
        EXPECT_FALSE(why1.empty());
    }
}

}  // namespace
