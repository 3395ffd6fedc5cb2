// DirLock: one writer per folder, a clear refusal naming the holder, and no stale lock after
// the holder dies (kill -9 included).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/error.h"
#include "io/dir_lock.h"

using namespace trt;
namespace fs = std::filesystem;

namespace {

std::string fresh_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "dir_lock" / info->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

// The Error a second lock on dir throws (fails the test if none).
Error refusal(const std::string& dir) {
    try {
        DirLock second(dir, "train.out_dir");
    } catch (const Error& e) {
        return e;
    }
    ADD_FAILURE() << "a second lock on " << dir << " was granted";
    return Error(Status::Ok, "");
}

}  // namespace

TEST(DirLock, SecondLockInTheSameProcessIsRefusedNamingTheHolder) {
    const std::string dir = fresh_dir() + "/out";  // created by the lock
    {
        DirLock first(dir, "train.out_dir");
        std::ifstream f(dir + "/trainrt.lock");
        const std::string content{std::istreambuf_iterator<char>(f), {}};
        EXPECT_EQ(content.rfind("pid " + std::to_string(::getpid()) + " on ", 0), 0u) << content;

        const Error e = refusal(dir);
        EXPECT_EQ(e.status(), Status::Busy);
        const std::string msg = e.what();
        EXPECT_NE(msg.find("train.out_dir '" + dir + "' is in use by another run (pid " +
                           std::to_string(::getpid())),
                  std::string::npos) << msg;
        EXPECT_NE(msg.find("trainrt.lock"), std::string::npos) << msg;
        EXPECT_NE(msg.find("another train.out_dir"), std::string::npos) << msg;
    }
    DirLock again(dir, "train.out_dir");  // released with the first
}

TEST(DirLock, AKilledHolderLeavesNoStaleLock) {
    const std::string dir = fresh_dir();
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        try {
            DirLock held(dir, "train.out_dir");
            (void)!::write(ready[1], "1", 1);
            for (;;) ::pause();
        } catch (...) {
            ::_exit(3);
        }
    }
    char byte = 0;
    ASSERT_EQ(::read(ready[0], &byte, 1), 1);
    const Error e = refusal(dir);  // another process holds it
    EXPECT_EQ(e.status(), Status::Busy);
    EXPECT_NE(std::string(e.what()).find("(pid " + std::to_string(child) + " on "),
              std::string::npos) << e.what();
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ::close(ready[0]);
    ::close(ready[1]);
    DirLock mine(dir, "train.out_dir");  // the kernel dropped the dead holder's lock
}

TEST(DirLock, AFileInTheWayIsAnIoError) {
    const std::string dir = fresh_dir();
    std::ofstream(dir + "/file") << "x";
    try {
        DirLock lock(dir + "/file", "train.out_dir");
        FAIL() << "locked a regular file as a folder";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Io);
        EXPECT_NE(std::string(e.what()).find("train.out_dir: cannot create directory"),
                  std::string::npos) << e.what();
    }
}

TEST(DirLock, ALinkedLockFileIsNotFollowed) {
    const std::string dir = fresh_dir();
    std::ofstream(dir + "/elsewhere") << "keep me";
    fs::create_directories(dir + "/out");
    fs::create_symlink(dir + "/elsewhere", dir + "/out/trainrt.lock");
    try {
        DirLock lock(dir + "/out", "train.out_dir");
        FAIL() << "followed a planted link";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Io);
    }
    std::ifstream f(dir + "/elsewhere");
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(f), {}), "keep me");
}

// LockFile::Remove (prepare's and export's folders, which are handed on): the lock file goes
// when the lock is released, the refusal says what the two runs would do to each other, and
// the folder can be locked again at once.
TEST(DirLock, ARemovedLockFileIsGoneAfterReleaseAndTheClashIsNamed) {
    const std::string dir = fresh_dir();
    {
        DirLock first(dir, "prepare out_dir", "Two prepares would mix their shards",
                      LockFile::Remove);
        EXPECT_TRUE(fs::exists(dir + "/trainrt.lock"));
        try {
            DirLock second(dir, "prepare out_dir", "Two prepares would mix their shards",
                           LockFile::Remove);
            ADD_FAILURE() << "a second lock on " << dir << " was granted";
        } catch (const Error& e) {
            EXPECT_EQ(e.status(), Status::Busy);
            const std::string msg = e.what();
            EXPECT_NE(msg.find("prepare out_dir '" + dir + "' is in use by another run (pid " +
                               std::to_string(::getpid())),
                      std::string::npos) << msg;
            EXPECT_NE(msg.find("Two prepares would mix their shards"), std::string::npos) << msg;
        }
        EXPECT_TRUE(fs::exists(dir + "/trainrt.lock"));  // the refused run removed nothing
    }
    EXPECT_FALSE(fs::exists(dir + "/trainrt.lock"));
    DirLock again(dir, "train.out_dir");
    EXPECT_TRUE(fs::exists(dir + "/trainrt.lock"));
}
