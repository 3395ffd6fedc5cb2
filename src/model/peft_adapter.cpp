#include "model/peft_adapter.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

#include "core/error.h"
#include "io/dir_lock.h"
#include "io/fs_util.h"
#include "io/json_min.h"
#include "io/safetensors.h"
#include "model/lora.h"

namespace trt {
namespace {

constexpr size_t kMaxConfigBytes = 1 << 20;

// The fewest digits that read back as x ("2.0000000001", "4"; a float: "0.1", not
// 0.100000001).
template <typename T>
std::string digits(T x) {
    char buf[64];
    for (int precision = 1; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(x));
        if (static_cast<T>(std::strtod(buf, nullptr)) == x) break;
    }
    return buf;
}

bool is_adapter(const ParamTensor& t) {
    return t.role == ParamRole::LoraA || t.role == ParamRole::LoraB;
}


// The module path of an adapter tensor ("h.0.attn.c_attn" of "h.0.attn.c_attn.lora_A.weight").
std::string module_of(const std::string& name) {
    return name.substr(0, name.rfind(".lora_"));
}

}  // namespace

std::string peft_tensor_name(const ModelSpec& spec, const std::string& name) {
    return std::string("base_model.model.") + spec.family().hf_model_prefix + name;
}

void load_peft_adapter(const ParamTable& table, const std::string& dir, float* host) {
    const ModelSpec& s = table.spec();
    TRT_CHECK(s.lora.on(), "load_peft_adapter: the model has no LoRA adapters");
    const std::string where = cat("lora.init_from = '", dir, "'");
    const std::string cfg_path = path_join(dir, kPeftConfigFile);
    const json::Value cfg = json::parse_lenient_numbers(read_small_file(cfg_path, kMaxConfigBytes),
                                                        cfg_path);
    if (!cfg.is_object())
        fail(Status::Format, cfg_path, ": is a JSON ", cfg.kind_name(), ", expected an object");
    const json::Value* type = cfg.find("peft_type");
    if (type && !(type->is_string() && type->s == "LORA"))
        fail(Status::Config, where, ": ", kPeftConfigFile, " has peft_type ",
             type->is_string() ? type->s : type->kind_name(), "; only LORA adapters load");
    auto number = [&](const char* key, double fallback) {
        const json::Value* v = cfg.find(key);
        if (!v) return fallback;
        if (v->kind == json::Value::Kind::Int) return static_cast<double>(v->i);
        if (v->kind == json::Value::Kind::Double) return v->d;
        fail(Status::Format, cfg_path, ": \"", key, "\" must be a number, got a ", v->kind_name());
    };
    auto flag = [&](const char* key) {
        const json::Value* v = cfg.find(key);
        return v && v->kind == json::Value::Kind::Bool && v->b;
    };
    // PEFT's LoraConfig defaults: r 8, lora_alpha 8. Shown with every digit: a message must
    // not say "r = 2 but lora.rank = 2" of an r of 2.0000001.
    const double r = number("r", 8), alpha = number("lora_alpha", 8);
    if (!(r >= 1 && r <= 65536 && r == std::floor(r)))
        fail(Status::Format, cfg_path, ": \"r\" = ", digits(r),
             " is not a rank (PEFT's LoraConfig.r is a whole number of at least 1)");
    if (r != s.lora.rank)
        fail(Status::Config, where, ": the adapter has r = ", digits(r), " but lora.rank = ",
             s.lora.rank, "; set lora.rank = ", digits(r));
    if (static_cast<float>(alpha) != s.lora.alpha)
        fail(Status::Config, where, ": the adapter has lora_alpha = ", digits(alpha),
             " but lora.alpha = ", digits(s.lora.alpha), "; set lora.alpha = ", digits(alpha));
    if (flag("use_rslora") || flag("use_dora"))
        fail(Status::Config, where, ": the adapter uses ", flag("use_dora") ? "DoRA" : "rsLoRA",
             ", which libtrainrt does not train (plain LoRA, scale lora_alpha / r, only)");
    if (const json::Value* b = cfg.find("bias"); b && !(b->is_string() && b->s == "none"))
        fail(Status::Config, where, ": the adapter trains biases (\"bias\": ",
             b->is_string() ? b->s : b->kind_name(), "); libtrainrt's adapters have none");

    const SafetensorsFile file = SafetensorsFile::open(path_join(dir, kPeftWeightsFile));
    std::set<std::string> expected;
    for (const ParamTensor& t : table.tensors()) {
        if (!is_adapter(t)) continue;
        const std::string name = peft_tensor_name(s, t.name);
        expected.insert(name);
        const TensorInfo* info = file.find(name);
        if (!info)
            fail(Status::Config, where, ": the adapter has no '", name, "': it does not adapt ",
                 module_of(t.name), ", which lora.target_modules selects; set "
                 "lora.target_modules to the adapter's target_modules");
        if (info->shape != t.shape)
            fail(Status::Format, where, ": '", name, "' has shape ", shape_text(info->shape),
                 ", expected ", shape_text(t.shape), " for this model");
    }
    for (const TensorInfo& t : file.tensors())
        if (!expected.count(t.name))
            fail(Status::Config, where, ": the adapter holds '", t.name, "', which ",
                 t.name.find(".lora_") != std::string::npos
                     ? "lora.target_modules does not select; set lora.target_modules to the "
                       "adapter's target_modules"
                     : "is not a LoRA tensor of this model (modules_to_save are not supported)");
    for (const ParamTensor& t : table.tensors())
        if (is_adapter(t)) file.read_f32(*file.find(peft_tensor_name(s, t.name)), host + t.offset);
}

