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

Tensor vae_decode_to_uint8(const AutoencoderKL& vae, const Tensor& lat, int64_t batch, const std::string& what) {
  if (lat.dim() != 4 || lat.dtype() != DType::F32 || lat.size(1) != vae.config().latent_channels)
    throw std::runtime_error(what + ": 'latents' " + lat.str() + " must be F32 [N, " +
                             std::to_string(vae.config().latent_channels) + ", h, w] (the VAE's latent_channels)");
  const int64_t n = lat.size(0), f = vae.config().downsample_factor();
  const int64_t H = lat.size(2) * f, W = lat.size(3) * f, per = H * W * 3;
  Tensor out = Tensor::empty({n, H, W, 3}, DType::U8);
  ProgressOptions po;
  po.unit = "img";
  ProgressBar bar("decode", n, po);
  for (int64_t b0 = 0; b0 < n; b0 += batch) {
    const int64_t nb = std::min(batch, n - b0);
    // On a GPU VAE the latents go up and the images come back per batch.
    const Tensor u8 = to_uint8_nhwc(vae.decode(lat.slice(0, b0, b0 + nb).contiguous()).to(Device::cpu()));
    std::memcpy(out.u8() + b0 * per, u8.contiguous().raw(), static_cast<size_t>(nb * per));
    bar.update(b0 + nb);
  }
  bar.finish();
  return out;
}

int64_t vae_decode_sample_files(const AutoencoderKL& vae, const std::string& out, int64_t batch) {
  const std::string npz = out + ".npz";
  std::map<std::string, NpyArray> arrays = load_npz(npz);
  auto it = arrays.find("latents");
  if (it == arrays.end()) throw std::runtime_error("'" + npz + "': no 'latents' array to decode");
  const Tensor u8 = vae_decode_to_uint8(vae, it->second.to_tensor(), batch, "'" + npz + "'");
  const int64_t n = u8.size(0), H = u8.size(1), W = u8.size(2);
  const int64_t shown = std::min<int64_t>(64, n);
  arrays.erase(it);
  arrays["arr_0"] = NpyArray::from_tensor(u8);
  save_npz(npz, arrays);
  save_png_grid(out + ".png", u8.slice(0, 0, shown).contiguous());
  log().info("sample: decoded {} latents with the VAE into {} (arr_0 uint8 [{}, {}, {}, 3]) and {}.png", n, npz, n, H,
             W, out);
  return n;
}

}  // namespace vt
