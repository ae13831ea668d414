#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/progress.h"
#include "test_fs.h"

using namespace vt;
using vt_test::TmpDir;

namespace {
std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}
}  // namespace

TEST(Metrics, JsonLinesParseBackAndAppend) {
  TmpDir d;
  const std::string p = d.file("metrics.jsonl");
  {
    MetricsWriter w(p);
    w.write(1, {{"loss", 2.5}, {"lr", 1e-4}});
    w.write(2, {{"loss", NAN}}, {{"phase", "eval"}});
    // Flushed per line: readable before the writer closes.
    EXPECT_EQ(lines_of(read_file(p)).size(), 2u);
  }
  {
    MetricsWriter w(p);  // a resumed run appends
    w.write(3, {{"top1", 81.25}});
  }
  auto lines = lines_of(read_file(p));
  ASSERT_EQ(lines.size(), 3u);
  auto j0 = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(j0["step"].get<int64_t>(), 1);
  EXPECT_EQ(j0["loss"].get<double>(), 2.5);
  EXPECT_EQ(j0["lr"].get<double>(), 1e-4);
  EXPECT_EQ(lines[0].find("{\"step\":1"), 0u);  // step first
  auto j1 = nlohmann::json::parse(lines[1]);
  EXPECT_TRUE(j1["loss"].is_null());
  EXPECT_EQ(j1["phase"].get<std::string>(), "eval");
  EXPECT_EQ(nlohmann::json::parse(lines[2])["top1"].get<double>(), 81.25);
  EXPECT_THROW(MetricsWriter(d.file("no/dir/m.jsonl")), std::runtime_error);
}

TEST(Progress, FormatDuration) {
  EXPECT_EQ(format_duration(0), "0:00:00");
  EXPECT_EQ(format_duration(83), "0:01:23");
  EXPECT_EQ(format_duration(3 * 3600 + 61.4), "3:01:01");
  EXPECT_EQ(format_duration(-1), "?");
}

namespace {
// Runs a ProgressBar writing to a temporary FILE and returns what it wrote.
template <typename F>
std::string capture(ProgressOptions opt, F body) {
  std::FILE* f = std::tmpfile();
  opt.out = f;
  body(opt);
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}
}  // namespace

TEST(Progress, NonTerminalPrintsPeriodicPlainLines) {
  double now = 100.0;
  ProgressOptions opt;
  opt.tty = 0;
  opt.interval_s = 10;
  opt.items_per_step = 256;
  opt.unit = "img";
  opt.clock = [&] { return now; };
  std::string out = capture(opt, [&](ProgressOptions o) {
    ProgressBar bar("train", 100, o);
    for (int s = 1; s <= 100; ++s) {
      now += 0.5;  // 0.5 s per step: 512 img/s
      bar.update(s, {{"loss", 2.0 + 1.0 / s}, {"lr", 5e-4}});
    }
    bar.finish();
  });
  EXPECT_EQ(out.find('\r'), std::string::npos);
  auto lines = lines_of(out);
  // Every 10 s = every 20 steps (20, 40, 60, 80, 100); finish() does not
  // repeat the step-100 line.
  ASSERT_EQ(lines.size(), 5u) << out;
  // At step 20: 10 s elapsed, 20*256/10 = 512 img/s, ETA = 80 steps * 0.5 s.
  EXPECT_EQ(lines[0], "train 20/100 (20.0%) | 512.0 img/s | loss 2.05 | lr 0.0005 | ETA 0:00:40");
  EXPECT_EQ(lines[3], "train 80/100 (80.0%) | 512.0 img/s | loss 2.0125 | lr 0.0005 | ETA 0:00:10");
  EXPECT_EQ(lines[4], "train 100/100 (100.0%) | 512.0 img/s | loss 2.01 | lr 0.0005 | ETA 0:00:00");
}

TEST(Progress, NonTerminalStepInterval) {
  double now = 0;
  ProgressOptions opt;
  opt.tty = 0;
  opt.interval_s = 1e9;
  opt.interval_steps = 3;
  opt.clock = [&] { return now; };
  std::string out = capture(opt, [&](ProgressOptions o) {
    ProgressBar bar("eval", 0, o);  // unknown total: no percentage or ETA
    for (int s = 1; s <= 7; ++s) {
      now += 2;
      bar.update(s);
    }
  });
  auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), 3u) << out;  // steps 3, 6 and the final 7
  EXPECT_EQ(lines[0], "eval 3 | 0.5 it/s");
  EXPECT_EQ(lines[2], "eval 7 | 0.5 it/s");
}

TEST(Progress, TerminalRedrawsOneLine) {
  double now = 0;
  ProgressOptions opt;
  opt.tty = 1;
  opt.clock = [&] { return now; };
  std::string out = capture(opt, [&](ProgressOptions o) {
    ProgressBar bar("x", 4, o);
    for (int s = 1; s <= 4; ++s) {
      now += 1;
      bar.update(s);
    }
    bar.finish();
  });
  EXPECT_EQ(std::count(out.begin(), out.end(), '\r'), 5);  // 4 redraws + final
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1);
  EXPECT_EQ(out.back(), '\n');
  EXPECT_NE(out.find("\rx 4/4 (100.0%) | 1.0 it/s | ETA 0:00:00\x1b[K\n"), std::string::npos) << out;
}

TEST(Log, WritesToFileSink) {
  TmpDir d;
  const std::string p = d.file("log.txt");
  log_to_file(p);
  log().info("hello {}", 42);
  log().warn("careful");
  log().flush();
  std::string s = read_file(p);
  EXPECT_NE(s.find("[info] hello 42"), std::string::npos) << s;
  EXPECT_NE(s.find("[warning] careful"), std::string::npos) << s;
  EXPECT_THROW(set_log_level("loud"), std::invalid_argument);
  set_log_level("error");
  log().info("hidden");
  log().flush();
  EXPECT_EQ(read_file(p).find("hidden"), std::string::npos);
  set_log_level("info");
  log_close_file();
  log().info("after close");
  EXPECT_EQ(read_file(p).find("after close"), std::string::npos);
}

// A resume from step 3 drops the later lines, keeps what it cannot read.
TEST(Metrics, DropAfterKeepsStepsUpToTheGivenOne) {
  TmpDir d;
  const std::string p = d.write("m.jsonl",
                                "{\"step\":1,\"loss\":2}\n{\"step\":3,\"top1\":5}\nnot json\n{\"step\":4}\n"
                                "{\"step\":10,\"loss\":1}\n{\"loss\":0}\n");
  EXPECT_EQ(drop_metrics_after(p, 3), 2);
  std::ifstream in(p);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{\"step\":1,\"loss\":2}\n{\"step\":3,\"top1\":5}\nnot json\n{\"loss\":0}\n");
  EXPECT_EQ(drop_metrics_after(p, 3), 0);
  EXPECT_EQ(drop_metrics_after(d.file("absent.jsonl"), 0), 0);
  EXPECT_FALSE(std::ifstream(d.file("absent.jsonl")).good());
}
