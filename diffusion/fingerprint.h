// SHA-256 fingerprints (OpenSSL EVP) that tell inputs apart across runs:
// `dittrain extract` records the VAE's in its shard metadata
// (diffusion/latent_extract.h), `dittrain sample` records the VAE's and the
// sampled weights' in its partial state (diffusion/sample_partial.h), so a
// rerun with other weights at the same path is recognised.
#pragma once
#include <cstddef>
#include <string>

typedef struct evp_md_ctx_st EVP_MD_CTX;

namespace vt {

// SHA-256 over byte chunks, as lower-case hex.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void add(const void* p, size_t n);
  // With the NUL, so consecutive fields cannot run together.
  void add(const std::string& s) { add(s.data(), s.size() + 1); }
  // The whole file; throws std::runtime_error naming it when it cannot be read.
  void add_file(const std::string& path);
  // 64 lower-case hex digits. Call once.
  std::string hex();

 private:
  EVP_MD_CTX* ctx_;
};

// The VAE's identity: SHA-256 of its config.json (when present) and its whole
// weights file (`source` is an AutoencoderKL folder, vae/autoencoder_kl.h, or
// the weights file itself), so other weights at the same path are told apart.
std::string vae_fingerprint(const std::string& source);

}  // namespace vt
