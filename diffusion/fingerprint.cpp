#include "diffusion/fingerprint.h"

#include <openssl/evp.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace vt {
namespace fs = std::filesystem;

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::add(const void* p, size_t n) { EVP_DigestUpdate(ctx_, p, n); }

void Sha256::add_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "' to fingerprint it");
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    add(buf.data(), static_cast<size_t>(in.gcount()));
  }
}

std::string Sha256::hex() {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_, d, &n);
  std::string h;
  char b[3];
  for (unsigned i = 0; i < n; ++i) {
    std::snprintf(b, sizeof(b), "%02x", d[i]);
    h += b;
  }
  return h;
}

std::string vae_fingerprint(const std::string& source) {
  const fs::path weights = fs::is_directory(source) ? fs::path(source) / "diffusion_pytorch_model.safetensors"
                                                    : fs::path(source);
  const fs::path config = weights.parent_path() / "config.json";
  Sha256 h;
  if (fs::is_regular_file(config)) h.add_file(config.string());
  h.add("weights");
  h.add_file(weights.string());
  return h.hex();
}

}  // namespace vt
