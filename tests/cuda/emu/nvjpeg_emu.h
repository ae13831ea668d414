// Test hooks of the nvJPEG stand-in (nvjpeg_emu.cpp).
#pragma once

// Whether the emulated GPU has JPEG engines (nvjpegCreateEx accepts
// NVJPEG_BACKEND_HARDWARE). Default: present, unless the environment sets
// VT_EMU_NVJPEG_HARDWARE=0. Applies to handles created afterwards.
void vt_emu_nvjpeg_set_hardware_present(bool present);

// Images decoded by nvjpegDecodeBatched since the last reset, and calls of
// it that failed (a test counts what the decoder sent to nvJPEG).
struct VtEmuNvjpegCounts {
  long long batched_images = 0, batched_calls = 0, failed_calls = 0;
};
VtEmuNvjpegCounts vt_emu_nvjpeg_counts();
void vt_emu_nvjpeg_reset_counts();
