// core/npz_image_reader.h and core/npz_stream_writer.h: arr_0 streamed in
// batches gives the bytes the whole-array reader gives (stored and deflated
// members); an archive written in pieces reads back through libzip as the
// arrays it was written from; bad input names the file and the key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/npz.h"
#include "core/npz_image_reader.h"
#include "core/npz_stream_writer.h"
#include "test_fs.h"

using namespace vt;
using vt_test::error_of;
using vt_test::TmpDir;

namespace {

// [n, h, w, 3] bytes that differ from row to row and inside a row.
NpyArray images(int64_t n, int64_t h, int64_t w) {
  std::vector<uint8_t> v(static_cast<size_t>(n * h * w * 3));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>((i * 131 + i / 7) & 0xff);
  return NpyArray::from(v, {n, h, w, 3});
}

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST(Crc32, CheckValue) {
  // The CRC-32 check value of "123456789" (the zip / zlib polynomial).
  EXPECT_EQ(crc32_update(0, "123456789", 9), 0xCBF43926u);
  // Continuing a CRC over pieces equals one pass.
  EXPECT_EQ(crc32_update(crc32_update(0, "1234", 4), "56789", 5), 0xCBF43926u);
}

TEST(NpzImageReader, BatchesEqualTheWholeArrayStoredAndDeflated) {
  TmpDir d;
  const NpyArray a = images(7, 5, 4);
  for (bool deflate : {false, true}) {
    SCOPED_TRACE(deflate ? "deflated" : "stored");
    const std::string p = d.file(deflate ? "z.npz" : "s.npz");
    save_npz(p, {{"arr_0", a}, {"labels", NpyArray::from(std::vector<int64_t>(7, 1), {7})}}, deflate);
    NpzImageReader r(p);
    EXPECT_EQ(r.rows(), 7);
    EXPECT_EQ(r.height(), 5);
    EXPECT_EQ(r.width(), 4);
    EXPECT_EQ(r.row_bytes(), 60u);
    std::vector<uint8_t> all;
    int64_t got = 0;
    while (true) {
      const std::vector<uint8_t>& b = r.read_batch(3, &got);  // 3, 3, 1, then 0
      if (got == 0) break;
      EXPECT_EQ(b.size(), static_cast<size_t>(got) * 60);
      all.insert(all.end(), b.begin(), b.end());
    }
    EXPECT_EQ(all, a.bytes);
    // A rank's range: skip to row 4 (a seek when stored, inflate-and-drop when deflated).
    NpzImageReader s(p);
    s.skip_to(4);
    std::vector<uint8_t> tail(3 * 60);
    EXPECT_EQ(s.read(tail.data(), 10), 3);
    EXPECT_TRUE(std::equal(tail.begin(), tail.end(), a.bytes.begin() + 4 * 60));
    EXPECT_EQ(s.read(tail.data(), 10), 0);
  }
}

TEST(NpzImageReader, BadInputNamesTheFileAndKey) {
  TmpDir d;
  const std::string f32 = d.file("f32.npz");
  save_npz(f32, {{"arr_0", NpyArray::from(std::vector<float>(2 * 2 * 2 * 3), {2, 2, 2, 3})}});
  std::string e = error_of([&] { NpzImageReader r(f32); });
  EXPECT_NE(e.find(f32), std::string::npos) << e;
  EXPECT_NE(e.find("arr_0 has dtype <f4"), std::string::npos) << e;
  EXPECT_NE(e.find("expected uint8 [N, H, W, 3]"), std::string::npos) << e;

  const std::string gray = d.file("gray.npz");
  save_npz(gray, {{"arr_0", NpyArray::from(std::vector<uint8_t>(2 * 4 * 4), {2, 4, 4})}});
  e = error_of([&] { NpzImageReader r(gray); });
  EXPECT_NE(e.find(gray), std::string::npos) << e;
  EXPECT_NE(e.find("arr_0 has dtype |u1 and shape [2, 4, 4]"), std::string::npos) << e;

  const std::string nokey = d.file("nokey.npz");
  save_npz(nokey, {{"mu", NpyArray::from(std::vector<double>{1, 2}, {2})}});
  e = error_of([&] { NpzImageReader r(nokey); });
  EXPECT_NE(e.find("'" + nokey + "': no key 'arr_0' (members: mu.npy)"), std::string::npos) << e;

  // Cut short: the zip directory at the end is gone.
  const std::string good = d.file("good.npz");
  save_npz(good, {{"arr_0", images(4, 8, 8)}});
  const std::string bytes = file_bytes(good);
  const std::string cut = d.write("cut.npz", bytes.substr(0, bytes.size() / 2));
  e = error_of([&] { NpzImageReader r(cut); });
  EXPECT_NE(e.find(cut), std::string::npos) << e;
  EXPECT_NE(e.find("arr_0"), std::string::npos) << e;

  // A header that promises more rows than the member holds: "(4, 8, 8, 3)"
  // edited to "(5, 8, 8, 3)" in a stored member.
  std::string lie = bytes;
  const size_t at = lie.find("(4, 8, 8, 3)");
  ASSERT_NE(at, std::string::npos);
  lie[at + 1] = '5';
  const std::string shortp = d.write("short.npz", lie);
  e = error_of([&] { NpzImageReader r(shortp); });
  EXPECT_NE(e.find("'" + shortp + "': arr_0: shape [5, 8, 8, 3] needs 960 data bytes, the member holds 768"),
            std::string::npos)
      << e;

  // Damaged data (one byte flipped): the CRC check at the end of the member.
  std::string bad = bytes;
  bad[at + 200] ^= 0x55;
  const std::string badp = d.write("bad.npz", bad);
  e = error_of([&] {
    NpzImageReader r(badp);
    std::vector<uint8_t> all(4 * 8 * 8 * 3);
    r.read(all.data(), 4);
  });
  EXPECT_NE(e.find("'" + badp + "': arr_0: the image data fail the member's CRC check"), std::string::npos) << e;
}

TEST(NpzStreamWriter, PiecesReadBackAsTheArrays) {
  TmpDir d;
  const NpyArray a = images(6, 3, 5);
  const NpyArray labels = NpyArray::from(std::vector<int64_t>{5, 4, 3, 2, 1, 0}, {6});
  const std::string p = d.file("out.npz");
  {
    NpzStreamWriter w(p);
    w.begin("arr_0", "|u1", a.shape);
    EXPECT_EQ(w.data_written(), 0u);
    for (int64_t r = 0; r < 6; r += 4) {
      const int64_t n = std::min<int64_t>(4, 6 - r);
      w.write(a.bytes.data() + r * 45, static_cast<size_t>(n * 45));
    }
    EXPECT_EQ(w.data_written(), 270u);
    w.end();
    w.add("labels", labels);
    EXPECT_FALSE(std::filesystem::exists(p));  // only after commit
    w.commit();
  }
  const auto m = load_npz(p);  // libzip, CRC checked
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at("arr_0").shape, a.shape);
  EXPECT_EQ(m.at("arr_0").bytes, a.bytes);
  EXPECT_EQ(m.at("labels").as<int64_t>(), labels.as<int64_t>());
  // The streamed reader reads it too, and the same arrays give the same bytes.
  NpzImageReader r(p);
  std::vector<uint8_t> all(a.bytes.size());
  EXPECT_EQ(r.read(all.data(), 100), 6);
  EXPECT_EQ(all, a.bytes);
  const std::string q = d.file("again.npz");
  {
    NpzStreamWriter w(q);
    w.add("arr_0", a);
    w.add("labels", labels);
    w.commit();
  }
  EXPECT_EQ(file_bytes(p), file_bytes(q));
}

