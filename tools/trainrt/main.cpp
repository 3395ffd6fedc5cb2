// trainrt: the command-line client of libtrainrt. Uses the public C API only.
//   trainrt prepare --text FILE... --out DIR [--val-fraction F] [--tokenizer PATH [--jsonl FIELD]]
//   trainrt train CONFIG [--set KEY=VALUE]... [--steps N] [--fresh | --checkpoint PATH]
//   trainrt eval CONFIG [--set KEY=VALUE]... [--checkpoint PATH] [--whole]
//   trainrt eval (CONFIG | CHECKPOINT | HF_DIR) --text FILE [--tokenizer PATH]
//   trainrt sample CHECKPOINT [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K] [--seed S]
//                             [--tokenizer PATH]
//   trainrt export CHECKPOINT DIR [--dtype f32|bf16] [--merge]
//   trainrt config CONFIG [--set KEY=VALUE]...
//   trainrt info [CONFIG [--set KEY=VALUE]...]
//   trainrt bench CONFIG [--steps N] [--warmup W] [--set KEY=VALUE]... [--json FILE] [--profile]
//   trainrt chat-template --tokenizer FOLDER [--add-generation-prompt] CONVERSATION.json
//   trainrt report OUT_DIR [OUT_DIR...] [--html FILE] [--label NAME]...
#include <trainrt/trainrt.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_common.h"
#include "cmd_report.h"

