// Where libtrainrt looks for a module it loads at run time (libtrainrt-cuda, libtrainrt-mpi).
#pragma once
#include <string>
#include <vector>

namespace trt {

// The paths to dlopen, in order: the environment variable's value alone when it is set (an
// explicit choice), else `file` next to libtrainrt, then `file` as ld.so finds it
// (LD_LIBRARY_PATH, runpath, ld.so.cache).
std::vector<std::string> module_candidates(const char* env_var, const char* file);

}  // namespace trt
