// The cut of a convolution's batch for cuDNN's tensor size limit
// (kernels/conv_cudnn_split.h) planned for the sizes the DiT pipeline runs,
// without running them: every convolution of the SD VAE (sd-vae-ft-ema's
// structure: block_out_channels [128, 256, 512, 512], 2 layers per block)
// in `dittrain sample` (decoder, 32x32 latents -> 256 px) at batch 256 and
// 128 and in `dittrain extract` (encoder, 256 px) at batch 256. The shapes
// are listed here from diffusers' Encoder / Decoder (autoencoders/vae.py),
// not read from vae/; for each, every chunk's tensors (x, y, the pad copy's
// buffer of Downsample2D's (0, 1, 0, 1) padding) must hold fewer than 2^31
// elements, computed here by closed form (chunk * C * H * W), the chunks
// must cover the batch, and their number must be the fewest that fit,
// ceil(N / floor((2^31 - 1) / largest per-image tensor)). Plus a channel
// slice of a concat buffer (the span counts the other channels), one image
// past the limit, and the chunk sizes themselves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/conv_cudnn_split.h"

namespace vt {
namespace {

constexpr int64_t kTwo31 = int64_t{1} << 31;

struct ConvShape {
  std::string name;
  int64_t c, h, w, o, k;  // x [N, c, h, w], kernel k x k, o output channels
  bool downsample = false;  // 3x3 stride 2, padding (0, 1, 0, 1); else stride 1, padding k / 2
};

Conv2dDesc desc_of(const ConvShape& s, int64_t n) {
  Conv2dDesc d{};
  d.n = n, d.c = s.c, d.h = s.h, d.w = s.w, d.o = s.o, d.kh = d.kw = s.k;
  d.sh = d.sw = s.downsample ? 2 : 1;
  d.ph = d.pw = s.downsample ? 0 : static_cast<int>(s.k / 2);
  d.oh = s.downsample ? (s.h + 1 - 3) / 2 + 1 : s.h;
  d.ow = s.downsample ? (s.w + 1 - 3) / 2 + 1 : s.w;
  d.dh = d.dw = 1, d.groups = 1, d.relu = false;
  const int64_t xs[4] = {s.c * s.h * s.w, s.h * s.w, s.w, 1}, ys[4] = {s.o * d.oh * d.ow, d.oh * d.ow, d.ow, 1};
  for (int i = 0; i < 4; ++i) d.x_strides[i] = xs[i], d.y_strides[i] = ys[i];
  return d;
}

// A ResnetBlock2D's convolutions at res x res: conv1, conv2, and the 1x1
// conv_shortcut when the channel count changes.
void add_resnet(std::vector<ConvShape>& v, const std::string& name, int64_t cin, int64_t cout, int64_t res) {
  v.push_back({name + ".conv1", cin, res, res, cout, 3});
  v.push_back({name + ".conv2", cout, res, res, cout, 3});
  if (cin != cout) v.push_back({name + ".conv_shortcut", cin, res, res, cout, 1});
}

// diffusers' Decoder from 32x32 latents: conv_in, the mid block's resnets,
// the up blocks (reversed channels, layers + 1 resnets each, an upsampler's
// conv after the nearest 2x but the last), conv_out; post_quant_conv.
std::vector<ConvShape> decoder_convs() {
  const int64_t ch[4] = {512, 512, 256, 128};
  std::vector<ConvShape> v = {{"post_quant_conv", 4, 32, 32, 4, 1}, {"conv_in", 4, 32, 32, 512, 3}};
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c) v.push_back({"mid_block.resnets.conv", 512, 32, 32, 512, 3});
  int64_t prev = 512, res = 32;
  for (int i = 0; i < 4; ++i) {
    const std::string p = "up_blocks." + std::to_string(i);
    for (int j = 0; j < 3; ++j) {
      const int64_t cin = j == 0 ? prev : ch[i];
      add_resnet(v, p + ".resnets." + std::to_string(j), cin, ch[i], res);
    }
    if (i < 3) {
      res *= 2;
      v.push_back({p + ".upsamplers.0.conv", ch[i], res, res, ch[i], 3});
    }
    prev = ch[i];
  }
  v.push_back({"conv_out", 128, 256, 256, 3, 3});
  return v;
}

// diffusers' Encoder at 256 px: conv_in, the down blocks (2 resnets, a
// Downsample2D but the last), the mid block's resnets, conv_out; quant_conv.
std::vector<ConvShape> encoder_convs() {
  const int64_t ch[4] = {128, 256, 512, 512};
  std::vector<ConvShape> v = {{"conv_in", 3, 256, 256, 128, 3}};
  int64_t prev = 128, res = 256;
  for (int i = 0; i < 4; ++i) {
    const std::string p = "down_blocks." + std::to_string(i);
    for (int j = 0; j < 2; ++j) {
      const int64_t cin = j == 0 ? prev : ch[i];
      add_resnet(v, p + ".resnets." + std::to_string(j), cin, ch[i], res);
    }
    if (i < 3) {
      v.push_back({p + ".downsamplers.0.conv", ch[i], res, res, ch[i], 3, true});
      res /= 2;
    }
    prev = ch[i];
  }
  for (int r = 0; r < 4; ++r) v.push_back({"mid_block.resnets.conv", 512, 32, 32, 512, 3});
  v.push_back({"conv_out", 512, 32, 32, 8, 3});
  v.push_back({"quant_conv", 8, 32, 32, 8, 1});
  return v;
}

// Per image, by closed form: x, y, and Downsample2D's pad buffer [C, 2 OH + 1, 2 OW + 1]
// (the rows / columns a 3x3 stride-2 output reads: 2 (OH - 1) + 3).
std::vector<int64_t> per_image(const ConvShape& s) {
  const int64_t oh = s.downsample ? s.h / 2 : s.h, ow = s.downsample ? s.w / 2 : s.w;
  std::vector<int64_t> v = {s.c * s.h * s.w, s.o * oh * ow};
  if (s.downsample) v.push_back(s.c * (2 * oh + 1) * (2 * ow + 1));
  return v;
}

// Plans every convolution at batch n; returns how many had to be cut.
int check_batch(const std::vector<ConvShape>& convs, int64_t n, const char* what) {
  int cut = 0;
  for (const ConvShape& s : convs) {
    SCOPED_TRACE(std::string(what) + " " + s.name + " at batch " + std::to_string(n));
    const std::vector<int64_t> sizes = per_image(s);
    const int64_t largest = *std::max_element(sizes.begin(), sizes.end());
    const std::vector<int64_t> chunks = cudnn_conv_chunks(n, cudnn_conv_max_images(desc_of(s, n)));
    int64_t total = 0;
    for (int64_t c : chunks) {
      total += c;
      for (int64_t e : sizes) EXPECT_LT(c * e, kTwo31) << "a chunk of " << c << " images";
    }
    EXPECT_EQ(total, n);
    const int64_t fit = (kTwo31 - 1) / largest;  // images per call at most
    EXPECT_EQ(static_cast<int64_t>(chunks.size()), (n + fit - 1) / fit);
    if (chunks.size() > 1) ++cut;
  }
  return cut;
}

TEST(CudnnConvSplit, SampleDecodeAtBatch256StaysUnderTheLimit) {
  const std::vector<ConvShape> convs = decoder_convs();
  // Meaningful: up_blocks.2's upsampler conv, [256, 256, 256, 256] unsplit, is 2^32 elements.
  EXPECT_EQ(int64_t{256} * 256 * 256 * 256, kTwo31 * 2);
  // Cut: the convolutions with a tensor of at least 2^23 per image (256 x
  // 2^23 = 2^31): up_blocks.1's upsampler conv (512 channels at 128 px),
  // up_blocks.2.resnets.0's conv1 and conv_shortcut (x 512 at 128 px),
  // up_blocks.2's upsampler conv (256 at 256 px), up_blocks.3's six resnet
  // convs and its conv_shortcut (256 or 128 at 256 px), conv_out (x 128 at
  // 256 px): 1 + 2 + 1 + 7 + 1.
  EXPECT_EQ(check_batch(convs, 256, "decoder"), 12);
}

TEST(CudnnConvSplit, SampleDecodeAtBatch128AndExtractAt256) {
  // Batch 128: exactly 2^31 for the 2^24-per-image tensors (cuDNN refuses
  // it: onnxruntime#15715's case at 256 px), so those are cut in two.
  EXPECT_EQ(check_batch(decoder_convs(), 128, "decoder"), 3);
  // Extraction at batch 256: 2^23 per image and more (128 channels at 256
  // px): conv_in's y, down_blocks.0's four resnet convs, its downsampler
  // (x, and the pad buffer [128, 257, 257]).
  EXPECT_EQ(check_batch(encoder_convs(), 256, "encoder"), 1 + 4 + 1);
  EXPECT_EQ(check_batch(decoder_convs(), 64, "decoder"), 0);
}

TEST(CudnnConvSplit, ChannelSliceCountsTheSpan) {
  // y channels [0, 128) of a [N, 256, 256, 256] concat buffer: one image
  // spans 2^23, each further one 2^24, so m = (2^31 - 1 - 2^23) / 2^24 + 1 = 128
  // images, where the element count alone (2^23 each) would allow 255.
  Conv2dDesc d = desc_of({"slice", 128, 256, 256, 128, 3}, 256);
  d.y_strides[0] = int64_t{256} * 256 * 256;
  EXPECT_EQ(cudnn_conv_max_images(d), (kTwo31 - 1 - (int64_t{1} << 23)) / (int64_t{1} << 24) + 1);
  EXPECT_EQ(cudnn_conv_max_images(desc_of({"packed", 128, 256, 256, 128, 3}, 256)), (kTwo31 - 1) >> 23);
}

TEST(CudnnConvSplit, OneImagePastTheLimitAndChunkSizes) {
  // [1, 512, 2048, 2048] is 2^31 elements: not for cuDNN at all.
  EXPECT_EQ(cudnn_conv_max_images(desc_of({"huge", 512, 2048, 2048, 8, 3}, 4)), 0);
  EXPECT_TRUE(cudnn_conv_chunks(4, 0).empty());
  // A lowered limit (the emulator's knob): 1000 elements, x 192 per image.
  EXPECT_EQ(cudnn_conv_max_images(desc_of({"small", 3, 8, 8, 3, 3}, 9), 1000), 1000 / 192);
  // Near-equal chunks in batch order, the larger first.
  EXPECT_EQ(cudnn_conv_chunks(256, 127), (std::vector<int64_t>{86, 85, 85}));
  EXPECT_EQ(cudnn_conv_chunks(5, 2), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(cudnn_conv_chunks(6, 6), (std::vector<int64_t>{6}));
  EXPECT_EQ(cudnn_conv_chunks(6, 100), (std::vector<int64_t>{6}));
}

}  // namespace
}  // namespace vt
