// A prepared folder is committed as a whole (data/shard_set.h, data/shard_manifest.h): a
// prepare killed while it renames its shards leaves a folder that readers of a glob refuse
// (naming it) until the next prepare, which also removes the killed run's temporary files;
// a manifest-listed set with a shard missing, added or resized is refused; a folder without
// a manifest reads as before; two prepares into one folder: the second is refused at once.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "data/data_test_util.h"
#include "data/prepare.h"
#include "data/prepare_text.h"
#include "data/shard_manifest.h"
#include "data/shard_set.h"
#include "data/token_dataset.h"
#include "io/fs_util.h"
#include "tokenizer/tokenizer_identity.h"
#include "tokenizer/synthetic_tokenizer.h"  // tests/tokenizer

namespace fs = std::filesystem;
using trt::Status;
using trt::TokenDataset;

namespace {

std::string fresh_dir() { return fresh_test_dir("prepare_commit"); }

// A prepare through the shard writer: `n` train tokens of value `id` in shards of `per`
// (val: a tenth as many), committed as prepare does; before_rename as commit_prepared's.
void prepare_ids(const std::string& out, int64_t n, uint32_t id, int64_t per,
                 const std::function<void(const std::string&)>& before_rename = {}) {
    const auto lock = trt::open_prepare_folder(out);
    trt::ShardSet train(out, "train", 2, per), val(out, "val", 2, per);
    train.append(std::vector<uint32_t>(static_cast<size_t>(n), id));
    val.append(std::vector<uint32_t>(static_cast<size_t>(n / 10), id));
    trt::commit_prepared(out, {&train, &val}, trt::tok::bytes_identity(), before_rename);
}

// Every token of the dataset (shards in order).
std::vector<int32_t> all_tokens(const TokenDataset& ds) {
    std::vector<int32_t> out;
    for (size_t s = 0; s < ds.num_shards(); ++s) {
        std::vector<int32_t> part(static_cast<size_t>(ds.shard_tokens(s)));
        ds.copy_tokens(s, 0, ds.shard_tokens(s), part.data());
        out.insert(out.end(), part.begin(), part.end());
    }
    return out;
}

// The folder's AtomicFile temporary files (a killed writer's orphans).
std::vector<std::string> temporary_files(const std::string& dir) {
    std::vector<std::string> out;
    for (const trt::DirEntry& e : trt::list_dir(dir))
        if (!trt::atomic_temp_target(e.name).empty()) out.push_back(e.name);
    return out;
}

}  // namespace

TEST(PrepareCommit, ManifestListsTheSetAndNoLockOrTemporaryFileStays) {
    const std::string dir = fresh_dir(), out = dir + "/out";
    write_text(dir + "/in.txt", std::string(1000, 'x'));
    const trt::PrepareResult r = trt::prepare_bytes(dir + "/in.txt", out, 0.1);
    const std::optional<trt::ShardManifest> m = trt::read_shard_manifest(out);
    ASSERT_TRUE(m.has_value());
    EXPECT_TRUE(m->complete);
    EXPECT_EQ(m->token_bytes, 2);
    ASSERT_EQ(m->shards.size(), 2u);
    EXPECT_EQ(m->shards[0].name, "train.bin");
    EXPECT_EQ(m->shards[0].split, "train");
    EXPECT_EQ(m->shards[0].tokens, r.train_tokens);
    EXPECT_EQ(m->shards[0].bytes, fs::file_size(out + "/train.bin"));
    EXPECT_EQ(m->shards[1].name, "val.bin");
    EXPECT_EQ(m->shards[1].tokens, r.val_tokens);
    std::vector<std::string> names;
    for (const trt::DirEntry& e : trt::list_dir(out)) names.push_back(e.name);
    EXPECT_EQ(names, (std::vector<std::string>{"prepare.json", "train.bin", "val.bin"}));
    EXPECT_EQ(TokenDataset::open(out + "/train.bin", 256).total_tokens(), r.train_tokens);
    EXPECT_EQ(TokenDataset::open(out + "/*.bin", 256).num_shards(), 2u);
}

