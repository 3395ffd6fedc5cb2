// fs_util: atomic file replacement, mkdir -p, safe tree removal, directory listing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/fs_util.h"

using namespace trt;
namespace fs = std::filesystem;

namespace {

std::string fresh_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "fs_util" / info->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void touch(const std::string& path, const std::string& text = "x") {
    std::ofstream(path, std::ios::binary) << text;
}

Status status_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.status();
    }
    return Status::Ok;
}

}  // namespace

TEST(FsUtil, PathHelpers) {
    EXPECT_EQ(parent_dir("a/b/c"), "a/b");
    EXPECT_EQ(parent_dir("a/b/c/"), "a/b");
    EXPECT_EQ(parent_dir("c"), ".");
    EXPECT_EQ(parent_dir("/c"), "/");
    EXPECT_EQ(path_join("a", "b"), "a/b");
    EXPECT_EQ(path_join("a/", "b"), "a/b");
    EXPECT_EQ(path_join("", "b"), "b");
    EXPECT_EQ(strip_trailing_slashes("out//"), "out");
    EXPECT_EQ(strip_trailing_slashes("/"), "/");
}

TEST(FsUtil, WriteFileAtomicReplacesAndLeavesNoTmp) {
    const std::string dir = fresh_dir(), p = dir + "/f.txt";
    write_file_atomic(p, "one\n");
    EXPECT_EQ(slurp(p), "one\n");
    write_file_atomic(p, "two");
    EXPECT_EQ(slurp(p), "two");
    write_file_atomic(p, "");
    EXPECT_EQ(slurp(p), "");
    ASSERT_EQ(list_dir(dir).size(), 1u);  // no temporary file left
    EXPECT_EQ(list_dir(dir)[0].name, "f.txt");
}

TEST(FsUtil, AtomicFileAbandonedRemovesTmp) {
    const std::string dir = fresh_dir(), p = dir + "/f.bin";
    write_file_atomic(p, "old");
    std::string tmp;
    {
        AtomicFile f(p);
        f.write("new", 3);
        tmp = f.tmp_path();
        EXPECT_EQ(path_kind(tmp), PathKind::File);
    }  // no commit: as if an exception unwound
    EXPECT_EQ(path_kind(tmp), PathKind::Missing);
    EXPECT_EQ(slurp(p), "old");
    {
        AtomicFile f(p);  // closed and synced, then abandoned: removed too
        f.write("new", 3);
        f.close_synced();
        tmp = f.tmp_path();
    }
    EXPECT_EQ(path_kind(tmp), PathKind::Missing);
    EXPECT_EQ(list_dir(dir).size(), 1u);
}

// Each writer has a temporary name of its own (hidden, named after the file, this process's
// pid and random digits): two writers of one path never share or clobber a file, and the
// last commit wins whole.
TEST(FsUtil, AtomicFileTemporaryNamesAreUniquePerWriter) {
    const std::string dir = fresh_dir(), p = dir + "/f.bin";
    AtomicFile a(p), b(p);
    EXPECT_NE(a.tmp_path(), b.tmp_path());
    for (const AtomicFile* f : {&a, &b}) {
        const std::string name = fs::path(f->tmp_path()).filename().string();
        EXPECT_EQ(fs::path(f->tmp_path()).parent_path().string(), dir);
        EXPECT_EQ(name.rfind(".f.bin.tmp." + std::to_string(::getpid()) + ".", 0), 0u) << name;
        EXPECT_EQ(atomic_temp_target(name), "f.bin") << name;
    }
    a.write("from a", 6);
    b.write("b", 1);
    a.commit();
    EXPECT_EQ(slurp(p), "from a");
    b.commit();
    EXPECT_EQ(slurp(p), "b");
    EXPECT_EQ(list_dir(dir).size(), 1u);
}

// The fixed name of earlier versions (f.bin.tmp) may hold a planted link: it is never used,
// so the link's target is untouched; and a temporary name is created with O_EXCL |
// O_NOFOLLOW, so a link there would be refused rather than followed.
TEST(FsUtil, AtomicFileDoesNotFollowAPlantedLink) {
    const std::string dir = fresh_dir(), p = dir + "/f.bin";
    touch(dir + "/victim", "precious");
    fs::create_symlink(dir + "/victim", p + ".tmp");
    write_file_atomic(p, "data");
    EXPECT_EQ(slurp(p), "data");
    EXPECT_EQ(slurp(dir + "/victim"), "precious");
    EXPECT_TRUE(fs::is_symlink(p + ".tmp"));
}

TEST(FsUtil, AtomicTempTargetParsesOnlyThisNaming) {
    EXPECT_EQ(atomic_temp_target(".a.bin.tmp.123.0123456789abcdef"), "a.bin");
    EXPECT_EQ(atomic_temp_target(".x.tmp.1.ffffffffffffffff"), "x");
    EXPECT_EQ(atomic_temp_target(".prepare.json.tmp.99.00000000000000aa"), "prepare.json");
    for (const char* no : {"a.bin.tmp", "a.bin", ".a.bin.tmp", ".a.bin.tmp.123",
                           ".a.bin.tmp..0123456789abcdef", "a.bin.tmp.123.0123456789abcdef",
                           ".a.bin.tmp.12x.0123456789abcdef", ".a.bin.tmp.123.0123456789ABCDEF",
                           ".a.bin.tmp.123.0123456789abcde", "..tmp.1.0123456789abcdef", ""})
        EXPECT_EQ(atomic_temp_target(no), "") << no;
}

