// core/text.h: ends_with, and count_noun's singular and plural (terminal output says "1 variant",
// never "1 variant(s)" or "1 variants").
#include <gtest/gtest.h>

#include <cstddef>

#include "core/text.h"

namespace trainlab {
namespace {

TEST(TextTest, CountNounIsSingularForExactlyOne) {
  EXPECT_EQ(count_noun(1, "step"), "1 step");
  EXPECT_EQ(count_noun(2, "step"), "2 steps");
  EXPECT_EQ(count_noun(0, "step"), "0 steps");
  EXPECT_EQ(count_noun(-1, "step"), "-1 steps");
  EXPECT_EQ(count_noun(1'000'000, "measured step"), "1000000 measured steps");
  EXPECT_EQ(count_noun(size_t{1}, "variant"), "1 variant");
  EXPECT_EQ(count_noun(size_t{3}, "variant"), "3 variants");
}

TEST(TextTest, CountNounTakesAnIrregularPlural) {
  EXPECT_EQ(count_noun(1, "match", "matches"), "1 match");
  EXPECT_EQ(count_noun(2, "match", "matches"), "2 matches");
}

TEST(TextTest, EndsWith) {
  EXPECT_TRUE(ends_with("trace.json.gz", ".json.gz"));
  EXPECT_FALSE(ends_with("gz", ".json.gz"));
  EXPECT_TRUE(ends_with("x", ""));
}

TEST(TextTest, OneLineEscapesNewlinesAndControlCharacters) {
  EXPECT_EQ(one_line("no such file: a\nb.json"), "no such file: a\\nb.json");
  EXPECT_EQ(one_line("x\r\x1b[31my\tz"), "x\\r\\x1b[31my z");
  EXPECT_EQ(one_line("caf\xc3\xa9 ok"), "caf\xc3\xa9 ok");  // UTF-8 bytes stay
  EXPECT_EQ(one_line("plain"), "plain");
}

}  // namespace
}  // namespace trainlab