// The issue's case: a re-prepare (another tokenizer: other ids, another shard size) killed
// -9 while it renamed its shards left new shards, old ones and temporary files, and training
// on train_*.bin took the mix. Here the kill is real (_exit in a child, nothing unwinds).
TEST(PrepareCommit, AKillDuringTheRenamesLeavesAFolderThatIsRefusedUntilTheNextPrepare) {
    const std::string out = fresh_dir() + "/out";
    prepare_ids(out, 1000, 1, 50);  // the older run: 20 train shards of id 1
    ASSERT_EQ(TokenDataset::open(out + "/train_*.bin", 10).num_shards(), 20u);

    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        try {
            prepare_ids(out, 1000, 2, 100, [](const std::string& name) {
                if (name == "train_000004.bin") ::_exit(0);  // killed: 4 of 10 renamed
            });
        } catch (...) {
        }
        ::_exit(3);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

    // Four new shards over the old ones, the rest old, the killed run's files still there.
    EXPECT_FALSE(temporary_files(out).empty());
    for (const std::string pattern : {out + "/train_*.bin", out + "/val_*.bin",
                                      out + "/train_000000.bin", out + "/*.bin"}) {
        const std::string msg = expect_error([&] { TokenDataset::open(pattern, 10); },
                                             Status::Format,
                                             {"'" + out + "'", "unfinished prepare",
                                              "prepare.json", "trainrt prepare into"});
    }

    prepare_ids(out, 1000, 2, 100);  // the next prepare repairs the folder
    EXPECT_TRUE(temporary_files(out).empty());
    EXPECT_FALSE(fs::exists(out + "/trainrt.lock"));
    const TokenDataset ds = TokenDataset::open(out + "/train_*.bin", 10);
    EXPECT_EQ(ds.num_shards(), 10u);  // the older run's shards 10..19 are gone
    EXPECT_EQ(all_tokens(ds), std::vector<int32_t>(1000, 2));
}

// An error between the renames (the commit throws) leaves the same refused folder, and the
// unrenamed files' temporary names are removed on the way out.
TEST(PrepareCommit, AnErrorDuringTheRenamesLeavesARefusedFolder) {
    const std::string out = fresh_dir() + "/out";
    prepare_ids(out, 300, 1, 100);
    expect_error([&] {
        prepare_ids(out, 300, 2, 100, [](const std::string& name) {
            if (name == "train_000001.bin") trt::fail(Status::Io, "disk full (simulated)");
        });
    }, Status::Io, {"simulated"});
    EXPECT_TRUE(temporary_files(out).empty());
    expect_error([&] { TokenDataset::open(out + "/train_*.bin", 10); }, Status::Format,
                 {"unfinished prepare"});
    prepare_ids(out, 300, 2, 100);
    EXPECT_EQ(all_tokens(TokenDataset::open(out + "/train_*.bin", 10)),
              std::vector<int32_t>(300, 2));
}

// A kill before the commit (while encoding) leaves the older set whole and readable; only
// its temporary files remain, which the next prepare removes (and nothing else).
TEST(PrepareCommit, OrphanTemporaryFilesAreRemovedByTheNextPrepareOnly) {
    const std::string out = fresh_dir() + "/out";
    prepare_ids(out, 300, 1, 100);
    write_text(out + "/.train_000001.bin.tmp.99999.0123456789abcdef", "half");
    write_text(out + "/.prepare.json.tmp.99999.0123456789abcdef", "{");
    write_text(out + "/train_000002.bin.tmp", "an earlier version's name");
    write_text(out + "/.notes.txt.tmp.99999.0123456789abcdef", "not prepare's");
    write_text(out + "/notes.txt", "mine");
    EXPECT_EQ(all_tokens(TokenDataset::open(out + "/train_*.bin", 10)),
              std::vector<int32_t>(300, 1));
    prepare_ids(out, 300, 2, 100);
    std::vector<std::string> names;
    for (const trt::DirEntry& e : trt::list_dir(out)) names.push_back(e.name);
    EXPECT_EQ(names, (std::vector<std::string>{
                         ".notes.txt.tmp.99999.0123456789abcdef", "notes.txt", "prepare.json",
                         "train_000000.bin", "train_000001.bin", "train_000002.bin",
                         "val_000000.bin"}));
}

