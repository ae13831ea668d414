#include "vae/autoencoder_kl_config.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace vt {
namespace {

[[noreturn]] void fail(const std::string& source, const std::string& key, const std::string& msg) {
  throw std::runtime_error("VAE config '" + source + "': key '" + key + "' " + msg);
}

int64_t get_int(const nlohmann::json& j, const char* key, int64_t def, const std::string& source) {
  if (!j.contains(key)) return def;
  const auto& v = j.at(key);
  if (!v.is_number_integer()) fail(source, key, "must be an integer, got " + v.dump());
  return v.get<int64_t>();
}

bool get_bool(const nlohmann::json& j, const char* key, bool def, const std::string& source) {
  if (!j.contains(key)) return def;
  const auto& v = j.at(key);
  if (!v.is_boolean()) fail(source, key, "must be true or false, got " + v.dump());
  return v.get<bool>();
}

void expect_all(const nlohmann::json& j, const char* key, const char* want, size_t n, const std::string& source) {
  if (!j.contains(key)) return;
  const auto& v = j.at(key);
  if (!v.is_array() || v.size() != n)
    fail(source, key, "must be a list of " + std::to_string(n) + " entries (one per block_out_channels), got " + v.dump());
  for (const auto& e : v)
    if (!e.is_string() || e.get<std::string>() != want)
      fail(source, key, "must contain only \"" + std::string(want) + "\" (the AutoencoderKL of DiT), got " + e.dump());
}

}  // namespace

AutoencoderKLConfig AutoencoderKLConfig::from_json_text(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("VAE config '" + source + "': not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw std::runtime_error("VAE config '" + source + "': must be a JSON object");
  AutoencoderKLConfig c;
  c.in_channels = get_int(j, "in_channels", c.in_channels, source);
  c.out_channels = get_int(j, "out_channels", c.out_channels, source);
  c.latent_channels = get_int(j, "latent_channels", c.latent_channels, source);
  c.layers_per_block = get_int(j, "layers_per_block", c.layers_per_block, source);
  c.norm_num_groups = get_int(j, "norm_num_groups", c.norm_num_groups, source);
  if (j.contains("block_out_channels")) {
    const auto& v = j.at("block_out_channels");
    if (!v.is_array()) fail(source, "block_out_channels", "must be a list of integers, got " + v.dump());
    c.block_out_channels.clear();
    for (const auto& e : v) {
      if (!e.is_number_integer()) fail(source, "block_out_channels", "must be a list of integers, got " + v.dump());
      c.block_out_channels.push_back(e.get<int64_t>());
    }
  }
  if (j.contains("act_fn") && !(j.at("act_fn").is_string() && j.at("act_fn").get<std::string>() == "silu"))
    fail(source, "act_fn", "must be \"silu\", got " + j.at("act_fn").dump());
  if (j.contains("scaling_factor")) {
    const auto& v = j.at("scaling_factor");
    if (!v.is_number()) fail(source, "scaling_factor", "must be a number, got " + v.dump());
    c.scaling_factor = v.get<double>();
  }
  if (j.contains("shift_factor") && !j.at("shift_factor").is_null() &&
      !(j.at("shift_factor").is_number() && j.at("shift_factor").get<double>() == 0.0))
    fail(source, "shift_factor", "must be null or 0 (DiT's latents are only scaled), got " + j.at("shift_factor").dump());
  c.use_quant_conv = get_bool(j, "use_quant_conv", c.use_quant_conv, source);
  c.use_post_quant_conv = get_bool(j, "use_post_quant_conv", c.use_post_quant_conv, source);
  c.mid_block_add_attention = get_bool(j, "mid_block_add_attention", c.mid_block_add_attention, source);
  c.validate(source);
  expect_all(j, "down_block_types", "DownEncoderBlock2D", c.block_out_channels.size(), source);
  expect_all(j, "up_block_types", "UpDecoderBlock2D", c.block_out_channels.size(), source);
  return c;
}

AutoencoderKLConfig AutoencoderKLConfig::from_json_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("VAE config '" + path + "': cannot open the file");
  std::stringstream ss;
  ss << f.rdbuf();
  return from_json_text(ss.str(), path);
}

void AutoencoderKLConfig::validate(const std::string& source) const {
  auto positive = [&](const char* key, int64_t v) {
    if (v < 1) fail(source, key, "must be a positive integer, got " + std::to_string(v));
  };
  positive("in_channels", in_channels);
  positive("out_channels", out_channels);
  positive("latent_channels", latent_channels);
  positive("layers_per_block", layers_per_block);
  positive("norm_num_groups", norm_num_groups);
  if (block_out_channels.empty() || block_out_channels.size() > 8)
    fail(source, "block_out_channels", "must list 1 to 8 channel counts, got " + std::to_string(block_out_channels.size()));
  for (int64_t ch : block_out_channels)
    if (ch < 1 || ch % norm_num_groups != 0)
      fail(source, "block_out_channels", "entry " + std::to_string(ch) + " must be a positive multiple of norm_num_groups " +
                                             std::to_string(norm_num_groups));
  if (!(scaling_factor > 0.0)) fail(source, "scaling_factor", "must be positive, got " + std::to_string(scaling_factor));
}

}  // namespace vt
