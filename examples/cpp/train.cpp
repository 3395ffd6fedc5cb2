// Train a model from a TOML config through the C++ wrapper (include/trainrt/trainrt.hpp) and
// print the loss of every step.
//   example_train_cpp CONFIG [STEPS]
// e.g. example_train_cpp examples/configs/shakespeare.toml 20
// Build: c++ -std=c++17 train.cpp $(pkg-config --cflags --libs trainrt)
#include <trainrt/trainrt.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s CONFIG.toml [STEPS]\n", argv[0]);
        return 2;
    }
    const std::string path = argv[1];
    const long steps = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 20;
    try {
        std::printf("libtrainrt %s\n", trainrt::version().c_str());
        trainrt::Config config = trainrt::Config::from_file(path);
        // Any key can be changed from code. This example writes nothing into the config's
        // out_dir, and periodic checkpoints need one: clear both.
        config.set("train.out_dir", "\"\"");
        config.set("train.checkpoint_every", "0");
        config.set_log(
            [](trainrt::LogLevel level, std::string_view line) {
                std::fprintf(stderr, "[%s] %.*s\n",
                             level >= trainrt::LogLevel::Warn ? "warn" : "info",
                             static_cast<int>(line.size()), line.data());
            },
            trainrt::LogLevel::Warn);
        const trainrt::ModelInfo info = trainrt::model_info(config);
        std::printf("model: %lld parameters\n", static_cast<long long>(info.parameters));

        trainrt::Session session(config);  // RAII: destroyed at scope end
        for (long i = 0; i < steps; ++i) {
            const trainrt::StepResult r = session.step();
            std::printf("step %lld: loss %.6f lr %.3e grad norm %.4f (%.1f ms)\n",
                        static_cast<long long>(r.step), r.loss, r.lr, r.grad_norm, r.ms);
        }
        const trainrt::Metrics m = session.metrics();
        std::printf("%lld steps, %lld tokens, %.0f tokens/s\n", static_cast<long long>(m.step),
                    static_cast<long long>(m.tokens_total), m.tokens_per_s);
    } catch (const trainrt::Error& e) {
        std::fprintf(stderr, "trainrt error (%s): %s\n", e.status_string(), e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
