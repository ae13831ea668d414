#include "data_pipeline/jpeg_region.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include <jpeglib.h>

#include "data_pipeline/decode.h"

namespace vt {

namespace {

// libjpeg's default error_exit calls exit(); this one jumps back to the
// decode with the formatted message. Warnings are counted, not printed.
struct ErrorMgr {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr c) {
  ErrorMgr* e = reinterpret_cast<ErrorMgr*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

void on_message(j_common_ptr c, int level) {
  if (level < 0) ++c->err->num_warnings;
}

// One decompressor per thread, as decode.cpp keeps one TurboJPEG handle:
// creating one per image costs more than a small region's decode.
struct Decompressor {
  jpeg_decompress_struct cinfo{};
  ErrorMgr err{};
  bool ok = false;
  Decompressor() {
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = on_error;
    err.pub.emit_message = on_message;
    if (setjmp(err.jump)) return;  // out of memory: ok stays false
    jpeg_create_decompress(&cinfo);
    ok = true;
  }
  ~Decompressor() {
    if (ok) jpeg_destroy_decompress(&cinfo);
  }
};

Decompressor& thread_decompressor() {
  thread_local Decompressor d;
  if (!d.ok) throw std::runtime_error("decode_jpeg_region: jpeg_create_decompress failed");
  return d;
}

bool ends_with_eoi(const uint8_t* data, size_t size) {
  return size >= 2 && data[size - 2] == 0xFF && data[size - 1] == 0xD9;
}

}  // namespace

bool decode_jpeg_region(const uint8_t* data, size_t size, const std::string& name, int num, int den, int x0,
                        int y0, int x1, int y1, JpegRegion* out) {
  if (!ends_with_eoi(data, size)) return false;
  Decompressor& d = thread_decompressor();
  jpeg_decompress_struct* ci = &d.cinfo;
  // longjmp lands in this frame, so no destructor is skipped: every object
  // with one is declared before setjmp.
  std::vector<JSAMPROW> rows;
  int status = 0;  // 0 decoded, 1 not taken, 2 bad region
  // Returns the decompressor to its start state however this function ends
  // (jpeg_abort_decompress is harmless when it is already there).
  struct AbortOnExit {
    jpeg_decompress_struct* ci;
    ~AbortOnExit() { jpeg_abort_decompress(ci); }
  } abort_on_exit{ci};
  if (setjmp(d.err.jump)) throw CorruptImage("cannot decode '" + name + "': " + d.err.message);
  d.err.pub.num_warnings = 0;
  jpeg_mem_src(ci, data, static_cast<unsigned long>(size));
  jpeg_read_header(ci, TRUE);
  const J_COLOR_SPACE cs = ci->jpeg_color_space;
  if (cs != JCS_YCbCr && cs != JCS_RGB && cs != JCS_GRAYSCALE) {
    status = 1;
  } else {
    check_pixel_limit(ci->image_width, ci->image_height, name);
    ci->out_color_space = JCS_EXT_RGB;
    ci->scale_num = static_cast<unsigned>(num);
    ci->scale_denom = static_cast<unsigned>(den);
    jpeg_calc_output_dimensions(ci);
    out->full_width = static_cast<int>(ci->image_width);
    out->full_height = static_cast<int>(ci->image_height);
    out->scaled_width = static_cast<int>(ci->output_width);
    out->scaled_height = static_cast<int>(ci->output_height);
    if (!(0 <= x0 && x0 < x1 && x1 <= out->scaled_width && 0 <= y0 && y0 < y1 && y1 <= out->scaled_height))
      status = 2;
  }
  if (status != 0) {
    if (status == 1) return false;
    throw std::invalid_argument("decode_jpeg_region: region [" + std::to_string(x0) + ", " + std::to_string(x1) +
                                ") x [" + std::to_string(y0) + ", " + std::to_string(y1) + ") outside the " +
                                std::to_string(out->scaled_width) + " x " + std::to_string(out->scaled_height) +
                                " scaled image of '" + name + "'");
  }
  const int rx0 = std::max(0, x0 - kRegionMargin), rx1 = std::min(out->scaled_width, x1 + kRegionMargin);
  const int ry0 = std::max(0, y0 - kRegionMargin), ry1 = std::min(out->scaled_height, y1 + kRegionMargin);
  jpeg_start_decompress(ci);
  JDIMENSION xoff = static_cast<JDIMENSION>(rx0), width = static_cast<JDIMENSION>(rx1 - rx0);
  jpeg_crop_scanline(ci, &xoff, &width);  // xoff moves left to an iMCU boundary, width grows to match
  out->x = static_cast<int>(xoff);
  out->y = ry0;
  out->rgb.create(ry1 - ry0, static_cast<int>(width), CV_8UC3);
  rows.resize(static_cast<size_t>(ry1 - ry0));
  for (int r = 0; r < ry1 - ry0; ++r) rows[static_cast<size_t>(r)] = out->rgb.ptr<uint8_t>(r);
  // One skip from row 0 starts on a row-group boundary (libjpeg-turbo
  // issue #915 concerns skips that do not).
  if (ry0 > 0) jpeg_skip_scanlines(ci, static_cast<JDIMENSION>(ry0));
  while (ci->output_scanline < static_cast<JDIMENSION>(ry1)) {
    const JDIMENSION done = static_cast<JDIMENSION>(ci->output_scanline) - static_cast<JDIMENSION>(ry0);
    // A memory source never suspends (past the data it feeds a fake EOI), so
    // no progress means a broken decoder state, not "try again".
    if (jpeg_read_scanlines(ci, rows.data() + done, static_cast<JDIMENSION>(ry1) - ci->output_scanline) == 0)
      throw CorruptImage("cannot decode '" + name + "': libjpeg returned no scanlines");
  }
  // The rows below are never decoded: AbortOnExit ends the decompression
  // (jpeg_finish_decompress would require them).
  return true;
}

}  // namespace vt
