#include "core/build_info.h"

// Written by CMake at configure time (cmake/vt_build_info.cmake); this file
// is its only reader.
#include "vt_build_info_values.h"

namespace vt {

const BuildInfo& build_info() {
  static const BuildInfo info{VT_BUILD_VERSION, VT_BUILD_COMMIT, VT_BUILD_TYPE,
                              VT_BUILD_CUDA,    VT_BUILD_CUDNN,  VT_BUILD_NCCL};
  return info;
}

std::string version_text(const std::string& program) {
  const BuildInfo& b = build_info();
  return program + " " + b.version + "\ncommit: " + b.commit + "\nbuild type: " + b.build_type + "\nCUDA: " + b.cuda +
         "\ncuDNN: " + b.cudnn + "\nNCCL: " + b.nccl + "\n";
}

bool is_version_flag(const std::string& arg) { return arg == "--version" || arg == "-V"; }

}  // namespace vt
