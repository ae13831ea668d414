// What the NCCL stand-in (nccl_emu.cpp) was asked, for tests of the order of
// the collectives: every ncclAllReduce call in issue order. Work runs at
// launch in the emulator, so the position of a call in this log relative to
// what the test did before and after (e.g. the end of a backward pass) is
// the point at which a real run would have queued it.
#pragma once
#include <cstddef>
#include <vector>

namespace vt_emu {

struct NcclCall {
  const void* recv;  // the buffer reduced in place (device pointer)
  size_t count;      // elements
};
std::vector<NcclCall>& nccl_calls();

}  // namespace vt_emu
