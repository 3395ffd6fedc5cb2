// A run's folder of checkpoints: directory naming, the `latest` pointer, resolve, prune.
#include "checkpoint/checkpoint.h"
#include "checkpoint_test_util.h"
#include "io/fs_util.h"

using namespace trt;
using namespace ckpt_test;

namespace {

// A stand-in checkpoint: prune and resolve only look for the manifest.
void fake_checkpoint(const std::string& dir) {
    make_dirs(dir);
    spit(dir + "/MANIFEST.sha256", "");
}

std::vector<std::string> names_in(const std::string& dir) {
    std::vector<std::string> out;
    for (const DirEntry& e : list_dir(dir)) out.push_back(e.name);
    return out;
}

}  // namespace

TEST(CheckpointStore, DirectoryNames) {
    EXPECT_EQ(checkpoint_dir_name(0), "step_00000000");
    EXPECT_EQ(checkpoint_dir_name(1234), "step_00001234");
    EXPECT_EQ(checkpoint_dir_name(99999999), "step_99999999");
    EXPECT_EQ(checkpoint_dir_name(123456789), "step_123456789");
    error_of([] { checkpoint_dir_name(-1); }, Status::InvalidArgument);
}

TEST(CheckpointStore, LatestPointer) {
    const std::string out = fresh_dir();
    EXPECT_EQ(latest_checkpoint(out), "");
    fake_checkpoint(out + "/step_00000010");
    set_latest_checkpoint(out, "step_00000010");
    EXPECT_EQ(slurp(out + "/latest"), "step_00000010\n");
    EXPECT_EQ(latest_checkpoint(out), out + "/step_00000010");
    EXPECT_EQ(latest_checkpoint(out + "/"), out + "/step_00000010");
    EXPECT_EQ(path_kind(out + "/latest.tmp"), PathKind::Missing);

    for (const char* bad : {"", ".", "..", "../x", "a/b", "/abs", "x..y", "a\nb"})
        error_of([&] { set_latest_checkpoint(out, bad); }, Status::InvalidArgument);
    error_of([&] { set_latest_checkpoint(out, "step_00000099"); }, Status::InvalidArgument);
    EXPECT_EQ(slurp(out + "/latest"), "step_00000010\n");  // unchanged by the refusals

    for (const char* bad : {"../elsewhere\n", "step_00000010", "a/b\n", "\n", "x\ny\n"}) {
        spit(out + "/latest", bad);
        const std::string msg = error_of([&] { latest_checkpoint(out); }, Status::Format);
        EXPECT_HAS(msg, out + "/latest");
    }
}

TEST(CheckpointStore, Resolve) {
    const std::string out = fresh_dir();
    const std::string ck = out + "/step_00000003";
    fake_checkpoint(ck);
    EXPECT_EQ(resolve_checkpoint(ck), ck);
    EXPECT_EQ(resolve_checkpoint(ck + "/"), ck);

    std::string msg = error_of([&] { resolve_checkpoint(out); }, Status::Io);
    EXPECT_HAS(msg, "neither a checkpoint directory");
    set_latest_checkpoint(out, "step_00000003");
    EXPECT_EQ(resolve_checkpoint(out), ck);

    spit(out + "/latest", "step_00000004\n");  // names something that is not there
    msg = error_of([&] { resolve_checkpoint(out); }, Status::Format);
    EXPECT_HAS(msg, "names 'step_00000004'");
    make_dirs(out + "/step_00000004");  // there, but not a checkpoint
    error_of([&] { resolve_checkpoint(out); }, Status::Format);

    msg = error_of([&] { resolve_checkpoint(out + "/missing"); }, Status::Io);
    EXPECT_HAS(msg, "does not exist");
    spit(out + "/file", "x");
    error_of([&] { resolve_checkpoint(out + "/file"); }, Status::Io);
}

TEST(CheckpointStore, ResolveRealCheckpoint) {
    const std::string out = fresh_dir();
    const Model model;
    const std::string name = checkpoint_dir_name(42);
    write_checkpoint(out + "/" + name, model.table, model.params.data(), model.m.data(),
                     model.v.data(), sample_state());
    set_latest_checkpoint(out, name);
    EXPECT_EQ(read_checkpoint_state(resolve_checkpoint(out)).step, 1234);
}

TEST(CheckpointStore, PruneKeepsNewestAndLatestOnly) {
    const std::string out = fresh_dir();
    for (int s : {1, 2, 3, 4, 5}) fake_checkpoint(out + "/" + checkpoint_dir_name(s));
    fake_checkpoint(out + "/step_9");         // unpadded: ordered by number, not by name
    fake_checkpoint(out + "/step_10");
    make_dirs(out + "/step_00000007.tmp/x");  // crashed writer
    make_dirs(out + "/step_00000000");        // no manifest: not ours, left alone
    make_dirs(out + "/step_abc");
    make_dirs(out + "/other.tmp");
    spit(out + "/step_00000006", "a file");
    spit(out + "/metrics.jsonl", "{}\n");
    set_latest_checkpoint(out, checkpoint_dir_name(2));
    // Writers of `latest` killed before their rename (this version's name and the old one);
    // another file's temporary name is not ours to remove.
    spit(out + "/.latest.tmp.4242.0123456789abcdef", "step_00000001\n");
    spit(out + "/latest.tmp", "step_00000001\n");
    spit(out + "/.metrics.jsonl.tmp.4242.0123456789abcdef", "{}\n");

    prune_checkpoints(out, 3);
    EXPECT_EQ(names_in(out),
              (std::vector<std::string>{".metrics.jsonl.tmp.4242.0123456789abcdef", "latest",
                                        "metrics.jsonl", "other.tmp", "step_00000000",
                                        "step_00000002", "step_00000005", "step_00000006",
                                        "step_10", "step_9", "step_abc"}));
    EXPECT_EQ(slurp(out + "/metrics.jsonl"), "{}\n");

    prune_checkpoints(out, 1);
    EXPECT_EQ(path_kind(out + "/step_10"), PathKind::Directory);
    EXPECT_EQ(path_kind(out + "/step_00000002"), PathKind::Directory);  // latest survives
    EXPECT_EQ(path_kind(out + "/step_9"), PathKind::Missing);
    EXPECT_EQ(path_kind(out + "/step_00000005"), PathKind::Missing);
}

TEST(CheckpointStore, PruneZeroKeepsAllButRemovesTmp) {
    const std::string out = fresh_dir();
    for (int s : {1, 2, 3}) fake_checkpoint(out + "/" + checkpoint_dir_name(s));
    make_dirs(out + "/step_00000004.tmp");
    prune_checkpoints(out, 0);
    EXPECT_EQ(names_in(out), (std::vector<std::string>{"step_00000001", "step_00000002",
                                                       "step_00000003"}));
    error_of([&] { prune_checkpoints(out, -1); }, Status::InvalidArgument);
}

TEST(CheckpointStore, PruneStopsOnUnreadableLatest) {
    const std::string out = fresh_dir();
    for (int s : {1, 2, 3}) fake_checkpoint(out + "/" + checkpoint_dir_name(s));
    spit(out + "/latest", "../../etc\n");
    error_of([&] { prune_checkpoints(out, 1); }, Status::Format);
    EXPECT_EQ(names_in(out).size(), 4u);  // nothing removed
}