TEST(PrepareCommit, AGlobRefusesAShardAddedMissingOrResizedNamingIt) {
    const std::string out = fresh_dir() + "/out";
    prepare_ids(out, 300, 1, 100);
    const std::string glob = out + "/train_*.bin";

    fs::copy_file(out + "/train_000000.bin", out + "/train_000007.bin");  // another run's
    expect_error([&] { TokenDataset::open(glob, 10); }, Status::Format,
                 {out + "/train_000007.bin", "is not one of the shards", "prepare.json",
                  "trainrt prepare into '" + out + "'"});
    expect_error([&] { TokenDataset::open(out + "/train_000007.bin", 10); }, Status::Format,
                 {out + "/train_000007.bin", "is not one of the shards"});
    fs::remove(out + "/train_000007.bin");

    fs::rename(out + "/train_000001.bin", out + "/aside");
    expect_error([&] { TokenDataset::open(glob, 10); }, Status::Format,
                 {out + "/train_000001.bin", "is missing", "incomplete"});
    fs::rename(out + "/aside", out + "/train_000001.bin");

    fs::resize_file(out + "/train_000002.bin", 1024 + 2 * 50);  // a shard of 50 tokens now
    expect_error([&] { TokenDataset::open(glob, 10); }, Status::Format,
                 {out + "/train_000002.bin", "1124 bytes", "1224 bytes", "100 tokens"});
    prepare_ids(out, 300, 1, 100);

    // Files that are not prepare's names are none of the manifest's business, as before.
    write_text(out + "/train_1.bin", "");
    EXPECT_EQ(TokenDataset::open(out + "/train_00000?.bin", 10).num_shards(), 3u);
    expect_error([&] { TokenDataset::open(glob, 10); }, Status::Format,
                 {out + "/train_1.bin", "1024"});  // the shard reader's own error
}

// Folders written before the manifest existed (or by other tools) read as they always did.
TEST(PrepareCommit, AFolderWithoutAManifestReadsAsBefore) {
    const std::string out = fresh_dir();
    const std::vector<uint32_t> a = {1, 2}, b = {3};
    trt::write_shard(out + "/train_000000.bin", a.data(), 2, 2);
    trt::write_shard(out + "/train_000001.bin", b.data(), 1, 2);
    EXPECT_EQ(all_tokens(TokenDataset::open(out + "/train_*.bin", 10)),
              (std::vector<int32_t>{1, 2, 3}));
}

TEST(PrepareCommit, AForeignOrNewerManifestIsRefused) {
    const std::string out = fresh_dir();
    const std::vector<uint32_t> a = {1, 2};
    trt::write_shard(out + "/train.bin", a.data(), 2, 2);
    write_text(out + "/prepare.json", R"({"name": "my own notes"})");
    expect_error([&] { TokenDataset::open(out + "/train.bin", 10); }, Status::Format,
                 {out + "/prepare.json", "not a trainrt prepare manifest"});
    write_text(out + "/prepare.json", R"({"format": "trainrt-prepare", "version": 2})");
    expect_error([&] { TokenDataset::open(out + "/train.bin", 10); }, Status::Format,
                 {"version 2", "newer trainrt"});
}

