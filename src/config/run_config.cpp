// Names of RunConfig's enum values as written in TOML. The config parser builds its list of
// allowed values from these functions (value 0 .. n-1), so this is the single source of truth.
#include "config/run_config.h"

namespace trt {

const char* to_string(ModelArch v) {
    switch (v) {
        case ModelArch::Gpt2: return "gpt2";
        case ModelArch::Llama: return "llama";
        case ModelArch::Qwen2: return "qwen2";
        case ModelArch::Mistral: return "mistral";
        case ModelArch::Qwen3: return "qwen3";
    }
    return "?";
}

std::string model_arch_names() {
    std::vector<std::string> names;
    for (int i = 0; std::string(to_string(static_cast<ModelArch>(i))) != "?"; ++i)
        names.push_back(std::string("\"") + to_string(static_cast<ModelArch>(i)) + "\"");
    std::string out;
    for (size_t i = 0; i < names.size(); ++i)
        out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return out;
}

const char* to_string(RopeScaling v) {
    switch (v) {
        case RopeScaling::None: return "none";
        case RopeScaling::Linear: return "linear";
        case RopeScaling::Llama3: return "llama3";
    }
    return "?";
}

const char* to_string(SamplerKind v) {
    switch (v) {
        case SamplerKind::Random: return "random";
        case SamplerKind::Sequential: return "sequential";
    }
    return "?";
}

const char* to_string(Schedule v) {
    switch (v) {
        case Schedule::Constant: return "constant";
        case Schedule::Cosine: return "cosine";
        case Schedule::Linear: return "linear";
    }
    return "?";
}

const char* to_string(DeviceKind v) {
    switch (v) {
        case DeviceKind::Auto: return "auto";
        case DeviceKind::Cpu: return "cpu";
        case DeviceKind::Cuda: return "cuda";
    }
    return "?";
}

const char* to_string(Precision v) {
    switch (v) {
        case Precision::Auto: return "auto";
        case Precision::Fp32: return "fp32";
        case Precision::Tf32: return "tf32";
        case Precision::Bf16: return "bf16";
        case Precision::Fp16: return "fp16";
    }
    return "?";
}

const char* to_string(AttentionKind v) {
    switch (v) {
        case AttentionKind::Auto: return "auto";
        case AttentionKind::Cudnn: return "cudnn";
        case AttentionKind::Matmul: return "matmul";
    }
    return "?";
}

const char* to_string(Recompute v) {
    switch (v) {
        case Recompute::None: return "none";
        case Recompute::Mlp: return "mlp";
        case Recompute::Block: return "block";
    }
    return "?";
}

const char* to_string(StateDType v) {
    switch (v) {
        case StateDType::Fp32: return "fp32";
        case StateDType::Int8: return "int8";
    }
    return "?";
}

const char* to_string(CpuMatmul v) {
    switch (v) {
        case CpuMatmul::Auto: return "auto";
        case CpuMatmul::Onednn: return "onednn";
        case CpuMatmul::Openblas: return "openblas";
    }
    return "?";
}

const char* to_string(DistBackend v) {
    switch (v) {
        case DistBackend::Auto: return "auto";
        case DistBackend::None: return "none";
        case DistBackend::Mpi: return "mpi";
        case DistBackend::Nccl: return "nccl";
    }
    return "?";
}

const char* to_string(WireDType v) {
    switch (v) {
        case WireDType::Fp32: return "fp32";
        case WireDType::Bf16: return "bf16";
    }
    return "?";
}

const char* to_string(EvalMode v) {
    switch (v) {
        case EvalMode::Sampled: return "sampled";
        case EvalMode::Whole: return "whole";
    }
    return "?";
}

const char* to_string(Placement v) {
    switch (v) {
        case Placement::Auto: return "auto";
        case Placement::Device: return "device";
        case Placement::Host: return "host";
    }
    return "?";
}

}  // namespace trt
