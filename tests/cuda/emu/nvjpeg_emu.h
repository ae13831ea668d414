// Test hooks of the nvJPEG stand-in (nvjpeg_emu.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

// Whether the emulated GPU has JPEG engines (nvjpegCreateEx accepts
// NVJPEG_BACKEND_HARDWARE). Default: present, unless the environment sets
// VT_EMU_NVJPEG_HARDWARE=0. Applies to handles created afterwards.
void vt_emu_nvjpeg_set_hardware_present(bool present);

// Images decoded by nvjpegDecodeBatched since the last reset, and calls of
// it that failed (a test counts what the decoder sent to nvJPEG).
// full_parses / header_parses: nvjpegJpegStreamParse / _ParseHeader
// calls; injected_failures: failed calls of them the VT_EMU_NVJPEG_FAIL
// rules caused (nvjpeg_emu.cpp); last_stream: the stream argument of the
// last nvjpegDecodeBatched call; states_reused_in_flight: calls refused
// because their decode state's previous decode was still queued.
struct VtEmuNvjpegCounts {
  long long batched_images = 0, batched_calls = 0, failed_calls = 0;
  long long full_parses = 0, header_parses = 0, injected_failures = 0;
  long long states_reused_in_flight = 0;
  const void* last_stream = nullptr;
};
VtEmuNvjpegCounts vt_emu_nvjpeg_counts();
void vt_emu_nvjpeg_reset_counts();

// The paddings the last nvjpegSet{Device,Pinned}MemoryPadding calls set.
void vt_emu_nvjpeg_last_paddings(size_t* device, size_t* pinned);

// The hash VT_EMU_NVJPEG_FAIL names files by: FNV-1a, 64 bits, of the
// file's bytes (printed as 16 hex digits).
uint64_t vt_emu_nvjpeg_content_hash(const unsigned char* data, size_t length);