// prepare.json names the tokenizer (kind, digest, vocabulary, the path given); a manifest
// written before it did still reads (the tokenizer unknown); a malformed one is refused.
TEST(PrepareCommit, TheManifestNamesTheTokenizerAndOldManifestsStillRead) {
    const std::string dir = fresh_dir();
    write_text(dir + "/in.txt", "hello hello llama\nhe said hello\n");
    trt::prepare_bytes(dir + "/in.txt", dir + "/bytes", 0.1);
    std::optional<trt::ShardManifest> m = trt::read_shard_manifest(dir + "/bytes");
    ASSERT_TRUE(m && m->tokenizer);
    EXPECT_EQ(m->tokenizer->kind, "bytes");
    EXPECT_EQ(m->tokenizer->digest, trt::tok::bytes_identity().digest);
    EXPECT_EQ(m->tokenizer->vocab_size, 256);
    EXPECT_EQ(m->tokenizer->source, "");

    write_text(dir + "/tokenizer.json", synthetic::tokenizer_json());
    write_text(dir + "/tokenizer_config.json", R"({"eos_token": "<|end|>"})");
    trt::PrepareTextOptions o;
    o.tokenizer = dir + "/tokenizer.json";
    trt::prepare_text({dir + "/in.txt"}, dir + "/bpe", o);
    m = trt::read_shard_manifest(dir + "/bpe");
    ASSERT_TRUE(m && m->tokenizer);
    const trt::tok::TokenizerIdentity want =
        trt::tok::load_tokenizer_identity(dir + "/tokenizer.json", "test");
    EXPECT_EQ(m->tokenizer->kind, "hf-bpe");
    EXPECT_EQ(m->tokenizer->digest, want.digest);
    EXPECT_EQ(m->tokenizer->vocab_size, 263);
    EXPECT_EQ(m->tokenizer->source, dir + "/tokenizer.json");
    // Written and read back as it was.
    trt::write_shard_manifest(dir + "/bpe", *m);
    const std::optional<trt::ShardManifest> again = trt::read_shard_manifest(dir + "/bpe");
    ASSERT_TRUE(again && again->tokenizer);
    EXPECT_EQ(again->tokenizer->digest, want.digest);
    EXPECT_EQ(again->tokenizer->source, dir + "/tokenizer.json");
    EXPECT_EQ(again->shards.size(), m->shards.size());

    // A manifest of an earlier prepare: no "tokenizer"; it reads, the shards load.
    const std::string old = slurp(dir + "/bytes/prepare.json");
    const size_t at = old.find("  \"tokenizer\"");
    ASSERT_NE(at, std::string::npos);
    write_text(dir + "/bytes/prepare.json", old.substr(0, at) + old.substr(old.find('\n', at) + 1));
    m = trt::read_shard_manifest(dir + "/bytes");
    ASSERT_TRUE(m.has_value());
    EXPECT_FALSE(m->tokenizer.has_value());
    EXPECT_EQ(TokenDataset::open(dir + "/bytes/train.bin", 256).num_shards(), 1u);

    // A tokenizer field this version cannot read is refused by name.
    std::string bad = old;
    bad.replace(bad.find("sha256:"), 7, "md5:");
    write_text(dir + "/bytes/prepare.json", bad);
    expect_error([&] { trt::read_shard_manifest(dir + "/bytes"); }, Status::Format,
                 {dir + "/bytes/prepare.json", "\"tokenizer\"", "\"digest\""});
}

// Two prepares into one folder: the one that starts second is refused at once, naming the
// folder and the run holding it, and the first one's shards are its own.
TEST(PrepareCommit, ASecondPrepareIntoTheSameFolderIsRefused) {
    const std::string dir = fresh_dir(), out = dir + "/out";
    write_text(dir + "/tokenizer.json", synthetic::tokenizer_json());
    write_text(dir + "/tokenizer_config.json", R"({"eos_token": "<|end|>"})");
    write_text(dir + "/a.txt", "hello hello llama\nhe said hello\n");
    write_text(dir + "/b.txt", std::string(500, 'z'));

    std::mutex m;
    std::condition_variable cv;
    bool started = false, go_on = false;
    trt::PrepareTextOptions o;
    o.tokenizer = dir + "/tokenizer.json";
    o.threads = 1;
    o.progress = [&](int64_t, int64_t) {
        std::unique_lock<std::mutex> lock(m);
        started = true;
        cv.notify_all();
        cv.wait(lock, [&] { return go_on; });
        return true;
    };
    trt::PrepareTextResult first;
    std::string first_error;
    std::thread t([&] {
        try {
            first = trt::prepare_text({dir + "/a.txt"}, out, o);
        } catch (const std::exception& e) {
            first_error = e.what();
        }
    });
    {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return started; });
    }
    expect_error([&] { trt::prepare_bytes(dir + "/b.txt", out, 0.0); }, Status::Busy,
                 {"prepare out_dir '" + out + "' is in use by another run (pid " +
                      std::to_string(::getpid()),
                  "trainrt.lock", "mix their shards"});
    trt::PrepareTextOptions o2 = o;
    o2.progress = nullptr;
    expect_error([&] { trt::prepare_text({dir + "/b.txt"}, out, o2); }, Status::Busy,
                 {"is in use by another run"});
    {
        std::lock_guard<std::mutex> lock(m);
        go_on = true;
    }
    cv.notify_all();
    t.join();
    ASSERT_EQ(first_error, "");
    const TokenDataset ds = TokenDataset::open(out + "/train.bin", 1 << 16);
    EXPECT_EQ(ds.total_tokens(), first.train_tokens);
    EXPECT_FALSE(fs::exists(out + "/trainrt.lock"));
}