void write_peft_adapter(const ParamTable& table, const float* host, const std::string& dir,
                        const std::string& base_model, DType dtype) {
    TRT_CHECK(dtype == DType::F32 || dtype == DType::BF16, "write_peft_adapter: F32 or BF16");
    const ModelSpec& s = table.spec();
    TRT_CHECK(s.lora.on(), "write_peft_adapter: the model has no LoRA adapters");
    std::vector<TensorToWrite> tensors;
    for (const ParamTensor& t : table.tensors())
        if (is_adapter(t))
            tensors.push_back({peft_tensor_name(s, t.name), dtype, t.shape, host + t.offset});
    // target_modules as PEFT matches them (a module path, or its end after a '.'): a kind of
    // layer adapted in every block by its last two components ("attn.c_proj", never the
    // ambiguous "c_proj"), one adapted in some blocks only by each full path.
    std::set<std::string> modules;
    const int per = static_cast<int>(Slot::kLayerSlots);
    for (Slot slot : linear_slots(s)) {
        int adapted = 0;
        for (int l = 0; l < s.L; ++l) adapted += s.lora.targets[static_cast<size_t>(l * per) +
                                                                static_cast<size_t>(slot)];
        for (int l = 0; l < s.L; ++l) {
            const ParamTensor* a = table.lora_a(slot, l);
            if (!a) continue;
            const std::string path = module_of(a->name);
            const size_t cut = path.rfind('.', path.rfind('.') - 1);
            modules.insert(adapted == s.L ? path.substr(cut + 1)
                                          : s.family().hf_model_prefix + path);
        }
    }
    std::string targets;
    for (const std::string& m : modules) targets += (targets.empty() ? "" : ", ") + json::quote(m);
    char alpha[64];
    std::snprintf(alpha, sizeof alpha, "%.17g", static_cast<double>(s.lora.alpha));
    char dropout[64];
    std::snprintf(dropout, sizeof dropout, "%.9g", static_cast<double>(s.lora.dropout));
    // The keys PEFT's LoraConfig reads back; fan_in_fan_out tells PEFT that GPT-2's base
    // layers are Conv1D ([in, out]) — the adapter tensors are [r, in] and [out, r] either way.
    const std::string config = cat(
        "{\n",
        "  \"peft_type\": \"LORA\",\n",
        "  \"task_type\": \"CAUSAL_LM\",\n",
        "  \"base_model_name_or_path\": ", json::quote(base_model), ",\n",
        "  \"r\": ", s.lora.rank, ",\n",
        "  \"lora_alpha\": ", alpha, ",\n",
        "  \"lora_dropout\": ", dropout, ",\n",
        "  \"target_modules\": [", targets, "],\n",
        "  \"fan_in_fan_out\": ", s.linear_layout() == WeightLayout::InOut ? "true" : "false", ",\n",
        "  \"bias\": \"none\",\n",
        "  \"use_rslora\": false,\n",
        "  \"use_dora\": false,\n",
        "  \"inference_mode\": true\n",
        "}\n");
    // The pair is never mixed: an older adapter_config.json goes first (made durable), then
    // the weights and last the config, each atomically. A crash leaves the old pair, a folder
    // without a config (which no loader takes for an adapter), or the new pair.
    // The folder's lock while we write (and an earlier, killed export's temporary files gone).
    const DirLock lock(dir, "adapter export folder",
                       "Two exports into one folder would mix their files", LockFile::Remove);
    remove_orphan_temps(dir, [](const std::string& name) {
        return name == kPeftWeightsFile || name == kPeftConfigFile;
    });
    const std::string config_path = path_join(dir, kPeftConfigFile);
    if (::unlink(config_path.c_str()) == 0) {
        fsync_dir(dir);
    } else if (errno != ENOENT) {
        fail(Status::Io, config_path, ": cannot replace it: ", std::strerror(errno));
    }
    write_safetensors(path_join(dir, kPeftWeightsFile), tensors, {{"format", "pt"}});
    write_file_atomic(config_path, config);
}

}  // namespace trt
