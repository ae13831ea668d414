# VT_SANITIZE: the whole tree (every library, program, test and benchmark)
# built with a sanitizer, on top of the normal build's options
# (scripts/sanitize.sh configures build-asan/ and build-tsan/ with it).
#   address  AddressSanitizer (with LeakSanitizer) + UndefinedBehaviorSanitizer;
#            undefined behaviour aborts at the first report instead of
#            printing and going on, so a test cannot pass over one.
#   thread   ThreadSanitizer.
# Only host C++ is instrumented. A CUDA build configures and builds as usual,
# its .cu objects uninstrumented: instrumenting their host side would take
# -Xcompiler=-fsanitize=... on the CUDA compile lines, running under ASan
# needs ASAN_OPTIONS=protect_shadow_gap=0 (the CUDA driver maps memory where
# ASan keeps its shadow gap), and ThreadSanitizer does not see the ordering
# the CUDA runtime's own threads and events give, so CUDA programs under
# TSan report races the driver rules out.
set(VT_SANITIZE "" CACHE STRING "Build everything with a sanitizer: address (ASan + UBSan) or thread (TSan); empty: none")
set_property(CACHE VT_SANITIZE PROPERTY STRINGS "" address thread)

if(VT_SANITIZE STREQUAL "")
  return()
elseif(VT_SANITIZE STREQUAL "address")
  set(_vt_sanitize_runtime -fsanitize=address -fsanitize=undefined)
  set(_vt_sanitize_flags ${_vt_sanitize_runtime} -fno-sanitize-recover=undefined)
elseif(VT_SANITIZE STREQUAL "thread")
  set(_vt_sanitize_runtime -fsanitize=thread)
  set(_vt_sanitize_flags ${_vt_sanitize_runtime})
else()
  message(FATAL_ERROR "VT_SANITIZE='${VT_SANITIZE}': expected address, thread or empty")
endif()
if(VT_FUZZ)
  message(FATAL_ERROR "VT_SANITIZE and VT_FUZZ: the fuzz build has its own sanitizers (scripts/fuzz.sh)")
endif()
# Frame pointers: full stacks in every report at no cost to the unwinder.
list(APPEND _vt_sanitize_flags -fno-omit-frame-pointer)
foreach(_flag IN LISTS _vt_sanitize_flags)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:${_flag}>)
endforeach()
# Executables link with the C++ compiler even when they hold CUDA objects
# (CMake prefers CXX as the linker language), which brings in the runtime.
foreach(_flag IN LISTS _vt_sanitize_runtime)
  add_link_options($<$<LINK_LANGUAGE:CXX>:${_flag}>)
endforeach()
message(STATUS "vtrain: VT_SANITIZE=${VT_SANITIZE} (host C++ only)")
