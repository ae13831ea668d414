#include "train/run_dir_lock.h"

#include <stdexcept>

namespace vt {

RunDirLock::RunDirLock(const std::string& dir) {
  const std::string path = dir + "/.lock";
  try {
    lock_ = FileLock(path);
  } catch (const FileLockBusy& e) {
    throw std::runtime_error("run directory '" + dir + "' is in use by another run (" + e.holder() +
                             "); two runs writing one directory would mix their checkpoints and metrics: "
                             "choose another name=, or wait for that run to end");
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot lock the run directory '" + dir + "': " + e.what());
  }
}

}  // namespace vt
