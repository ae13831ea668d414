#include "diffusion/dit_vae_commands.h"

#include "core/output_claim.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/log.h"
#include "diffusion/latent_extract.h"

namespace vt {
namespace {

[[noreturn]] void bad(const std::string& key, const std::string& value, const std::string& what) {
  throw ConfigError("extract: " + key + "=" + value + ": " + what);
}

// The VAE must produce the model's input channels. DiT multiplies latents by
// data.latent_scale and the VAE's config states the factor it was trained
// with: a mismatch is allowed (a deliberate rescale) but said.
void check_vae_fits_model(const DitTrainConfig& cfg, const AutoencoderKL& vae, const std::string& source) {
  if (vae.config().latent_channels != cfg.model.in_channels)
    throw ConfigError("model.in_channels: " + std::to_string(cfg.model.in_channels) + ", but the VAE '" + source +
                      "' has latent_channels " + std::to_string(vae.config().latent_channels));
  const double s = vae.config().scaling_factor;
  if (std::abs(s - cfg.latent_scale) > 1e-6 * std::abs(s))
    log().warn("data.latent_scale is {}, but the VAE '{}' states scaling_factor {}", cfg.latent_scale, source, s);
}

int64_t parse_count(const std::string& key, const std::string& v) {
  int64_t x = 0;
  const char* end = v.data() + v.size();
  const auto r = std::from_chars(v.data(), end, x);
  if (r.ec != std::errc() || r.ptr != end || x < 1 || x > (int64_t{1} << 30))
    bad(key, v, "expected an integer in [1, 2^30]");
  return x;
}

}  // namespace

AutoencoderKL load_dit_vae(const DitTrainConfig& cfg, const std::string& path) {
  AutoencoderKL vae = AutoencoderKL::load(path, cfg.compute.device, cfg.vae_precision);
  log().info("VAE {} on {}, precision {}", path, cfg.compute.device.str(), vae_precision_name(cfg.vae_precision));
  return vae;
}

const std::set<std::string>& dit_extract_arg_keys() {
  static const std::set<std::string> k = {"images", "out", "vae", "store", "hflip", "shard_size", "batch"};
  return k;
}

std::string dit_vae_path(const DitTrainConfig& cfg, const std::map<std::string, std::string>& opts) {
  auto it = opts.find("vae");
  return it != opts.end() ? it->second : cfg.vae_path;
}

void run_dit_extract(const DitTrainConfig& cfg, const std::map<std::string, std::string>& opts) {
  auto need = [&](const char* key) {
    auto it = opts.find(key);
    if (it == opts.end() || it->second.empty())
      throw ConfigError(std::string("extract: ") + key + "=DIR is required");
    return it->second;
  };
  ExtractOptions o;
  o.images_dir = need("images");
  o.out_dir = need("out");
  o.vae_source = dit_vae_path(cfg, opts);
  if (o.vae_source.empty()) throw ConfigError("extract: no VAE: give vae=PATH or set vae.path in the config");
  if (opts.count("store")) {
    const std::string s = opts.at("store");
    if (s != "posterior" && s != "sample") bad("store", s, "expected posterior | sample");
    o.store_posterior = s == "posterior";
  }
  if (opts.count("hflip")) {
    const std::string s = opts.at("hflip");
    if (s != "true" && s != "false") bad("hflip", s, "expected true | false");
    o.hflip_copies = s == "true";
  }
  if (opts.count("shard_size")) o.shard_size = parse_count("shard_size", opts.at("shard_size"));
  if (opts.count("batch")) o.batch = parse_count("batch", opts.at("batch"));
  o.on_corrupt = cfg.on_corrupt;
  o.seed = cfg.seed;
  o.num_classes = cfg.model.num_classes;
  apply_device_choice(cfg.compute);
  const AutoencoderKL vae = load_dit_vae(cfg, o.vae_source);
  check_vae_fits_model(cfg, vae, o.vae_source);
  o.image_size = cfg.model.input_size * vae.config().downsample_factor();
  // One extraction per out= at a time (core/output_claim.h).
  const OutputClaim claim({"extract", "out=", ""}, o.out_dir, /*is_dir=*/true);
  const ExtractReport r = extract_latents(vae, o);
  std::printf("dittrain extract: %lld rows in %s (%lld shard(s) written, %lld already there, %lld bad image(s) skipped)\n",
              static_cast<long long>(r.total_rows()), o.out_dir.c_str(), static_cast<long long>(r.shards_written),
              static_cast<long long>(r.shards_skipped), static_cast<long long>(r.bad_images));
}

std::optional<AutoencoderKL> dit_sample_vae(const DitTrainConfig& cfg, const std::map<std::string, std::string>& opts) {
  if (cfg.data_kind != "latents") {
    if (opts.count("vae"))
      throw ConfigError("sample: vae=" + opts.at("vae") + ": the model is a pixel-space one (data.kind: " +
                        cfg.data_kind + "), it has no latents to decode");
    return std::nullopt;
  }
  const std::string path = dit_vae_path(cfg, opts);
  if (path.empty()) {
    log().info("sample: no VAE given (vae=PATH or vae.path): the npz will hold latents, not images");
    return std::nullopt;
  }
  AutoencoderKL vae = load_dit_vae(cfg, path);
  check_vae_fits_model(cfg, vae, path);
  return vae;
}

}  // namespace vt
