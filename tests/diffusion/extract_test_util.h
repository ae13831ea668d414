// What the `dittrain extract` tests share (tests/diffusion/test_latent_extract.cpp,
// tests/cuda/emu/train/test_dit_vae_emu.cpp): a small ImageFolder of real
// imagenet-samples photos and the options for the committed narrow VAE.
#pragma once
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "diffusion/latent_extract.h"
#include "test_fs.h"

namespace vt_test {

inline const std::string kNarrowVae = std::string(VT_FIXTURES_DIR) + "/vae/narrow";
inline const std::string kImagenetSamples = std::string(VT_SHARED_DATA_DIR) + "/imagenet-samples";
// The narrow fixture's images, in its order (tools/vae_fixture.py IMAGES).
inline const char* const kFixtureClasses[] = {"n01443537", "n01440764", "n01484850"};

inline std::string first_file(const std::string& dir) {
  std::vector<std::string> f;
  for (const auto& e : std::filesystem::directory_iterator(dir)) f.push_back(e.path().string());
  std::sort(f.begin(), f.end());
  return f.at(0);
}

// An ImageFolder under tmp of the first n fixture classes' photos, one class folder each.
inline std::string make_sample_folder(const TmpDir& tmp, int n) {
  namespace fs = std::filesystem;
  const std::string root = tmp.path() + "/images";
  for (int i = 0; i < n; ++i) {
    fs::create_directories(root + "/" + kFixtureClasses[i]);
    const std::string src = first_file(kImagenetSamples + "/" + kFixtureClasses[i]);
    fs::copy_file(src, root + "/" + kFixtureClasses[i] + "/" + fs::path(src).filename().string());
  }
  return root;
}

// 64 px crops, two images per VAE call, the narrow VAE.
inline vt::ExtractOptions extract_options(const std::string& images, const std::string& out) {
  vt::ExtractOptions o;
  o.images_dir = images;
  o.out_dir = out;
  o.vae_source = kNarrowVae;
  o.image_size = 64;
  o.batch = 2;
  return o;
}

}  // namespace vt_test
