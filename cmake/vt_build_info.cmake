# --version (core/build_info.h): writes vt_build_info_values.h into the
# build tree at configure time and gives it to vt_core, whose
# core/build_info.cpp is its only reader. The git commit is read here, not at
# build time, so a commit never rebuilds anything; configure_file leaves the
# header untouched when nothing changed. Included after the subdirectories,
# where the cuDNN and NCCL searches (kernels/, train/) have run.
set(VT_BUILD_COMMIT "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${PROJECT_SOURCE_DIR} rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE _vt_commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _vt_git_rc)
  if(_vt_git_rc EQUAL 0 AND _vt_commit)
    set(VT_BUILD_COMMIT ${_vt_commit})
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${PROJECT_SOURCE_DIR} status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE _vt_changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_vt_changes)
      string(APPEND VT_BUILD_COMMIT "+changes")
    endif()
  endif()
endif()

# "MAJOR.MINOR.PATCH" from the #defines PREFIX_MAJOR/_MINOR/_PATCH of HEADER.
function(_vt_header_version out header prefix)
  set(_v "")
  foreach(part MAJOR MINOR PATCHLEVEL PATCH)
    if(EXISTS ${header})
      file(STRINGS ${header} _line REGEX "^#define ${prefix}_${part}[ \t]+[0-9]+")
      if(_line)
        string(REGEX REPLACE ".*[ \t]([0-9]+).*" "\\1" _n "${_line}")
        string(APPEND _v "${_n}.")
      endif()
    endif()
  endforeach()
  string(REGEX REPLACE "\\.$" "" _v "${_v}")
  set(${out} "${_v}" PARENT_SCOPE)
endfunction()

set(VT_BUILD_CUDA "none")
set(VT_BUILD_CUDNN "none")
set(VT_BUILD_NCCL "none")
if(VT_CUDA)
  set(VT_BUILD_CUDA "${CUDAToolkit_VERSION}")
  set(VT_BUILD_CUDNN "not found")
  if(NOT VT_CUDNN)
    set(VT_BUILD_CUDNN "off (VT_CUDNN=OFF)")
  elseif(VT_CUDNN_CONV_BUILT)
    set(_vt_cudnn_header ${VT_CUDNN_INCLUDE_DIR}/cudnn_version.h)  # cuDNN 8 and later
    if(NOT EXISTS ${_vt_cudnn_header})
      set(_vt_cudnn_header ${VT_CUDNN_INCLUDE_DIR}/cudnn.h)
    endif()
    _vt_header_version(_vt_cudnn ${_vt_cudnn_header} CUDNN)
    set(VT_BUILD_CUDNN "${_vt_cudnn}")
    if(NOT _vt_cudnn)
      set(VT_BUILD_CUDNN "found (version unknown)")
    endif()
  endif()
  set(VT_BUILD_NCCL "not found")
  if(VT_NCCL)
    _vt_header_version(_vt_nccl ${NCCL_INCLUDE_DIR}/nccl.h NCCL)
    set(VT_BUILD_NCCL "${_vt_nccl}")
    if(NOT _vt_nccl)
      set(VT_BUILD_NCCL "found (version unknown)")
    endif()
  endif()
endif()
set(VT_BUILD_TYPE "${CMAKE_BUILD_TYPE}")
if(NOT VT_BUILD_TYPE)
  set(VT_BUILD_TYPE "none")
endif()

configure_file(${PROJECT_SOURCE_DIR}/cmake/vt_build_info_values.h.in
               ${CMAKE_BINARY_DIR}/generated/vt_build_info_values.h @ONLY)
target_include_directories(vt_core PRIVATE ${CMAKE_BINARY_DIR}/generated)
message(STATUS "vtrain: --version: ${PROJECT_VERSION}, commit ${VT_BUILD_COMMIT}, ${VT_BUILD_TYPE}, CUDA ${VT_BUILD_CUDA}, "
               "cuDNN ${VT_BUILD_CUDNN}, NCCL ${VT_BUILD_NCCL}")
