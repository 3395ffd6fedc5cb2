// C API: trainrt_config_* — thin wrappers over trt::Config.
#include <new>

#include "capi/barrier.h"
#include "capi/handles.h"

using namespace trt;
using capi::guarded;
using capi::require;

namespace {

trainrt_status make_config(trainrt_config** out, Config config) {
    auto* handle = new trainrt_config{std::move(config), LogSink{}, nullptr, {}};
    *out = handle;
    return TRAINRT_OK;
}

}  // namespace

extern "C" {

TRAINRT_API trainrt_status trainrt_config_create(trainrt_config** out) {
    return guarded("trainrt_config_create", [&] {
        require(out, "trainrt_config_create", "out");
        return make_config(out, Config());
    });
}

TRAINRT_API trainrt_status trainrt_config_from_file(trainrt_config** out, const char* path) {
    return guarded("trainrt_config_from_file", [&] {
        require(out, "trainrt_config_from_file", "out");
        require(path, "trainrt_config_from_file", "path");
        return make_config(out, Config::from_file(path));
    });
}

TRAINRT_API trainrt_status trainrt_config_from_string(trainrt_config** out, const char* toml,
                                                      const char* base_dir) {
    return guarded("trainrt_config_from_string", [&] {
        require(out, "trainrt_config_from_string", "out");
        require(toml, "trainrt_config_from_string", "toml");
        return make_config(out, Config::from_string(toml, base_dir ? base_dir : ""));
    });
}

TRAINRT_API void trainrt_config_destroy(trainrt_config* config) { delete config; }

TRAINRT_API trainrt_status trainrt_config_set(trainrt_config* config, const char* key,
                                              const char* toml_value) {
    return guarded("trainrt_config_set", [&] {
        require(config, "trainrt_config_set", "config");
        require(key, "trainrt_config_set", "key");
        require(toml_value, "trainrt_config_set", "toml_value");
        capi::BusyGuard busy(config->busy, "trainrt_config_set");
        config->config.set(key, toml_value);
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_config_get_int(int64_t* out, const trainrt_config* config,
                                                  const char* key) {
    return guarded("trainrt_config_get_int", [&] {
        require(out, "trainrt_config_get_int", "out");
        require(config, "trainrt_config_get_int", "config");
        require(key, "trainrt_config_get_int", "key");
        capi::BusyGuard busy(config->busy, "trainrt_config_get_int");
        *out = config->config.get_int(key);
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_config_get_double(double* out, const trainrt_config* config,
                                                     const char* key) {
    return guarded("trainrt_config_get_double", [&] {
        require(out, "trainrt_config_get_double", "out");
        require(config, "trainrt_config_get_double", "config");
        require(key, "trainrt_config_get_double", "key");
        capi::BusyGuard busy(config->busy, "trainrt_config_get_double");
        *out = config->config.get_double(key);
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_config_get_bool(int32_t* out, const trainrt_config* config,
                                                   const char* key) {
    return guarded("trainrt_config_get_bool", [&] {
        require(out, "trainrt_config_get_bool", "out");
        require(config, "trainrt_config_get_bool", "config");
        require(key, "trainrt_config_get_bool", "key");
        capi::BusyGuard busy(config->busy, "trainrt_config_get_bool");
        *out = config->config.get_bool(key) ? 1 : 0;
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_config_get_string(char* buf, size_t cap, size_t* needed,
                                                     const trainrt_config* config,
                                                     const char* key) {
    return guarded("trainrt_config_get_string", [&] {
        require(config, "trainrt_config_get_string", "config");
        require(key, "trainrt_config_get_string", "key");
        capi::BusyGuard busy(config->busy, "trainrt_config_get_string");
        const std::string value = config->config.get_string(key);
        capi::copy_string(buf, cap, needed, value, "trainrt_config_get_string");
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_config_dump(char* buf, size_t cap, size_t* needed,
                                               const trainrt_config* config) {
    return guarded("trainrt_config_dump", [&] {
        require(config, "trainrt_config_dump", "config");
        capi::BusyGuard busy(config->busy, "trainrt_config_dump");
        capi::copy_string(buf, cap, needed, config->config.dump(), "trainrt_config_dump");
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_config_set_log(trainrt_config* config, trainrt_log_fn fn,
                                                  void* payload, int32_t min_level) {
    return guarded("trainrt_config_set_log", [&] {
        require(config, "trainrt_config_set_log", "config");
        capi::require_log_level(min_level, "trainrt_config_set_log");
        capi::BusyGuard busy(config->busy, "trainrt_config_set_log");
        config->log_sink = LogSink{fn, payload, min_level};
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_config_set_mpi_comm(trainrt_config* config, const void* comm) {
    return guarded("trainrt_config_set_mpi_comm", [&] {
        require(config, "trainrt_config_set_mpi_comm", "config");
        capi::BusyGuard busy(config->busy, "trainrt_config_set_mpi_comm");
        config->mpi_comm = comm;
        return TRAINRT_OK;
    });
}

}  // extern "C"
