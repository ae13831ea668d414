// Named outputs (core/output_claim.h): done with the same keys, refused with
// other keys naming the key, both values and the file, replaced only with
// overwrite; one writer at a time; the name given, with the extension
// appended only when missing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/output_claim.h"
#include "test_fs.h"

namespace vt {
namespace {

namespace fs = std::filesystem;

const OutputFlags kFlags{"sample", "out=", "overwrite=true"};

TEST(OutputClaim, SameKeysAreDoneOtherKeysRefusedUnlessOverwrite) {
  vt_test::TmpDir tmp;
  const std::string out = tmp.file("s.npz");
  const OutputKeys a = {{"seed", "0"}, {"steps", "50"}}, b = {{"seed", "1"}, {"steps", "50"}};
  {
    OutputClaim c(kFlags, out);
    EXPECT_FALSE(c.check(a, false));  // nothing there yet
    tmp.write("s.npz", "first");
    c.record(a, {{"ckpt", "/x"}});
    EXPECT_EQ(c.record_path(), out + ".manifest.json");
  }
  OutputClaim c(kFlags, out);
  EXPECT_TRUE(c.check(a, false));
  const std::string e = vt_test::error_of([&] { c.check(b, false); });
  EXPECT_EQ(e, "sample: '" + out + "' was made with seed = 0; this run has seed = 1: rerun with that run's "
               "arguments (then it is done), give another out=, or overwrite=true to replace it");
  EXPECT_THROW(c.check(b, false), OutputDiffers);
  // A key the record has and this run does not (or the reverse) differs too.
  EXPECT_NE(vt_test::error_of([&] { c.check({{"seed", "0"}}, false); }).find("steps = 50; this run has steps = (none)"),
            std::string::npos);
  EXPECT_EQ(vt_test::read_text(out), "first");  // nothing touched by a refusal
  // overwrite: to be written again; the old record goes first.
  EXPECT_FALSE(c.check(b, true));
  EXPECT_FALSE(fs::exists(c.record_path()));
}

// An output changed after it was recorded (cut short, another file copied
// over it) is not done: refused naming it and both stamps, unless overwrite.
TEST(OutputClaim, AnOutputChangedAfterItsRecordIsNotDone) {
  vt_test::TmpDir tmp;
  const std::string out = tmp.write("s.npz", "the samples");
  const OutputKeys a = {{"seed", "0"}};
  OutputClaim c(kFlags, out);
  c.record(a);
  EXPECT_TRUE(c.check(a, false));
  tmp.write("s.npz", "cut");  // another size
  const std::string e = vt_test::error_of([&] { c.check(a, false); });
  EXPECT_NE(e.find("sample: '" + out + "' was changed after it was written (it holds 3 bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("recorded 11 bytes"), std::string::npos) << e;
  EXPECT_EQ(vt_test::read_text(out), "cut");  // a refusal touches nothing
  EXPECT_FALSE(c.check(a, true));             // overwrite: to be made again
}

TEST(OutputClaim, AnOutputWithoutARecordIsRefused) {
  vt_test::TmpDir tmp;
  const std::string out = tmp.write("ref.npz", "made elsewhere");
  OutputClaim c({"veval stats", "--out", "--overwrite true"}, out);
  EXPECT_EQ(vt_test::error_of([&] { c.check({{"k", "v"}}, false); }),
            "veval stats: '" + out + "' exists and records nothing of what made it (no '" + out +
                ".manifest.json'): give another --out, or --overwrite true to replace it");
  EXPECT_FALSE(c.check({{"k", "v"}}, true));
  // A record whose output is gone is dropped.
  c.record({{"k", "v"}});
  fs::remove(out);
  EXPECT_FALSE(c.check({{"k", "v"}}, false));
  EXPECT_FALSE(fs::exists(c.record_path()));
}

TEST(OutputClaim, OneWriterAtATime) {
  vt_test::TmpDir tmp;
  const std::string out = tmp.file("s.npz");
  auto first = std::make_unique<OutputClaim>(kFlags, out);
  const std::string e = vt_test::error_of([&] { OutputClaim second(kFlags, out); });
  EXPECT_NE(e.find("sample: '" + out + "' is being written by another process (pid "), std::string::npos) << e;
  EXPECT_NE(e.find("give another out="), std::string::npos) << e;
  first.reset();
  EXPECT_NO_THROW(OutputClaim again(kFlags, out));
  EXPECT_TRUE(fs::exists(tmp.file(".s.npz.lock")));  // hidden, beside the output
}

TEST(OutputClaim, NamesGetTheExtensionOnlyWhenMissing) {
  vt_test::TmpDir tmp;
  EXPECT_EQ(output_file_name("ref", ".npz", "stats"), "ref.npz");
  EXPECT_EQ(output_file_name("ref.npz", ".npz", "stats"), "ref.npz");
  EXPECT_EQ(output_file_name("ref.npz.bak", ".npz", "stats"), "ref.npz.bak.npz");
  EXPECT_EQ(output_file_name("refs/", ".npz", "stats"), "refs/stats.npz");
  EXPECT_EQ(output_file_name(tmp.path(), ".npz", "stats"), tmp.path() + "/stats.npz");
  EXPECT_THROW(output_file_name("", ".npz", "stats"), std::invalid_argument);
}

}  // namespace
}  // namespace vt