namespace {

using namespace trainrt_cli;

const char* kUsage =
    "usage: trainrt <command> [options]      (trainrt <command> --help for one command)\n"
    "\n"
    "commands:\n"
    "  prepare --text FILE... --out DIR [--val-fraction F] [--tokenizer PATH [--jsonl FIELD]]\n"
    "        byte-level tokenize a text file into DIR/train.bin and DIR/val.bin\n"
    "  prepare --chat FILE... --tokenizer MODEL_DIR --out DIR [--loss-mask M]\n"
    "        conversations (JSON lines) through the model's chat template, with loss masks\n"
    "  train CONFIG [--set KEY=VALUE]... [--steps N] [--fresh | --checkpoint PATH]\n"
    "        train as CONFIG says, resuming from train.out_dir/latest if there is one;\n"
    "        writes a checkpoint when the run ends; Ctrl-C stops, writing one too\n"
    "  eval CONFIG [--set KEY=VALUE]... [--checkpoint PATH] [--whole]\n"
    "  eval (CONFIG | CHECKPOINT | HF_DIR) --text FILE [--tokenizer PATH]\n"
    "        mean loss and perplexity on data.val (sampled windows, or --whole: every token\n"
    "        once) or on a text file, of the latest checkpoint in train.out_dir (or PATH,\n"
    "        model.init_from, the initial model), a checkpoint, or a Hugging Face folder\n"
    "  sample CHECKPOINT [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K] [--seed S]\n"
    "                    [--tokenizer PATH]\n"
    "        generate text from a byte-level model\n"
    "  sample CHECKPOINT --chat MESSAGE [--system TEXT]\n"
    "        a chat model's reply, through its chat template, up to its end-of-turn token\n"
    "  chat CHECKPOINT [--system TEXT] [--tokens N] [--temperature T]\n"
    "        a conversation: each stdin line is a user turn, each reply printed\n"
    "  export CHECKPOINT DIR [--dtype f32|bf16] [--merge]\n"
    "        write DIR/model.safetensors + DIR/config.json for Hugging Face (a LoRA run: its\n"
    "        PEFT adapter, or with --merge the merged model)\n"
    "  config CONFIG [--set KEY=VALUE]...\n"
    "        print the resolved config (every key, defaults included)\n"
    "  info [CONFIG [--set KEY=VALUE]...]\n"
    "        version and build features; with CONFIG: model size, FLOPs per token,\n"
    "        memory estimate and the resolved config\n"
    "  plan CONFIG [--set KEY=VALUE]... [--max-batch] [--memory BYTES]\n"
    "        memory by component vs a real session; the largest micro-batch that fits\n"
    "  bench CONFIG [--steps N] [--warmup W] [--set KEY=VALUE]... [--json FILE] [--profile]\n"
    "        throughput: W untimed warm-up steps, then N timed ones; tokens/s, step time\n"
    "        p50/p95, MFU and every timed step's loss (a table, or one JSON object);\n"
    "        --profile: the time of every op, by op and layer, and how it scales\n"
    "  tokenizer train --vocab-size N --text FILE... --out PATH [--min-frequency F] [--force]\n"
    "        train a byte-level BPE tokenizer on text; writes a Hugging Face tokenizer.json\n"
    "  chat-template --tokenizer FOLDER [--add-generation-prompt] [--var NAME=JSON]...\n"
    "                CONVERSATION.json\n"
    "        render a conversation with the folder's chat template, as transformers does\n"
    "  report OUT_DIR [OUT_DIR...] [--html FILE] [--label NAME]...\n"
    "        summarise runs (train.out_dir) and write one self-contained HTML page of their\n"
    "        curves: loss vs step and tokens, lr, grad norm, tokens/s, MFU; config\n"
    "\n"
    "CHECKPOINT is a checkpoint directory or a folder with a `latest` file (train.out_dir).\n"
    "--set takes a TOML value: --set optim.lr=1e-3 --set 'data.train=\"shards/*.bin\"'\n"
    "(a bare word that is not a number or boolean is taken as a string).\n";

struct CommandHelp {
    const char* name;
    const char* text;
};

const CommandHelp kCommandHelp[] = {
    {"prepare",
     "usage: trainrt prepare --text FILE... --out DIR [--val-fraction F]\n"
     "                       [--tokenizer PATH [--jsonl FIELD] [--threads N] [--shard-tokens N]]\n"
     "\n"
     "Tokenizes text into llm.c shards DIR/train.bin and DIR/val.bin; val.bin gets the last F\n"
     "of the input (F defaults to 0.1; 1 = an evaluation-only folder: an empty train.bin,\n"
     "for `trainrt eval --whole`; training on it is refused). DIR is created if missing and locked "
     "while prepare\n"
     "runs; the shards are committed as one set with DIR/prepare.json, which training checks.\n"
     "Without --tokenizer: one text file, byte-level (token = byte, vocab_size 256).\n"
     "With --tokenizer PATH (a Hugging Face tokenizer.json of the byte-level BPE family:\n"
     "GPT-2, Llama 3 style; a SentencePiece tokenizer.model: Llama 2 style; or a model\n"
     "folder holding one): the files in order, each a document, every\n"
     "document opened by the tokenizer's end-of-text token; --jsonl FIELD reads JSON lines\n"
     "instead, the string FIELD of each line a document. uint16 shards when the vocabulary\n"
     "fits, else uint32. All cores unless --threads N. Text files are read as they are\n"
     "encoded, so inputs of any size fit in memory. --shard-tokens N writes train_000000.bin,\n"
     "train_000001.bin, ... (and val_*.bin) of at most N tokens each instead of one file per\n"
     "split (which holds at most 2^31 - 1). Prints the vocab_size to train with.\n"
     "\n"
     "       trainrt prepare --chat FILE... --tokenizer MODEL_FOLDER --out DIR [--val-fraction F]\n"
     "                       [--loss-mask assistant|completion|all] [--template NAME]\n"
     "                       [--template-vars JSON]\n"
     "\n"
     "Instruction tuning: each line of each FILE is a conversation, {\"messages\": [...]} (with\n"
     "an optional \"tools\" list) or {\"prompt\": ..., \"completion\": ...}, rendered with the\n"
     "folder's chat template as transformers renders it and written with each token's loss\n"
     "mask (DIR/mask_train.bin, DIR/mask_val.bin). The targets: the assistant turns (default\n"
     "for messages), the completion (default for prompt-completion) or all tokens. Training\n"
     "on DIR/train.bin then counts only the targets, packing examples into rows without\n"
     "attention across them (data.packing; docs/FORMATS.md, \"Loss masks\").\n"},
    {"train",
     "usage: trainrt train CONFIG [--set KEY=VALUE]... [--steps N] [--fresh | --checkpoint PATH]\n"
     "\n"
     "Trains the model CONFIG describes. If train.out_dir holds a checkpoint (its `latest`\n"
     "file), the run continues from it exactly where it stopped, unless --fresh (start from\n"
     "the initial model; checkpoints of the same step are then replaced).\n"
     "  --steps N            run N more steps (default: up to train.steps)\n"
     "  --fresh              do not resume: a new run (metrics.jsonl keeps the earlier\n"
     "                       ones; `trainrt report` shows each)\n"
     "  --checkpoint PATH    resume from this checkpoint (a directory, or a folder with\n"
     "                       `latest`) instead of train.out_dir's latest\n"
     "  --set K=V   override a config key (TOML value; bare words are strings)\n"
     "Checkpoints go to train.out_dir every train.checkpoint_every steps and when the run\n"
     "ends; Ctrl-C (SIGINT) or SIGTERM stops between micro-batches (the step in progress is\n"
     "abandoned), writes a checkpoint and exits with 130 / 143; a second one exits at once,\n"
     "saving nothing after the last checkpoint. A live progress line is shown when stderr is\n"
     "a terminal.\n"},
    {"sample",
     "usage: trainrt sample CHECKPOINT [--prompt TEXT] [--tokens N] [--temperature T]\n"
     "                      [--top-k K] [--seed S] [--tokenizer PATH]\n"
     "\n"
     "Generates N tokens (default 256) continuing TEXT (default: a newline) and prints prompt\n"
     "+ continuation. With a tokenizer (--tokenizer PATH: tokenizer.json/.model or a folder;\n"
     "default: the run's data.tokenizer, recorded in the checkpoint) TEXT is encoded and the\n"
     "tokens decoded with it; without one the model must be byte-level (vocab_size 256). T "
     "defaults to 1.0 (0 = greedy), K to 0 (all\n"
     "tokens), S to 1337; the same seed gives the same text.\n"
     "\n"
     "       trainrt sample CHECKPOINT --chat MESSAGE [--system TEXT] [--tokenizer DIR]\n"
     "                      [--template NAME] [--vars JSON] [--tokens N] [--temperature T] ...\n"
     "\n"
     "A chat model's reply to MESSAGE (one turn of `trainrt chat`): the conversation is\n"
     "rendered with the model folder's chat template and the generation prompt, the reply\n"
     "ends at the folder's end-of-turn ids and only the reply is printed (T defaults to 0.7).\n"},
    {"export",
     "usage: trainrt export CHECKPOINT DIR [--dtype f32|bf16] [--merge] [--force]\n"
     "       trainrt export CHECKPOINT --gguf FILE [--gguf-type f16|bf16|q8_0|f32] [--force]\n"
     "       trainrt export CHECKPOINT --gguf-lora FILE [--gguf-type ...] [--force]\n"
     "\n"
     "Writes DIR/model.safetensors (the model's Hugging Face names, unpadded, fp32 unless\n"
     "--dtype bf16; shards + model.safetensors.index.json above 5 GB) and DIR/config.json,\n"
     "loadable with transformers' GPT2LMHeadModel / LlamaForCausalLM.from_pretrained, and as\n"
     "model.init_from; with the run's data.tokenizer, DIR/tokenizer.json or .model (+ its\n"
     "tokenizer_config.json / special_tokens_map.json; a tokenizer.json without one, such as\n"
     "`trainrt tokenizer train`'s, gets a tokenizer_config.json for AutoTokenizer) too, and\n"
     "says which tokenizer files it wrote.\n"
     "A LoRA run's checkpoint (lora.rank > 0) writes its adapters instead, as a PEFT folder:\n"
     "DIR/adapter_model.safetensors + DIR/adapter_config.json (PeftModel.from_pretrained,\n"
     "lora.init_from); --merge writes the model with the adapters merged into the base weights.\n"
     "An existing, non-empty DIR is refused (nothing is written) unless --force, which\n"
     "replaces the files the export writes and leaves any others in DIR.\n"
     "--gguf FILE writes one GGUF file that llama.cpp and Ollama load instead: the model (a\n"
     "LoRA run's adapters merged) under llama.cpp's names for its family, in --gguf-type\n"
     "(default f16; norms and biases stay f32), with the run's tokenizer, chat template and\n"
     "end-of-turn ids inside it; it says what llama.cpp gets otherwise than the run had it\n"
     "(docs/FORMATS.md section 6). An existing FILE is refused unless --force.\n"
     "--gguf-lora FILE writes a LoRA run's adapters as llama.cpp's adapter GGUF instead\n"
     "(llama-cli -m BASE.gguf --lora FILE; BASE.gguf: the model the run trained on).\n"},
    {"config",
     "usage: trainrt config CONFIG [--set KEY=VALUE]...\n"
     "\n"
     "Prints the resolved config as TOML: every key, defaults included (docs/CONFIG.md).\n"},
    {"info",
     "usage: trainrt info [CONFIG [--set KEY=VALUE]...]\n"
     "\n"
     "Prints the library version and build features; with CONFIG also the model's parameter\n"
     "count, training FLOPs per token (6N + 6*L*C*T), a memory estimate and the resolved\n"
     "config.\n"},
    {"plan",
     "usage: trainrt plan CONFIG [--set KEY=VALUE]... [--max-batch] [--memory BYTES]\n"
     "\n"
     "The memory CONFIG's run needs on its device and precision, by component: parameters\n"
     "(fp32 master + the bf16/fp16 working copy), gradients and AdamW moments (of the\n"
     "trainable parameters only: LoRA, train.trainable), and one micro-batch's activations\n"
     "(train.recompute shrinks them); then what a real session of it holds (bytes_in_use).\n"
     "--max-batch: the largest micro-batch (train.batch_size) that fits, and the batch_size /\n"
     "grad_accum that keep the config's tokens per step. On the CPU by the estimate, within\n"
     "--memory BYTES or the machine's available memory; on CUDA by creating sessions (an\n"
     "out-of-memory one is too large), --memory capping the search. Exit status 3 when no\n"
     "micro-batch fits.\n"},
    {"bench",
     "usage: trainrt bench CONFIG [--steps N] [--warmup W] [--set KEY=VALUE]... [--json FILE]\n"
     "                            [--profile [--rounds R]]\n"
     "\n"
     "Measures training throughput on CONFIG's model, data and device: W warm-up steps\n"
     "(default 3; not timed, they absorb one-time costs such as CUDA graph capture), then\n"
     "N timed steps (default 20), ended by a sync. Nothing is written but the report: the\n"
     "bench sets runtime.log_every = 1, train.eval_every = 0, train.checkpoint_every = 0\n"
     "and train.out_dir = \"\" over CONFIG and --set.\n"
     "  tokens/s    N x tokens per step / wall time of the N steps (sync included)\n"
     "  step ms     mean = wall / N; p50 / p95 = nearest-rank percentiles of the per-step\n"
     "              times the session measures (from the later of the step's enqueue and\n"
     "              the previous step's completion, to its completion)\n"
     "  MFU         tokens/s x FLOPs per token (6N + 6*L*C*T) / the device's peak FLOP/s\n"
     "              (runtime.peak_tflops, else a built-in table; 0 = unknown, e.g. the CPU)\n"
     "  --json FILE also write the figures and every timed step's loss as one JSON object\n"
     "              (fields: bench/README.md)\n"
     "  --set K=V   override a config key (TOML value; bare words are strings)\n"
     "  --profile   instead, the per-op profile of the step (runtime.profile_ops): every\n"
     "              op's ms per step, share of the step, GFLOP/s and GB/s, by op and by\n"
     "              layer; N profiled steps (default 5) after W warm-up ones. On the CPU with\n"
     "              runtime.threads > 1, a second session at 1 thread gives each op's\n"
     "              parallel fraction p (Amdahl) and its time projected to 16, 32 and 64\n"
     "              threads; --json writes both profiles (docs/C_API.md, \"Per-op profile\")\n"
     "  --rounds R  with --profile: R sessions per thread count, alternating (N, 1 | 1, N\n"
     "              | ...), each figure the median of its sessions' (a noisy machine)\n"
     "Exit status: 0 ok, 1 error, 2 bad usage, 3 out of memory (a smaller batch may fit).\n"},
};

const char* command_help(const std::string& name) {
    for (const CommandHelp& h : kCommandHelp)
        if (name == h.name) return h.text;
    if (name == "eval") return kEvalHelp;
    if (name == "tokenizer") return kTokenizerHelp;
    if (name == "chat-template") return kChatTemplateHelp;
    if (name == "chat") return kChatHelp;
    if (name == "report") return kReportHelp;
    return nullptr;
}

bool wants_help(int argc, char** argv) {
    for (int i = 0; i < argc; ++i)
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return true;
    return false;
}

std::string g_command;  // the command being run: its usage lines go with a usage error

int fail_usage(const std::string& message) {
    return usage_error(g_command, message, command_help(g_command));
}

std::string format_duration(double seconds) {
    if (!(seconds >= 0)) return "?";
    const long s = static_cast<long>(seconds + 0.5);
    char buf[32];
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
    else if (s >= 60)
        std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
    else
        std::snprintf(buf, sizeof buf, "%lds", s);
    return buf;
}

// The run's latest eval (step -1: none yet), for the end-of-run summary: the session's
// last_val_loss carries no step, and a run stopped between evals would show a stale one.
long long g_val_step = -1;
double g_val_loss = 0;

int32_t on_progress(const trainrt_progress* p, void*) {
    if (!is_lead_rank()) return 0;
    if (p->kind == TRAINRT_PROGRESS_EVAL) {
        g_val_step = p->step;
        g_val_loss = p->loss;
        end_progress_line();
        std::fprintf(stderr, "step %lld/%lld | val loss %.4f | ppl %.2f\n", (long long)p->step,
                     (long long)p->steps_total, p->loss, std::exp(p->loss));
        return 0;
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "step %lld/%lld | loss %.4f | lr %.3e | norm %.3f | %.0f tok/s | %.1f ms | "
                  "ETA %s",
                  (long long)p->step, (long long)p->steps_total, p->loss, p->lr, p->grad_norm,
                  p->tokens_per_s, p->ms, format_duration(p->eta_s).c_str());
    if (stderr_is_tty()) {
        std::fprintf(stderr, "\r\033[K%s", line);  // redraw one live line
        mark_progress_line_open();
    } else {
        std::fprintf(stderr, "%s\n", line);
    }
    std::fflush(stderr);
    return 0;
}

// SIGINT / SIGTERM during `train`, from the start of training to the end of the final
// checkpoint. The first asks the session to stop (the library abandons the step in flight
// between micro-batches); the CLI then writes its checkpoint and exits 130 / 143. A second
// one ends the process from the handler at once: a step that cannot be abandoned (a CUDA
// graph replay, a step of several ranks) or a checkpoint being written is not waited for. A
// checkpoint cut short is a step_N.tmp folder nothing reads, and `latest` still names the one
// before (both are renamed into place only when complete), so the handler reads `latest` to
// say which checkpoint a rerun resumes from. Only async-signal-safe calls in the handler:
// lock-free atomics, open/read/close/write, _exit. It runs on an alternate signal stack (see
// TrainSignals): a oneDNN JIT GEMM kernel may have rsp pointing into a heap buffer when the
// signal comes, and a handler run on that "stack" writes its frame into the heap.
trainrt_session* g_session = nullptr;
volatile std::sig_atomic_t g_signal = 0;  // the first signal
std::atomic<int> g_signals{0};            // counted from whichever thread the kernel picks
static_assert(std::atomic<int>::is_always_lock_free, "the signal count must be lock-free");
char g_out_dir[4096] = "";  // train.out_dir ("" = none), and its `latest` file
char g_latest_file[4096 + 8] = "";
bool g_newline_first = false;  // stderr is a terminal: leave the live progress line first

void write_stderr(const char* text) {
    size_t n = std::strlen(text);
    while (n > 0) {
        const ssize_t w = ::write(STDERR_FILENO, text, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        text += w;
        n -= static_cast<size_t>(w);
    }
}

// "step_00001234" from out_dir/latest into out (cap bytes), or "" when there is none.
void read_latest_name(char* out, size_t cap) {
    out[0] = '\0';
    if (g_latest_file[0] == '\0') return;
    const int fd = ::open(g_latest_file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = 0;
    while ((n = ::read(fd, out, cap - 1)) < 0 && errno == EINTR) {
    }
    ::close(fd);
    if (n <= 0) return;
    size_t len = 0;  // up to the newline; printable ASCII only (it goes to a terminal)
    while (len < static_cast<size_t>(n) && out[len] > ' ' && out[len] < 127) ++len;
    out[len] = '\0';
}

// Not instrumented by AddressSanitizer: before a noreturn call (_exit) ASan inserts
// __asan_handle_no_return, which on an alternate signal stack looks up the thread's own stack
// with pthread_getattr_np: malloc, which deadlocks when the signal interrupted a malloc.
#if defined(__GNUC__)
__attribute__((no_sanitize("address")))
#endif
void on_signal(int sig) {
    const int saved_errno = errno;
    const char* name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
    if (g_signals.fetch_add(1) == 0) {
        g_signal = sig;
        if (g_session != nullptr) trainrt_session_request_stop(g_session);  // atomic store only
        if (g_newline_first) write_stderr("\n");
        write_stderr("trainrt: ");
        write_stderr(name);
        write_stderr(": stopping (the step in progress is abandoned), then writing a checkpoint; "
                     "a second SIGINT or SIGTERM exits at once without saving\n");
        errno = saved_errno;
        return;
    }
    char latest[256];
    read_latest_name(latest, sizeof latest);
    write_stderr("\ntrainrt: second signal (");
    write_stderr(name);
    write_stderr("): exiting now; ");
    if (latest[0] != '\0') {
        write_stderr("nothing after the last checkpoint (");
        write_stderr(g_out_dir);
        write_stderr("/");
        write_stderr(latest);
        write_stderr(") was saved\n");
    } else if (g_out_dir[0] != '\0') {
        write_stderr("nothing was saved (no checkpoint in ");
        write_stderr(g_out_dir);
        write_stderr(")\n");
    } else {
        write_stderr("nothing was saved (train.out_dir is empty)\n");
    }
    ::_exit(128 + sig);
}

// The installing thread's alternate signal stack: one mapping for the process (a train
// command installs its handlers once), 256 KiB (an ASan build's handler frame with its
// redzones and the kernel's signal frame with AVX-512 state fit many times over), with an
// inaccessible page below it so an overflow faults instead of writing into other memory.
// nullptr when it could not be mapped: the handlers then run on the interrupted stack, as
// they did before.
void* alt_signal_stack(size_t& size) {
    static constexpr size_t kSize = 256 * 1024;
    static void* const stack = [] {
        const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
        void* m = ::mmap(nullptr, kSize + page, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (m == MAP_FAILED) return static_cast<void*>(nullptr);
        ::mprotect(m, page, PROT_NONE);  // the guard page (stacks grow down)
        return static_cast<void*>(static_cast<char*>(m) + page);
    }();
    size = kSize;
    return stack;
}

// Installs on_signal for SIGINT and SIGTERM (each blocks both while it runs) for `session`,
// which writes into out_dir; the destructor puts the previous handlers back. SA_ONSTACK and
// this thread's alternate stack: the kernel delivers a process-directed signal to a thread
// that does not block it, the main thread first, and that thread may be inside a oneDNN
// kernel whose rsp points into the heap (oneDNN issue 4845, its JIT f32 GEMM). Only this
// thread needs the stack: the library's worker threads block SIGINT/SIGTERM (cpu_pool.h). The
// library would give this thread a stack of its own during computing calls
// (src/capi/signal_stack.h); the CLI's is there for the whole run (docs/C_API.md, "Threads").
class TrainSignals {
public:
    TrainSignals(trainrt_session* session, const std::string& out_dir) {
        std::snprintf(g_out_dir, sizeof g_out_dir, "%s", out_dir.c_str());
        if (!out_dir.empty())
            std::snprintf(g_latest_file, sizeof g_latest_file, "%s/latest", g_out_dir);
        g_newline_first = stderr_is_tty();
        g_session = session;
        stack_t ss{};
        ss.ss_sp = alt_signal_stack(ss.ss_size);
        if (ss.ss_sp != nullptr) own_stack_ = ::sigaltstack(&ss, &old_stack_) == 0;
        struct sigaction sa {};
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaddset(&sa.sa_mask, SIGINT);
        sigaddset(&sa.sa_mask, SIGTERM);
        sa.sa_flags = SA_RESTART | SA_ONSTACK;
        sigaction(SIGINT, &sa, &old_int_);
        sigaction(SIGTERM, &sa, &old_term_);
    }
    ~TrainSignals() {
        sigaction(SIGINT, &old_int_, nullptr);
        sigaction(SIGTERM, &old_term_, nullptr);
        if (own_stack_) ::sigaltstack(&old_stack_, nullptr);
        g_session = nullptr;
    }
    TrainSignals(const TrainSignals&) = delete;
    TrainSignals& operator=(const TrainSignals&) = delete;

private:
    struct sigaction old_int_ {}, old_term_ {};
    stack_t old_stack_{};
    bool own_stack_ = false;
};

// Writes the end-of-run checkpoint into train.out_dir; false after printing the error. The
// library logs "checkpoint: DIR" when it writes one; nothing is printed here, or the last
// periodic checkpoint (kept as the final one when the run ends on its step) would show twice.
bool save_final_checkpoint(trainrt_session* session, bool has_out_dir) {
    if (!has_out_dir) {
        if (is_lead_rank())
            std::fprintf(stderr, "trainrt: train.out_dir is empty, so no checkpoint was written\n");
        return true;
    }
    const trainrt_status st = trainrt_session_save(nullptr, 0, nullptr, session, nullptr);
    if (st != TRAINRT_OK) fail_status("writing the checkpoint", st);
    return st == TRAINRT_OK;
}

int32_t on_prepare_progress(int64_t done, int64_t total, void*) {
    if (!stderr_is_tty() || total <= 0) return 0;
    std::fprintf(stderr, "\r\033[Kprepare: %.1f / %.1f MB (%.0f%%)", done / 1e6, total / 1e6,
                 100.0 * static_cast<double>(done) / static_cast<double>(total));
    mark_progress_line_open();
    std::fflush(stderr);
    return 0;
}

// prepare --chat: conversations -> shards and loss masks (trainrt_prepare_options.chat).
int prepare_chat(const std::vector<std::string>& chats, const std::string& out,
                 const std::string& tokenizer, double fraction, const std::string& loss_mask,
                 const std::string& template_name, const std::string& template_vars,
                 const std::vector<std::string>& texts, const std::string& jsonl,
                 long long shard_tokens) {
    if (!texts.empty() || !jsonl.empty() || shard_tokens != 0)
        return fail_usage("--chat reads conversations: it does not go with --text, --jsonl or "
                          "--shard-tokens");
    if (out.empty() || tokenizer.empty())
        return fail_usage("prepare --chat needs --tokenizer MODEL_FOLDER (its chat template) "
                          "and --out DIR");
    trainrt_prepare_options o = TRAINRT_PREPARE_OPTIONS_INIT;
    o.tokenizer = tokenizer.c_str();
    o.val_fraction = fraction;
    o.chat = 1;
    if (loss_mask.empty()) o.loss_mask = TRAINRT_LOSS_MASK_DEFAULT;
    else if (loss_mask == "assistant") o.loss_mask = TRAINRT_LOSS_MASK_ASSISTANT;
    else if (loss_mask == "completion") o.loss_mask = TRAINRT_LOSS_MASK_COMPLETION;
    else if (loss_mask == "all") o.loss_mask = TRAINRT_LOSS_MASK_ALL;
    else return fail_usage("bad --loss-mask '" + loss_mask + "' (assistant, completion or all)");
    o.chat_template = template_name.empty() ? nullptr : template_name.c_str();
    o.template_vars = template_vars.empty() ? nullptr : template_vars.c_str();
    std::vector<const char*> inputs;
    for (const std::string& c : chats) inputs.push_back(c.c_str());
    trainrt_prepare_result r = TRAINRT_PREPARE_RESULT_INIT;
    const trainrt_status st = trainrt_prepare_text(&r, inputs.data(), inputs.size(), out.c_str(), &o);
    if (st != TRAINRT_OK) return fail_status("prepare", st);
    std::printf("wrote %s/train.bin (%lld tokens) and %s/val.bin (%lld tokens), uint%d, with "
                "their loss masks (mask_train.bin, mask_val.bin)\n",
                out.c_str(), (long long)r.train_tokens, out.c_str(), (long long)r.val_tokens,
                r.token_bytes * 8);
    std::printf("%lld conversations -> %lld examples (%lld in the per-turn form), %lld target "
                "tokens; train with model.vocab_size >= %d\n",
                (long long)r.documents, (long long)r.examples, (long long)r.per_turn,
                (long long)r.target_tokens, r.vocab_size);
    return 0;
}

int cmd_prepare(int argc, char** argv) {
    std::vector<std::string> texts, chats;
    std::string out, tokenizer, jsonl, loss_mask, template_name, template_vars;
    double fraction = 0.1;
    long threads = 0;
    long long shard_tokens = 0;
    const std::vector<std::string> options = {
        "--text",       "--out",        "--tokenizer",     "--jsonl",   "--threads",
        "--val-fraction", "--shard-tokens", "--chat",      "--loss-mask", "--template",
        "--template-vars"};
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        if (std::find(options.begin(), options.end(), a) == options.end())
            return fail_usage(unknown_option(a, options));
        if (i + 1 >= argc) return fail_usage("option '" + a + "' needs a value");
        if (a == "--text") {
            // Every argument up to the next option is an input.
            while (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) texts.push_back(argv[++i]);
        } else if (a == "--chat") {
            while (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) chats.push_back(argv[++i]);
        } else if (a == "--out") out = argv[++i];
        else if (a == "--loss-mask") loss_mask = argv[++i];
        else if (a == "--template") template_name = argv[++i];
        else if (a == "--template-vars") template_vars = argv[++i];
        else if (a == "--tokenizer") tokenizer = argv[++i];
        else if (a == "--jsonl") jsonl = argv[++i];
        else if (a == "--threads") {
            char* end = nullptr;
            threads = std::strtol(argv[++i], &end, 10);
            if (*end != '\0' || threads < 0 || threads > 4096)
                return fail_usage(std::string("bad --threads '") + argv[i] + "'");
        } else if (a == "--val-fraction") {
            char* end = nullptr;
            fraction = std::strtod(argv[++i], &end);
            if (*end != '\0') return fail_usage(std::string("bad --val-fraction '") + argv[i] + "'");
        } else if (a == "--shard-tokens") {
            char* end = nullptr;
            shard_tokens = std::strtoll(argv[++i], &end, 10);
            if (*end != '\0' || shard_tokens < 1 || shard_tokens > 2147483647LL)
                return fail_usage(std::string("bad --shard-tokens '") + argv[i] +
                                  "' (1 to 2147483647)");
        }
    }
    if (!chats.empty()) return prepare_chat(chats, out, tokenizer, fraction, loss_mask,
                                            template_name, template_vars, texts, jsonl,
                                            shard_tokens);
    if (!loss_mask.empty() || !template_name.empty() || !template_vars.empty())
        return fail_usage("--loss-mask, --template and --template-vars go with --chat");
    if (texts.empty() || out.empty()) return fail_usage("prepare needs --text FILE... and --out DIR");
    if (tokenizer.empty()) {
        if (!jsonl.empty() || threads != 0 || shard_tokens != 0)
            return fail_usage("--jsonl, --threads and --shard-tokens go with --tokenizer");
        if (texts.size() != 1)
            return fail_usage("byte-level prepare takes one --text file (or use --tokenizer)");
        int64_t n_train = 0, n_val = 0;
        const trainrt_status st =
            trainrt_prepare_bytes(&n_train, &n_val, texts[0].c_str(), out.c_str(), fraction);
        if (st != TRAINRT_OK) return fail_status("prepare", st);
        std::printf("wrote %s/train.bin (%lld tokens) and %s/val.bin (%lld tokens)\n", out.c_str(),
                    (long long)n_train, out.c_str(), (long long)n_val);
        return 0;
    }
    std::vector<const char*> inputs;
    for (const std::string& t : texts) inputs.push_back(t.c_str());
    trainrt_prepare_options o = TRAINRT_PREPARE_OPTIONS_INIT;
    o.tokenizer = tokenizer.c_str();
    o.jsonl_field = jsonl.empty() ? nullptr : jsonl.c_str();
    o.val_fraction = fraction;
    o.threads = static_cast<int32_t>(threads);
    o.shard_tokens = shard_tokens;
    o.progress = on_prepare_progress;
    trainrt_prepare_result r = TRAINRT_PREPARE_RESULT_INIT;
    const auto t0 = std::chrono::steady_clock::now();
    const trainrt_status st =
        trainrt_prepare_text(&r, inputs.data(), inputs.size(), out.c_str(), &o);
    end_progress_line();
    if (st != TRAINRT_OK) return fail_status("prepare", st);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int64_t tokens = r.train_tokens + r.val_tokens;
    if (shard_tokens == 0)
        std::printf("wrote %s/train.bin (%lld tokens) and %s/val.bin (%lld tokens), uint%d\n",
                    out.c_str(), (long long)r.train_tokens, out.c_str(), (long long)r.val_tokens,
                    r.token_bytes * 8);
    else
        std::printf("wrote %s/train_*.bin (%d shards, %lld tokens) and %s/val_*.bin (%d shards, "
                    "%lld tokens), uint%d\n",
                    out.c_str(), r.train_shards, (long long)r.train_tokens, out.c_str(),
                    r.val_shards, (long long)r.val_tokens, r.token_bytes * 8);
    std::printf("%lld documents, %.1f MB, %.2f bytes/token, %.1f MB/s; train with "
                "model.vocab_size >= %d (end-of-text id %d)\n",
                (long long)r.documents, r.bytes / 1e6,
                tokens > 0 ? static_cast<double>(r.bytes) / static_cast<double>(tokens) : 0.0,
                s > 0 ? r.bytes / 1e6 / s : 0.0, r.vocab_size, r.eos_id);
    return 0;
}

void print_train_summary(trainrt_session* session) {
    trainrt_metrics m = TRAINRT_METRICS_INIT;
    trainrt_session_metrics(&m, session);
    // NaN means "not measured in this run" (no step yet): leave it out. The val loss is
    // this run's latest eval with its step, which precedes the last step when the run
    // stopped between evals; none when it made no eval.
    std::string summary = "step " + std::to_string(m.step);
    char part[96];
    if (m.last_loss == m.last_loss) {
        std::snprintf(part, sizeof part, " | loss %.4f", m.last_loss);
        summary += part;
    }
    if (g_val_step >= 0) {
        std::snprintf(part, sizeof part, " | val loss %.4f @ step %lld | ppl %.2f", g_val_loss,
                      g_val_step, std::exp(g_val_loss));
        summary += part;
    }
    std::snprintf(part, sizeof part, " | %lld tokens | %.0f tok/s (p50 step %.1f ms)",
                  (long long)m.tokens_total, m.tokens_per_s, m.step_ms_p50);
    std::printf("%s%s\n", summary.c_str(), part);
}

int cmd_train(int argc, char** argv) {
    RunArgs args;
    std::string error;
    if (!parse_run_args(argc, argv, kSteps | kFresh | kCheckpoint, args, error))
        return fail_usage(error);
    if (args.fresh && !args.checkpoint.empty())
        return fail_usage("--fresh and --checkpoint exclude each other");
    trainrt_config* config = load_config(args);
    if (config == nullptr) return 1;
    std::string resume_from = args.checkpoint, out_dir;
    if (!fetch_string(out_dir, "reading train.out_dir", [&](char* b, size_t c, size_t* n) {
            return trainrt_config_get_string(b, c, n, config, "train.out_dir");
        }) ||
        (!args.fresh && resume_from.empty() && !pick_checkpoint(config, "", resume_from))) {
        trainrt_config_destroy(config);
        return 1;
    }
    trainrt_session* session = create_session(config);
    if (session == nullptr) return 1;
    if (!resume_from.empty()) {
        const trainrt_status st = trainrt_session_load(session, resume_from.c_str());
        if (st != TRAINRT_OK) {
            fail_status(("resuming from " + resume_from).c_str(), st);
            std::fprintf(stderr, "trainrt: to start over instead, run with --fresh\n");
            trainrt_session_destroy(session);
            return 1;
        }
    }

    int code = 0;
    {
        // Until the final checkpoint is written: a second signal then exits at once too.
        const TrainSignals signals(session, out_dir);
        const trainrt_status st = trainrt_session_train(session, args.steps, on_progress, nullptr);
        end_progress_line();
        if (st < 0) {
            code = fail_status("training", st);  // no checkpoint of a run that failed mid-step
        } else {
            if (is_lead_rank()) print_train_summary(session);
            if (!save_final_checkpoint(session, !out_dir.empty())) code = 1;
            if (st == TRAINRT_STOPPED) {
                trainrt_metrics m = TRAINRT_METRICS_INIT;
                trainrt_session_metrics(&m, session);
                std::fprintf(stderr, "trainrt: stopped at step %lld\n", (long long)m.step);
            }
        }
        // A signal asked to stop (even one that came as the run completed): 130 / 143.
        if (code == 0 && g_signal != 0) code = 128 + g_signal;
    }
    trainrt_session_destroy(session);
    return code;
}

bool parse_number(const char* text, double& out) {
    char* end = nullptr;
    out = std::strtod(text, &end);
    return end != text && *end == '\0';
}

int cmd_sample(int argc, char** argv) {
    for (int i = 0; i < argc; ++i)
        if (std::strcmp(argv[i], "--chat") == 0) return sample_chat(argc, argv);
    std::string path, prompt = "\n", tokenizer_path;
    double tokens = 256, temperature = 1.0, top_k = 0, seed = 1337;
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        double* number = a == "--tokens" ? &tokens
                         : a == "--temperature" ? &temperature
                         : a == "--top-k" ? &top_k
                         : a == "--seed" ? &seed
                                         : nullptr;
        if (a == "--prompt" || a == "--tokenizer" || number != nullptr) {
            if (i + 1 >= argc) return fail_usage("option '" + a + "' needs a value");
            ++i;
            if (a == "--tokenizer") tokenizer_path = argv[i];
            else if (number == nullptr) prompt = argv[i];
            else if (!parse_number(argv[i], *number))
                return fail_usage("option '" + a + "' needs a number, got '" + argv[i] + "'");
        } else if (!a.empty() && a[0] == '-') {
            return fail_usage(unknown_option(a, {"--prompt", "--tokens", "--temperature",
                                                 "--top-k", "--seed", "--tokenizer"}));
        } else if (path.empty()) {
            path = a;
        } else {
            return fail_usage("unexpected argument '" + a + "'");
        }
    }
    if (path.empty()) return fail_usage("sample needs a CHECKPOINT (directory or train.out_dir)");
    if (tokens < 0 || tokens != static_cast<double>(static_cast<long long>(tokens)))
        return fail_usage("--tokens needs a non-negative integer");
    if (top_k < 0 || top_k != static_cast<double>(static_cast<int>(top_k)))
        return fail_usage("--top-k needs a non-negative integer");
    if (seed < 0 || seed != static_cast<double>(static_cast<long long>(seed)))
        return fail_usage("--seed needs a non-negative integer");
    if (prompt.empty()) prompt = "\n";

    // The vocabulary: bytes (256) without a tokenizer; checked before loading the weights.
    // The tokenizer: --tokenizer, else the run's data.tokenizer (recorded in the checkpoint).
    int64_t vocab = 0;
    trainrt_config* stored = nullptr;
    trainrt_status st = trainrt_config_from_checkpoint(&stored, path.c_str());
    if (st == TRAINRT_OK) st = trainrt_config_get_int(&vocab, stored, "model.vocab_size");
    if (st == TRAINRT_OK && tokenizer_path.empty()) {
        size_t needed = 0;
        st = trainrt_config_get_string(nullptr, 0, &needed, stored, "data.tokenizer");
        std::string recorded(needed, '\0');
        if (st == TRAINRT_OK)
            st = trainrt_config_get_string(recorded.data(), recorded.size() + 1, &needed, stored,
                                           "data.tokenizer");
        tokenizer_path = recorded;
    }
    trainrt_config_destroy(stored);
    if (st != TRAINRT_OK) return fail_status(("reading checkpoint " + path).c_str(), st);
    trainrt_tokenizer* tokenizer = nullptr;
    if (!tokenizer_path.empty()) {
        st = trainrt_tokenizer_load(&tokenizer, tokenizer_path.c_str());
        if (st != TRAINRT_OK) return fail_status("loading the tokenizer", st);
        int32_t tv = 0;
        trainrt_tokenizer_vocab_size(&tv, tokenizer);
        if (tv > vocab) {
            std::fprintf(stderr, "trainrt: the tokenizer has ids up to %d, the model only %lld; "
                         "is it the tokenizer the model was trained with?\n", tv - 1,
                         (long long)vocab - 1);
            trainrt_tokenizer_destroy(tokenizer);
            return 1;
        }
    } else if (vocab != 256) {
        std::fprintf(stderr,
                     "trainrt: this model has %lld tokens, not bytes (256): give the tokenizer it "
                     "was trained with (--tokenizer PATH: a tokenizer.json/.model or a model folder)\n",
                     (long long)vocab);
        return 1;
    }
    std::vector<int32_t> ids;
    if (tokenizer != nullptr) {
        size_t needed = 0;
        st = trainrt_tokenizer_encode(nullptr, 0, &needed, tokenizer, prompt.data(), prompt.size());
        ids.resize(needed);
        if (st == TRAINRT_OK)
            st = trainrt_tokenizer_encode(ids.data(), ids.size(), &needed, tokenizer,
                                          prompt.data(), prompt.size());
        if (st != TRAINRT_OK || ids.empty()) {
            trainrt_tokenizer_destroy(tokenizer);
            return st != TRAINRT_OK ? fail_status("encoding the prompt", st)
                                    : fail_usage("the prompt encodes to no tokens");
        }
    } else {
        ids.assign(prompt.begin(), prompt.end());
        for (int32_t& id : ids) id &= 0xFF;  // bytes, whatever the char signedness
    }
    trainrt_session* session = open_checkpoint(path, TRAINRT_LOG_WARN);
    if (session == nullptr) {
        trainrt_tokenizer_destroy(tokenizer);
        return 1;
    }
    std::vector<int32_t> out(static_cast<size_t>(tokens));
    trainrt_sample_options options;
    trainrt_sample_options_init(&options);
    options.temperature = temperature;
    options.top_k = static_cast<int32_t>(top_k);
    options.seed = static_cast<uint64_t>(seed);
    st = trainrt_session_sample(out.data(), out.size(), session, ids.data(), ids.size(),
                                out.size(), &options);
    trainrt_session_destroy(session);
    if (st != TRAINRT_OK) {
        trainrt_tokenizer_destroy(tokenizer);
        return fail_status("sample", st);
    }
    std::string text = prompt;
    if (tokenizer != nullptr) {
        // The sample is decoded after the prompt's ids, not alone: SentencePiece drops the
        // space ("▁") that opens the text it decodes, which would glue the first sampled word
        // to the prompt. What the prompt's ids decode to is then cut off the front.
        const auto decode = [&](std::string& to, const std::vector<int32_t>& v) {
            return fetch_string(to, "decoding the sample", [&](char* b, size_t c, size_t* n) {
                return trainrt_tokenizer_decode(b, c, n, tokenizer, v.data(), v.size());
            });
        };
        std::vector<int32_t> all = ids;
        all.insert(all.end(), out.begin(), out.end());
        std::string head, whole;
        const bool ok = decode(head, ids) && decode(whole, all);
        trainrt_tokenizer_destroy(tokenizer);
        if (!ok) return 1;
        if (whole.compare(0, head.size(), head) == 0)
            text += whole.substr(head.size());
        else
            text = whole;  // the prompt does not decode to a prefix: print the whole decode
    } else {
        for (int32_t id : out) text.push_back(static_cast<char>(id));
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (text.empty() || text.back() != '\n') std::fputc('\n', stdout);
    return 0;
}

// The tokenizer files an export may write (the run's data.tokenizer: tokenizer_files.h).
const char* const kTokenizerFiles[] = {"tokenizer.json",        "tokenizer.model",
                                       "tokenizer_config.json", "special_tokens_map.json",
                                       "chat_template.jinja",   "generation_config.json"};

// Each file of kTokenizerFiles in dir as (device, inode), 0s when absent: every file an
// export writes is renamed into place, so one it wrote has an inode it did not have before
// (with --force the folder may hold an older export's).
std::vector<std::pair<dev_t, ino_t>> tokenizer_file_ids(const std::string& dir) {
    std::vector<std::pair<dev_t, ino_t>> ids;
    for (const char* name : kTokenizerFiles) {
        struct stat st {};
        const bool there = ::stat((dir + "/" + name).c_str(), &st) == 0;
        ids.emplace_back(there ? st.st_dev : 0, there ? st.st_ino : 0);
    }
    return ids;
}

// " and the tokenizer: DIR/tokenizer.json, DIR/tokenizer_config.json": the files this export
// wrote (before: tokenizer_file_ids from before it), or "" when none.
std::string tokenizer_files_written(const std::string& dir,
                                    const std::vector<std::pair<dev_t, ino_t>>& before) {
    const std::vector<std::pair<dev_t, ino_t>> after = tokenizer_file_ids(dir);
    std::string list;
    for (size_t i = 0; i < after.size(); ++i)
        if (after[i].second != 0 && after[i] != before[i])
            list += (list.empty() ? "" : ", ") + dir + "/" + kTokenizerFiles[i];
    return list.empty() ? "" : "; the tokenizer: " + list;
}

// trainrt export CHECKPOINT --gguf FILE: one GGUF file for llama.cpp / Ollama (--gguf-lora:
// the adapters alone).
int export_gguf_file(const std::string& checkpoint, const std::string& file,
                     const std::string& type, bool force, bool adapter) {
    std::error_code ec;
    if (!force && std::filesystem::exists(file, ec)) {
        std::fprintf(stderr,
                     "trainrt: export: '%s' already exists; nothing was written. Choose "
                     "a new FILE, or pass --force to replace it\n",
                     file.c_str());
        return 1;
    }
    size_t needed = 0;
    std::vector<char> notes(4096);
    trainrt_status st =
        adapter
            ? trainrt_checkpoint_export_gguf_lora(notes.data(), notes.size(), &needed,
                                                  checkpoint.c_str(), file.c_str(), type.c_str())
            : trainrt_checkpoint_export_gguf(notes.data(), notes.size(), &needed,
                                             checkpoint.c_str(), file.c_str(), type.c_str());
    if (st != TRAINRT_OK) return fail_status("export", st);
    std::printf("wrote %s (GGUF%s, %s)\n", file.c_str(), adapter ? " LoRA adapter" : "",
                type.c_str());
    const std::string text(notes.data());
    if (!text.empty())
        std::printf("notes (what llama.cpp gets otherwise than this run had it):\n%s",
                    text.c_str());
    if (needed >= notes.size())
        std::printf("(%zu more bytes of notes)\n", needed - notes.size() + 1);
    return 0;
}

int cmd_export(int argc, char** argv) {
    std::vector<std::string> positional;
    int32_t dtype = TRAINRT_DTYPE_F32;
    bool merge = false, force = false, dtype_given = false;
    std::string gguf, gguf_lora, gguf_type;
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--gguf" || a == "--gguf-lora" || a == "--gguf-type") {
            if (i + 1 >= argc)
                return fail_usage(a == "--gguf-type" ? "--gguf-type needs f32, f16, bf16 or q8_0"
                                                     : a + " needs a FILE");
            (a == "--gguf" ? gguf : a == "--gguf-lora" ? gguf_lora : gguf_type) = argv[++i];
        } else if (a == "--merge") {
            merge = true;
        } else if (a == "--force") {
            force = true;
        } else if (a == "--dtype") {
            if (i + 1 >= argc) return fail_usage("--dtype needs f32 or bf16");
            const std::string d = argv[++i];
            if (d == "f32" || d == "fp32" || d == "float32") dtype = TRAINRT_DTYPE_F32;
            else if (d == "bf16" || d == "bfloat16") dtype = TRAINRT_DTYPE_BF16;
            else return fail_usage("--dtype needs f32 or bf16, got '" + d + "'");
            dtype_given = true;
        } else if (!a.empty() && a[0] == '-') {
            return fail_usage(unknown_option(
                a, {"--dtype", "--merge", "--force", "--gguf", "--gguf-lora", "--gguf-type"}));
        } else {
            positional.push_back(a);
        }
    }
    if (!gguf.empty() && !gguf_lora.empty())
        return fail_usage("--gguf and --gguf-lora are two exports: run them one at a time");
    if (!gguf.empty() || !gguf_lora.empty()) {
        const bool adapter = !gguf_lora.empty();
        const char* option = adapter ? "--gguf-lora" : "--gguf";
        if (positional.size() != 1)
            return fail_usage(std::string("export ") + option +
                              " FILE needs CHECKPOINT only (the file is the output)");
        if (dtype_given)
            return fail_usage("--dtype is the folder export's; a GGUF file's type is --gguf-type");
        if (merge && adapter)
            return fail_usage("--merge and --gguf-lora: use --gguf for a merged model");
        // A GGUF model file holds the model: a LoRA run's adapters are always merged into it.
        return export_gguf_file(positional[0], adapter ? gguf_lora : gguf,
                                gguf_type.empty() ? "f16" : gguf_type, force, adapter);
    }
    if (!gguf_type.empty()) return fail_usage("--gguf-type goes with --gguf FILE");
    if (positional.size() != 2) return fail_usage("export needs CHECKPOINT and DIR");
    {
        std::error_code ec;
        const std::filesystem::path out(positional[1]);
        bool empty_folder = false;
        if (!force && std::filesystem::is_directory(out, ec)) {
            empty_folder = std::filesystem::is_empty(out, ec);
            if (ec) {
                std::fprintf(stderr, "trainrt: export: cannot read the folder '%s': %s\n",
                             positional[1].c_str(), ec.message().c_str());
                return 1;
            }
        }
        if (!force && std::filesystem::exists(out, ec) && !empty_folder) {
            std::fprintf(stderr, "trainrt: export: '%s' already exists and is not an empty "
                         "folder; nothing was written. Choose a new DIR, or pass --force to "
                         "replace the files an export writes there\n", positional[1].c_str());
            return 1;
        }
    }
    // A LoRA run's checkpoint exports its adapters (PEFT) unless --merge asks for the model.
    trainrt_config* config = nullptr;
    if (const trainrt_status st = trainrt_config_from_checkpoint(&config, positional[0].c_str());
        st != TRAINRT_OK)
        return fail_status("export", st);
    int64_t rank = 0;
    const trainrt_status got = trainrt_config_get_int(&rank, config, "lora.rank");
    trainrt_config_destroy(config);
    if (got != TRAINRT_OK) return fail_status("export", got);
    if (merge && rank == 0)
        return fail_usage("--merge: " + positional[0] + " has no LoRA adapters (its run had "
                          "lora.rank = 0); its export is the model already");
    const char* dir = positional[1].c_str();
    const char* dt = dtype == TRAINRT_DTYPE_BF16 ? "bf16" : "f32";
    if (rank > 0 && !merge) {
        const trainrt_status st =
            trainrt_checkpoint_export_adapter(positional[0].c_str(), dir, dtype);
        if (st != TRAINRT_OK) return fail_status("export", st);
        std::printf("wrote the LoRA adapter (PEFT): %s/adapter_model.safetensors (%s) and "
                    "%s/adapter_config.json; --merge writes the merged model instead\n",
                    dir, dt, dir);
        return 0;
    }
    const auto before = tokenizer_file_ids(positional[1]);
    const trainrt_status st = trainrt_checkpoint_export(positional[0].c_str(), dir, dtype);
    if (st != TRAINRT_OK) return fail_status("export", st);
    std::printf("wrote %s/model.safetensors (%s%s) and %s/config.json%s\n", dir, dt,
                merge ? ", LoRA adapters merged" : "", dir,
                tokenizer_files_written(positional[1], before).c_str());
    return 0;
}

int cmd_config(int argc, char** argv) {
    RunArgs args;
    std::string error;
    if (!parse_run_args(argc, argv, 0, args, error)) return fail_usage(error);
    trainrt_config* config = load_config(args);
    if (config == nullptr) return 1;
    std::string text;
    const bool ok = fetch_string(text, "config dump", [&](char* b, size_t c, size_t* n) {
        return trainrt_config_dump(b, c, n, config);
    });
    trainrt_config_destroy(config);
    if (!ok) return 1;
    std::fputs(text.c_str(), stdout);
    return 0;
}


int cmd_info(int argc, char** argv) {
    const uint64_t f = trainrt_build_features();
    std::printf("libtrainrt %s (ABI %u; header %d.%d.%d)\n", trainrt_version_string(),
                trainrt_abi_version(), TRAINRT_VERSION_MAJOR, TRAINRT_VERSION_MINOR,
                TRAINRT_VERSION_PATCH);
    std::printf("features:%s%s%s%s%s%s%s%s\n", f & TRAINRT_FEATURE_CPU ? " cpu" : "",
                f & TRAINRT_FEATURE_OPENMP ? " openmp" : "",
                f & TRAINRT_FEATURE_OPENBLAS ? " openblas" : "",
                f & TRAINRT_FEATURE_CUDA_MODULE ? " cuda" : "",
                f & TRAINRT_FEATURE_CUDNN ? " cudnn" : "", f & TRAINRT_FEATURE_NCCL ? " nccl" : "",
                f & TRAINRT_FEATURE_MPI ? " mpi" : "", f & TRAINRT_FEATURE_ONEDNN ? " onednn" : "");
    if (argc == 0) return 0;

    RunArgs args;
    std::string error;
    if (!parse_run_args(argc, argv, 0, args, error)) return fail_usage(error);
    trainrt_config* config = load_config(args);
    if (config == nullptr) return 1;
    trainrt_model_info m = TRAINRT_MODEL_INFO_INIT;
    std::string text, summary;
    trainrt_status st = trainrt_config_model_info(&m, config);
    const bool ok = st == TRAINRT_OK &&
                    fetch_string(summary, "model summary", [&](char* b, size_t c, size_t* n) {
                        return trainrt_config_model_summary(b, c, n, config);
                    }) &&
                    fetch_string(text, "config dump", [&](char* b, size_t c, size_t* n) {
                        return trainrt_config_dump(b, c, n, config);
                    });
    int64_t B = 0, T = 0, GA = 0;
    trainrt_config_get_int(&B, config, "train.batch_size");
    trainrt_config_get_int(&T, config, "train.seq_len");
    trainrt_config_get_int(&GA, config, "train.grad_accum");
    trainrt_config_destroy(config);
    if (st != TRAINRT_OK) return fail_status("model info", st);
    if (!ok) return 1;
    std::printf("\nmodel: %lld parameters (%.2f M)\n%s", (long long)m.parameters,
                m.parameters / 1e6, summary.c_str());
    if (m.trainable_parameters != m.parameters)
        std::printf("trainable: %lld parameters (%.2f%%; LoRA adapters, train.trainable); the "
                    "others are frozen: no gradients, no AdamW state\n",
                    (long long)m.trainable_parameters,
                    100.0 * (double)m.trainable_parameters / (double)m.parameters);
    std::printf("training FLOPs per token: %.4g (6N + 6*L*C*T); per step: %.4g "
                "(%lld tokens)\n",
                m.flops_per_token, m.flops_per_token * B * T * GA, (long long)(B * T * GA));
    std::printf("memory estimate: %s total = weights %s + grads/AdamW %s + activations %s "
                "(micro-batch %lld x %lld)\n",
                human_bytes((double)m.bytes_total).c_str(),
                human_bytes((double)m.bytes_parameters).c_str(),
                human_bytes((double)m.bytes_optimizer).c_str(),
                human_bytes((double)m.bytes_activations).c_str(), (long long)B, (long long)T);
    std::printf("\n%s", text.c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage_error("", "missing command", kUsage);
    const std::string cmd = argv[1];
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
        const char* text = argc > 2 ? command_help(argv[2]) : nullptr;
        std::fputs(text != nullptr ? text : kUsage, stdout);
        return 0;
    }
    if (cmd == "--version" || cmd == "-V" || cmd == "version") {
        std::printf("trainrt %d.%d.%d (libtrainrt %s, ABI %u)\n", TRAINRT_VERSION_MAJOR,
                    TRAINRT_VERSION_MINOR, TRAINRT_VERSION_PATCH, trainrt_version_string(),
                    trainrt_abi_version());
        return 0;
    }
    if (command_help(cmd) == nullptr) {
        const std::vector<std::string> commands = {"prepare", "train",  "eval", "sample",
                                                   "export",  "config", "info", "plan",
                                                   "bench",   "tokenizer", "chat-template", "report",
                                                   "chat"};
        std::string list;
        for (const std::string& c : commands) list += (list.empty() ? "" : ", ") + c;
        return fail_usage("unknown command '" + cmd + "'" + did_you_mean(cmd, commands) +
                          " (the commands are " + list + ")");
    }
    g_command = cmd;
    if (command_help(cmd) != nullptr && wants_help(argc - 2, argv + 2)) {
        std::fputs(command_help(cmd), stdout);
        return 0;
    }
    if (trainrt_abi_version() != TRAINRT_ABI_VERSION) {
        std::fprintf(stderr, "trainrt: libtrainrt ABI %u does not match this tool's %d\n",
                     trainrt_abi_version(), TRAINRT_ABI_VERSION);
        return 1;
    }
    if (cmd == "prepare") return cmd_prepare(argc - 2, argv + 2);
    if (cmd == "train") return cmd_train(argc - 2, argv + 2);
    if (cmd == "eval") return cmd_eval(argc - 2, argv + 2);
    if (cmd == "sample") return cmd_sample(argc - 2, argv + 2);
    if (cmd == "export") return cmd_export(argc - 2, argv + 2);
    if (cmd == "config") return cmd_config(argc - 2, argv + 2);
    if (cmd == "info") return cmd_info(argc - 2, argv + 2);
    if (cmd == "bench") return cmd_bench(argc - 2, argv + 2);
    if (cmd == "plan") return cmd_plan(argc - 2, argv + 2);
    if (cmd == "tokenizer") return cmd_tokenizer(argc - 2, argv + 2);
    if (cmd == "chat-template") return cmd_chat_template(argc - 2, argv + 2);
    if (cmd == "report") return cmd_report(argc - 2, argv + 2);
    if (cmd == "chat") return cmd_chat(argc - 2, argv + 2);
    return fail_usage("unknown command '" + cmd + "'");  // a command with help but no handler
}