TEST(NpzStreamWriter, WrongByteCountsAreRefused) {
  TmpDir d;
  NpzStreamWriter w(d.file("x.npz"));
  w.begin("arr_0", "|u1", {2, 2, 2, 3});
  std::vector<uint8_t> v(30);
  EXPECT_NE(error_of([&] { w.write(v.data(), v.size()); }).find("given 30 data bytes, its shape holds 24"),
            std::string::npos);
  w.write(v.data(), 20);
  EXPECT_NE(error_of([&] { w.end(); }).find("got 20 data bytes, its shape needs 24"), std::string::npos);
}

TEST(NpzStreamWriter, ResumeCutsACopyCutShortAndFinishesTheSameBytes) {
  TmpDir d;
  const NpyArray a = images(5, 4, 4);  // 48 bytes a row
  const NpyArray labels = NpyArray::from(std::vector<int64_t>{1, 2, 3, 4, 5}, {5});
  const std::string whole = d.file("whole.npz");
  {
    NpzStreamWriter w(whole);
    w.add("arr_0", a);
    w.add("labels", labels);
    w.commit();
  }
  const std::string p = d.file("out.npz"), work = d.file("out.npz.part");
  {
    // Rows 0-2 copied, row 3 half copied when the process "dies".
    NpzStreamWriter w(p, work);
    w.keep_work_file();
    w.begin("arr_0", "|u1", a.shape);
    w.write(a.bytes.data(), 3 * 48 + 20);
    w.sync();
  }
  ASSERT_TRUE(std::filesystem::exists(work));
  {
    auto w = NpzStreamWriter::resume(p, work, "arr_0", "|u1", a.shape, 3 * 48);
    EXPECT_EQ(w->data_written(), 3u * 48);
    w->write(a.bytes.data() + 3 * 48, 2 * 48);
    w->end();
    w->add("labels", labels);
    w->commit();
  }
  EXPECT_FALSE(std::filesystem::exists(work));
  EXPECT_EQ(file_bytes(p), file_bytes(whole));
  EXPECT_EQ(load_npz(p).at("arr_0").bytes, a.bytes);

  // A work file of another array is refused, and kept.
  {
    NpzStreamWriter w(p, work);
    w.keep_work_file();
    w.begin("arr_0", "|u1", {4, 4, 4, 3});
  }
  const std::string e = error_of([&] { NpzStreamWriter::resume(p, work, "arr_0", "|u1", a.shape, 0); });
  EXPECT_NE(e.find("does not begin with the headers of 'arr_0' |u1 [5, 4, 4, 3]"), std::string::npos) << e;
  EXPECT_TRUE(std::filesystem::exists(work));
}
