// llama.cpp's logits for given token ids, and its token ids for a text, from a GGUF file: the
// other half of compare.py. Written against llama.h's public API; built by run.sh beside a
// llama.cpp checkout, never by this project's CMake.
//   usage: logits MODEL.gguf OUT.f32 [--lora ADAPTER.gguf] ID...
//          (OUT: n_ids x n_vocab float32, row-major; --lora: with a LoRA adapter file applied
//          at scale 1, as llama-cli --lora does)
//          logits --tokenize MODEL.gguf TEXT_FILE   (the ids on stdout, no BOS/EOS added)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "llama.h"

// The ids llama.cpp's vocabulary (from the file's tokenizer.ggml.*) gives a text.
int tokenize(const char* model_path, const char* text_path) {
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model* model = llama_model_load_from_file(model_path, mp);
    if (model == nullptr) return 3;
    FILE* f = std::fopen(text_path, "rb");
    if (f == nullptr) return 3;
    std::vector<char> text;
    for (int c; (c = std::fgetc(f)) != EOF;) text.push_back(static_cast<char>(c));
    std::fclose(f);
    std::vector<llama_token> ids(text.size() + 16);
    const int32_t n =
        llama_tokenize(llama_model_get_vocab(model), text.data(), static_cast<int32_t>(text.size()),
                       ids.data(), static_cast<int32_t>(ids.size()), false, true);
    if (n < 0) return 3;
    for (int32_t i = 0; i < n; i++) std::printf("%d\n", ids[i]);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 4 && std::string(argv[1]) == "--tokenize") return tokenize(argv[2], argv[3]);
    if (argc < 4) {
        std::fprintf(stderr, "usage: logits MODEL.gguf OUT.f32 ID...\n");
        return 2;
    }
    const char* lora = nullptr;
    int first = 3;
    if (argc > 5 && std::string(argv[3]) == "--lora") {
        lora = argv[4];
        first = 5;
    }
    const int n = argc - first;
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (model == nullptr) {
        std::fprintf(stderr, "logits: llama.cpp could not load %s\n", argv[1]);
        return 3;
    }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(n);
    cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(n);
    cp.n_threads = cp.n_threads_batch = 2;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (ctx == nullptr) {
        std::fprintf(stderr, "logits: no context\n");
        return 3;
    }
    if (lora != nullptr) {
        llama_adapter_lora* adapter = llama_adapter_lora_init(model, lora);
        if (adapter == nullptr) {
            std::fprintf(stderr, "logits: llama.cpp could not load the adapter %s\n", lora);
            return 3;
        }
        float scale = 1.0f;
        if (llama_set_adapters_lora(ctx, &adapter, 1, &scale) != 0) {
            std::fprintf(stderr, "logits: llama.cpp did not apply the adapter %s\n", lora);
            return 3;
        }
    }
    llama_batch batch = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        batch.token[i] = std::atoi(argv[first + i]);
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;  // every position's logits
    }
    batch.n_tokens = n;
    if (llama_decode(ctx, batch) != 0) {
        std::fprintf(stderr, "logits: llama_decode failed\n");
        return 3;
    }
    FILE* out = std::fopen(argv[2], "wb");
    if (out == nullptr) return 3;
    for (int i = 0; i < n; i++)
        std::fwrite(llama_get_logits_ith(ctx, i), sizeof(float), static_cast<size_t>(n_vocab), out);
    std::fclose(out);
    std::printf("n_vocab %d positions %d\n", n_vocab, n);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
