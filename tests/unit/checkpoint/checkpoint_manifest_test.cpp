// MANIFEST.sha256 verification: every kind of damage is refused as "corrupt checkpoint",
// naming the file, before any output buffer is touched.
#include "checkpoint/checkpoint.h"
#include "checkpoint_test_util.h"
#include "io/fs_util.h"

using namespace trt;
using namespace ckpt_test;

namespace {

struct Fixture {
    std::string root = fresh_dir();
    Model model;
    std::string dir = root + "/step_00000005";
    Fixture() {
        write_checkpoint(dir, model.table, model.params.data(), model.m.data(), model.v.data(),
                         sample_state());
    }
    // read_checkpoint and read_checkpoint_state both refuse with Format; returns the message.
    std::string refused() {
        std::vector<float> p(model.table.total(), 7.0f), m(p), v(p);
        const std::string msg = error_of(
            [&] { read_checkpoint(dir, model.table, p.data(), m.data(), v.data()); }, Status::Format);
        EXPECT_EQ(p, std::vector<float>(p.size(), 7.0f));
        EXPECT_EQ(m, std::vector<float>(m.size(), 7.0f));
        EXPECT_EQ(error_of([&] { read_checkpoint_state(dir); }, Status::Format), msg);
        EXPECT_HAS(msg, "corrupt checkpoint '" + dir + "': ");
        return msg;
    }
};

void flip_byte(const std::string& path, size_t at) {
    std::string s = slurp(path);
    ASSERT_LT(at, s.size());
    s[at] = static_cast<char>(s[at] ^ 0x01);
    spit(path, s);
}

}  // namespace

TEST(CheckpointManifest, FlippedByteInEachFileIsNamed) {
    for (const char* f : {"model.safetensors", "config.json", "optimizer.safetensors", "state.json"}) {
        for (bool at_end : {false, true}) {
            Fixture fx;
            const std::string path = fx.dir + "/" + f;
            flip_byte(path, at_end ? slurp(path).size() - 1 : 10);
            const std::string msg = fx.refused();
            EXPECT_HAS(msg, std::string("': ") + f + " has SHA-256 ");
            EXPECT_HAS(msg, "MANIFEST.sha256 records");
        }
    }
}

TEST(CheckpointManifest, DamagedManifestIsRefused) {
    Fixture fx;
    const std::string man = fx.dir + "/MANIFEST.sha256";
    const std::string orig = slurp(man);
    // A changed hex digit: a mismatch for the file on that line.
    std::string s = orig;
    s[0] = s[0] == '0' ? '1' : '0';
    spit(man, s);
    EXPECT_HAS(fx.refused(), "config.json has SHA-256");
    const struct {
        std::string text;
        const char* needle;
    } cases[] = {
        {"G" + orig.substr(1), "MANIFEST.sha256 line 1 is malformed"},
        {orig.substr(0, orig.size() - 1), "does not end with a newline"},
        {orig + "\n", "line 5 is malformed"},
        {orig + orig.substr(0, orig.find('\n') + 1), "lists config.json twice"},
        {orig + std::string(64, 'a') + "  ../escape\n", "line 5 is malformed"},
        {orig + std::string(64, 'a') + " *binary\n", "line 5 is malformed"},
        {orig + std::string(64, 'A') + "  x\n", "line 5 is malformed"},
    };
    for (const auto& c : cases) {
        spit(man, c.text);
        EXPECT_HAS(fx.refused(), c.needle);
    }
}

TEST(CheckpointManifest, MissingFilesAreNamed) {
    {
        Fixture fx;
        remove_tree(fx.dir + "/optimizer.safetensors");
        EXPECT_HAS(fx.refused(), "optimizer.safetensors is listed in MANIFEST.sha256 but missing");
    }
    {
        Fixture fx;
        remove_tree(fx.dir + "/MANIFEST.sha256");
        EXPECT_HAS(fx.refused(), "MANIFEST.sha256 is missing");
    }
    {
        // Listed nowhere and absent: the manifest alone is consistent, the checkpoint is not.
        Fixture fx;
        remove_tree(fx.dir + "/state.json");
        const std::string man = slurp(fx.dir + "/MANIFEST.sha256");
        // state.json sorts last: drop the manifest's last line.
        spit(fx.dir + "/MANIFEST.sha256", man.substr(0, man.find_last_of('\n', man.size() - 2) + 1));
        EXPECT_HAS(fx.refused(), "state.json is missing");
    }
}

TEST(CheckpointManifest, UnlistedFileIsNamedHiddenAndDirsIgnored) {
    Fixture fx;
    spit(fx.dir + "/.nfs000123", "hidden files are ignored");
    make_dirs(fx.dir + "/subdir");
    std::vector<float> p(fx.model.table.total());
    read_checkpoint(fx.dir, fx.model.table, p.data(), nullptr, nullptr);
    spit(fx.dir + "/notes.txt", "x");
    EXPECT_HAS(fx.refused(), "notes.txt is not listed in MANIFEST.sha256");
}

TEST(CheckpointManifest, ListedEntryThatIsADirectoryRefused) {
    Fixture fx;
    remove_tree(fx.dir + "/state.json");
    make_dirs(fx.dir + "/state.json");
    EXPECT_HAS(fx.refused(), "state.json is not a regular file");
}
