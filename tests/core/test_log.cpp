// log.txt holds every line logged so far, also when the process is killed
// (SIGKILL runs no destructor and no atexit handler): the file sink used to
// be flushed only at warnings and at exit, so a killed run's log was empty.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "core/log.h"
#include "test_fs.h"

TEST(Log, LinesReachTheFileBeforeASigkill) {
  vt_test::TmpDir d;
  const std::string path = d.file("log.txt");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    vt::log_to_file(path);
    vt::log().info("step 1 loss 6.9");
    vt::log().info("step 2 loss 6.8");
    raise(SIGKILL);
    _exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  EXPECT_NE(text.find("[info] step 1 loss 6.9\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[info] step 2 loss 6.8\n"), std::string::npos) << text;
}
