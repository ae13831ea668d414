#include "diffusion/vae_decode_samples.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>

#include "core/log.h"
#include "core/npz.h"
#include "core/progress.h"
#include "diffusion/image_grid.h"

namespace vt {

int64_t vae_decode_sample_files(const AutoencoderKL& vae, const std::string& out, int64_t batch) {
  const std::string npz = out + ".npz";
  std::map<std::string, NpyArray> arrays = load_npz(npz);
  auto it = arrays.find("latents");
  if (it == arrays.end()) throw std::runtime_error("'" + npz + "': no 'latents' array to decode");
  const Tensor lat = it->second.to_tensor();
  if (lat.dim() != 4 || lat.dtype() != DType::F32 || lat.size(1) != vae.config().latent_channels)
    throw std::runtime_error("'" + npz + "': 'latents' " + lat.str() + " must be F32 [N, " +
                             std::to_string(vae.config().latent_channels) + ", h, w] (the VAE's latent_channels)");
  const int64_t n = lat.size(0), f = vae.config().downsample_factor();
  const int64_t H = lat.size(2) * f, W = lat.size(3) * f, per = H * W * 3;
  NpyArray arr;
  arr.dtype = "|u1";
  arr.shape = {n, H, W, 3};
  arr.bytes.resize(static_cast<size_t>(n * per));
  ProgressOptions po;
  po.unit = "img";
  ProgressBar bar("decode", n, po);
  for (int64_t b0 = 0; b0 < n; b0 += batch) {
    const int64_t nb = std::min(batch, n - b0);
    const Tensor u8 = to_uint8_nhwc(vae.decode(lat.slice(0, b0, b0 + nb).contiguous()));
    std::memcpy(arr.bytes.data() + b0 * per, u8.contiguous().raw(), static_cast<size_t>(nb * per));
    bar.update(b0 + nb);
  }
  bar.finish();
  const int64_t shown = std::min<int64_t>(64, n);
  Tensor preview = Tensor::empty({shown, H, W, 3}, DType::U8);
  std::memcpy(preview.raw(), arr.bytes.data(), static_cast<size_t>(shown * per));
  arrays.erase(it);
  arrays["arr_0"] = std::move(arr);
  save_npz(npz, arrays);
  save_png_grid(out + ".png", preview);
  log().info("sample: decoded {} latents with the VAE into {} (arr_0 uint8 [{}, {}, {}, 3]) and {}.png", n, npz, n, H,
             W, out);
  return n;
}

}  // namespace vt
