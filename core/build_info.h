// What a program was built from, for `--version` (vtrain, dittrain, veval):
// the CMake project version, the git commit the build was configured at,
// the build type and the CUDA, cuDNN and NCCL versions the build found and
// uses ("none" in a CPU build, "not found" where a CUDA build lacks one).
//
// The values come from a header CMake writes at configure time
// (cmake/vt_build_info.cmake); only build_info.cpp includes it, so a new
// commit recompiles that one file after the next configure, never the rest.
// The commit is therefore the one of the last configure: a build made after
// later commits without reconfiguring names the older one.
#pragma once
#include <string>

namespace vt {

struct BuildInfo {
  std::string version;     // "0.1" (project(vtrain VERSION ...))
  std::string commit;      // 12 hex digits, "+changes" when the tree differed from it; "unknown" outside git
  std::string build_type;  // CMAKE_BUILD_TYPE: Release, Debug, RelWithDebInfo, ...
  std::string cuda;        // CUDA toolkit version, or "none" (VT_CUDA=OFF)
  std::string cudnn;       // cuDNN version, "not found", or "none"
  std::string nccl;        // NCCL version, "not found", or "none"
};

const BuildInfo& build_info();

// `PROGRAM --version`'s text, one "key: value" per line after the first:
//   vtrain 0.1
//   commit: 248be4aea31d
//   build type: Release
//   CUDA: none  ...
std::string version_text(const std::string& program);

// True when ARG asks for the version (--version, -V), as each program's
// first argument.
bool is_version_flag(const std::string& arg);

}  // namespace vt
