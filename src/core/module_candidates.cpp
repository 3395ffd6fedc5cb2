#include "core/module_candidates.h"

#include <dlfcn.h>

#include <cstdlib>

namespace trt {
namespace {

// The folder of the shared object (or executable) that holds this code.
std::string own_folder() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&own_folder), &info) == 0 || !info.dli_fname)
        return {};
    std::string path = info.dli_fname;
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

}  // namespace

std::vector<std::string> module_candidates(const char* env_var, const char* file) {
    if (const char* env = std::getenv(env_var); env && *env) return {env};
    std::vector<std::string> out;
    const std::string here = own_folder();
    if (!here.empty()) out.push_back(here + "/" + file);
    out.push_back(file);
    return out;
}

}  // namespace trt