// A killed writer's temporary files (this naming and the fixed NAME.tmp of earlier versions)
// are removed for the names the caller owns; anything else stays, links and folders included.
TEST(FsUtil, RemoveOrphanTempsRemovesOnlyOwnedTemporaryFiles) {
    const std::string dir = fresh_dir();
    touch(dir + "/.a.bin.tmp.123.0123456789abcdef");
    touch(dir + "/a.bin.tmp");
    touch(dir + "/a.bin", "kept");
    touch(dir + "/.b.txt.tmp.123.0123456789abcdef");  // not owned
    touch(dir + "/b.txt.tmp");                        // not owned
    touch(dir + "/victim");
    fs::create_symlink(dir + "/victim", dir + "/.a.bin.tmp.7.0123456789abcdef");
    fs::create_directories(dir + "/.a.bin.tmp.8.0123456789abcdef");
    EXPECT_EQ(remove_orphan_temps(dir, [](const std::string& n) { return n == "a.bin"; }), 2u);
    std::vector<std::string> names;
    for (const DirEntry& e : list_dir(dir)) names.push_back(e.name);
    EXPECT_EQ(names, (std::vector<std::string>{
                         ".a.bin.tmp.7.0123456789abcdef", ".a.bin.tmp.8.0123456789abcdef",
                         ".b.txt.tmp.123.0123456789abcdef", "a.bin", "b.txt.tmp", "victim"}));
    EXPECT_EQ(slurp(dir + "/victim"), "x");
}

TEST(FsUtil, AtomicFileInMissingDirectoryIsIoError) {
    const std::string dir = fresh_dir();
    EXPECT_EQ(status_of([&] { write_file_atomic(dir + "/nope/f", "x"); }), Status::Io);
}

TEST(FsUtil, ReadSmallFileBounds) {
    const std::string dir = fresh_dir(), p = dir + "/f";
    touch(p, "hello");
    EXPECT_EQ(read_small_file(p, 5), "hello");
    EXPECT_EQ(status_of([&] { read_small_file(p, 4); }), Status::Format);
    EXPECT_EQ(status_of([&] { read_small_file(dir + "/missing", 4); }), Status::Io);
    EXPECT_EQ(status_of([&] { read_small_file(dir, 4); }), Status::Io);
}

TEST(FsUtil, MakeDirsAndPathKind) {
    const std::string dir = fresh_dir();
    make_dirs(dir + "/a/b/c");
    make_dirs(dir + "/a/b/c");  // existing is fine
    EXPECT_EQ(path_kind(dir + "/a/b/c"), PathKind::Directory);
    touch(dir + "/file");
    EXPECT_EQ(path_kind(dir + "/file"), PathKind::File);
    EXPECT_EQ(path_kind(dir + "/missing"), PathKind::Missing);
    EXPECT_EQ(path_kind(dir + "/file/below"), PathKind::Missing);
    EXPECT_EQ(status_of([&] { make_dirs(dir + "/file"); }), Status::Io);
    EXPECT_EQ(status_of([&] { make_dirs(dir + "/file/sub"); }), Status::Io);
}

TEST(FsUtil, RemoveTreeDoesNotFollowLinks) {
    const std::string dir = fresh_dir();
    make_dirs(dir + "/outside");
    touch(dir + "/outside/keep");
    make_dirs(dir + "/victim/sub");
    touch(dir + "/victim/sub/f");
    ASSERT_EQ(::symlink((dir + "/outside").c_str(), (dir + "/victim/link").c_str()), 0);
    EXPECT_EQ(path_kind(dir + "/victim/link"), PathKind::Other);
    remove_tree(dir + "/victim");
    EXPECT_EQ(path_kind(dir + "/victim"), PathKind::Missing);
    EXPECT_EQ(path_kind(dir + "/outside/keep"), PathKind::File);
    remove_tree(dir + "/victim");  // missing is fine
    for (const char* bad : {"", "/", ".", "..", "a/..", "a/."})
        EXPECT_EQ(status_of([&] { remove_tree(bad); }), Status::InvalidArgument) << bad;
}

TEST(FsUtil, RenameNoReplace) {
    const std::string dir = fresh_dir();
    make_dirs(dir + "/a");
    touch(dir + "/a/f");
    make_dirs(dir + "/b");  // an empty target directory: plain rename(2) would replace it
    EXPECT_EQ(status_of([&] { rename_no_replace(dir + "/a", dir + "/b"); }), Status::Io);
    EXPECT_EQ(path_kind(dir + "/a/f"), PathKind::File);
    rename_no_replace(dir + "/a", dir + "/c");
    EXPECT_EQ(path_kind(dir + "/c/f"), PathKind::File);
    EXPECT_EQ(path_kind(dir + "/a"), PathKind::Missing);
}

TEST(FsUtil, ListDirSortedWithKinds) {
    const std::string dir = fresh_dir();
    touch(dir + "/b");
    make_dirs(dir + "/a");
    touch(dir + "/.hidden");
    ASSERT_EQ(::symlink("b", (dir + "/c").c_str()), 0);
    const auto entries = list_dir(dir);
    ASSERT_EQ(entries.size(), 4u);
    EXPECT_EQ(entries[0].name, ".hidden");
    EXPECT_EQ(entries[1].name, "a");
    EXPECT_EQ(entries[1].kind, PathKind::Directory);
    EXPECT_EQ(entries[2].name, "b");
    EXPECT_EQ(entries[2].kind, PathKind::File);
    EXPECT_EQ(entries[3].name, "c");
    EXPECT_EQ(entries[3].kind, PathKind::Other);
    EXPECT_EQ(status_of([&] { list_dir(dir + "/missing"); }), Status::Io);
}
