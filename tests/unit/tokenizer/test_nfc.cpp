// to_nfc (src/tokenizer/nfc.h) on the cases Unicode Standard Annex #15 names: composition,
// singletons, canonical reordering, blocking, exclusions, Hangul, starter pairs, and the
// ASCII boundaries the implementation cuts segments at. Whole-corpus agreement with
// JavaScript's normalize('NFC') is the tokenizer oracle test's (Qwen2.5, tests/tokenizer); the
// tables were checked on every code point when generated (scripts/gen-nfc-tables.mjs).
#include <gtest/gtest.h>

#include <string>

#include "tokenizer/nfc.h"

namespace {

using trt::tok::to_nfc;

TEST(Nfc, AsciiAndComposedTextStayAsTheyAre) {
    EXPECT_EQ(to_nfc(""), "");
    EXPECT_EQ(to_nfc("plain ASCII, 123\n\t"), "plain ASCII, 123\n\t");
    const std::string composed = "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80";
    EXPECT_EQ(to_nfc(composed), composed);
}

TEST(Nfc, ComposesAndMapsSingletons) {
    EXPECT_EQ(to_nfc("e\xCC\x81"), "\xC3\xA9");                   // e + U+0301 -> U+00E9
    EXPECT_EQ(to_nfc("x cafe\xCC\x81 y"), "x caf\xC3\xA9 y");      // inside ASCII text
    EXPECT_EQ(to_nfc("\xE2\x84\xAB"), "\xC3\x85");                 // U+212B ANGSTROM -> U+00C5
    EXPECT_EQ(to_nfc("\xE2\x84\xA6"), "\xCE\xA9");                 // U+2126 OHM -> U+03A9
    EXPECT_EQ(to_nfc("u\xCC\x88\xCC\x84"), "\xC7\x96");            // u + 0308 + 0304 -> U+01D6
}

TEST(Nfc, ReordersMarksByCombiningClass) {
    // U+1E0B (d dot above) + U+0323 (dot below, class 220 < 230): U+1E0D + U+0307.
    EXPECT_EQ(to_nfc("\xE1\xB8\x8B\xCC\xA3"), "\xE1\xB8\x8D\xCC\x87");
    // q has no composite: only the order changes.
    EXPECT_EQ(to_nfc("q\xCC\x87\xCC\xA3"), "q\xCC\xA3\xCC\x87");
    // Two marks of one class keep their order, and the second is blocked by the first:
    // a + U+0301 + U+0300 -> U+00E1 + U+0300.
    EXPECT_EQ(to_nfc("a\xCC\x81\xCC\x80"), "\xC3\xA1\xCC\x80");
}

TEST(Nfc, ExclusionsStayDecomposed) {
    EXPECT_EQ(to_nfc("\xE0\xA5\x98"), "\xE0\xA4\x95\xE0\xA4\xBC");  // U+0958 -> U+0915 U+093C
    EXPECT_EQ(to_nfc("\xCD\x84"), "\xCC\x88\xCC\x81");              // U+0344 -> U+0308 U+0301
}

TEST(Nfc, HangulByArithmetic) {
    EXPECT_EQ(to_nfc("\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80");              // L V -> U+AC00
    EXPECT_EQ(to_nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // L V T
    EXPECT_EQ(to_nfc("\xEA\xB0\x80\xE1\x86\xA8"), "\xEA\xB0\x81");              // LV T
    EXPECT_EQ(to_nfc("\xEA\xB0\x81"), "\xEA\xB0\x81");                          // LVT stays
}

TEST(Nfc, StarterPairsCompose) {
    EXPECT_EQ(to_nfc("\xE0\xAD\x87\xE0\xAC\xBE"), "\xE0\xAD\x8B");  // U+0B47 U+0B3E -> U+0B4B
}

TEST(Nfc, IsIdempotentAcrossSegmentBoundaries) {
    const std::string text = "A\xCC\x8A" "b e\xCC\x81\xCC\xA3x " "\xE1\x84\x80\xE1\x85\xA1" "ok"
                             "\xCC\x81" "z";
    const std::string once = to_nfc(text);
    EXPECT_EQ(to_nfc(once), once);
    EXPECT_EQ(once, "\xC3\x85" "b \xE1\xBA\xB9\xCC\x81x \xEA\xB0\x80" "o\xE1\xB8\xB1z");
}

// A long run of marks ("Zalgo" text) is ordered by a sort, not insertion (which took 40 s at
// 40,000 marks of each class): a + U+0301 (class 230) ×n + U+0316 (class 220) ×n orders as
// a + U+0316 ×n + U+0301 ×n, and the first U+0301 then composes with a (U+00E1).
TEST(Nfc, LongRunsOfMarks) {
    const int n = 40000;
    std::string acute, grave_below;
    for (int i = 0; i < n; i++) {
        acute += "\xCC\x81";        // U+0301
        grave_below += "\xCC\x96";  // U+0316
    }
    const std::string want = "\xC3\xA1" + grave_below + acute.substr(2);
    EXPECT_TRUE(to_nfc("a" + acute + grave_below) == want);
    EXPECT_TRUE(to_nfc("a" + grave_below + acute) == want);
    EXPECT_TRUE(to_nfc(want) == want);
}

}  // namespace
