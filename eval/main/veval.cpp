// veval: evaluation commands.
//   veval fid --samples PATH --ref PATH [--batch N] [--device auto|cpu|cuda|cuda:N] [--precision fp32|tf32]
//             [--inception WEIGHTS] [--metrics all|fid,sfid,is,precision,recall]
//             [--protocol adm|pytorch-fid] [--is-split N] [--save-activations FILE.npz]
//             [--sqrtm eig|schur] [--json FILE]
//   veval fid ... --features CKPT [--config CONFIG] [--ema true]   (FID only)
//   veval stats --images PATH --out ref.npz [--batch N] [--device ...] [--inception WEIGHTS | --features CKPT ...]
//   veval top1 CONFIG.yaml ckpt=DIR [split=val] [ema=true] [prune_last=K] [key.path=value ...]
//   veval --version   (core/build_info.h)
// PATH: image folder (recursive), ADM .npz (arr_0 uint8 NHWC) or statistics
// .npz (mu, sigma[, mu_s, sigma_s, pool, arr_0]); see eval/fid_inputs.h and
// eval/adm_suite.h (ADM's suite: FID, sFID, IS, precision, recall). FID semantics: docs/recipes.md §9;
// --features: eval/features_embedding.h; top1: eval/top1.h.
//
// Exit codes: 0 done, 1 runtime error (missing file, checkpoint mismatch,
// ...), 2 usage or configuration error.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <unistd.h>  // isatty
#include <vector>

#include "core/build_info.h"
#include "core/config.h"
#include "core/config_command.h"
#include "core/config_paths.h"
#include "core/omp_policy.h"
#include "core/output_claim.h"
#include "eval/features_embedding.h"
#include "eval/fid_inputs.h"
#include "eval/npz_members.h"
#include "core/dist.h"
#include "eval/adm_suite.h"
#include "eval/top1.h"
#include "kernels/matmul.h"
#include "train/device_choice.h"

#ifndef VT_CONFIGS_DIR
#define VT_CONFIGS_DIR "configs"
#endif

namespace {

const char* kUsage =
    "usage:\n"
    "  veval fid --samples PATH --ref PATH [--batch N] [--device auto|cpu|cuda|cuda:N] [--precision fp32|tf32]\n"
    "            [--inception WEIGHTS]\n"
    "            [--metrics all|fid,sfid,is,precision,recall] [--protocol adm|pytorch-fid] [--is-split 5000]\n"
    "            [--save-activations FILE.npz] [--sqrtm eig|schur] [--json FILE]\n"
    "  veval fid --samples PATH --ref PATH --features CKPT [--config CONFIG] [--ema true] ...\n"
    "  veval stats --images PATH --out ref.npz [--batch N] [--device ...] [--protocol adm|pytorch-fid]\n"
    "            [--inception WEIGHTS | --features CKPT ...] [--overwrite true]\n"
    "  veval top1 CONFIG.yaml ckpt=DIR [split=val|train|FOLDER] [ema=true] [prune_last=K] [key.path=value ...]\n"
    "  veval --version   (version, git commit, build type, CUDA / cuDNN / NCCL versions)\n"
    "PATH: a folder of images (recursive), an .npz with arr_0 (uint8 [N, H, W, 3]) or an .npz\n"
    "with mu and sigma (statistics, used directly; ADM's reference batches: mu, sigma, mu_s, sigma_s, arr_0).\n"
    "--metrics: ADM's evaluation suite (openai/guided-diffusion evaluator.py), all by default: FID, sFID\n"
    "  (mixed_6/conv spatial features), Inception Score (splits of --is-split in sample order), precision\n"
    "  and recall (k = 3; float64 distances, cuBLAS fp32 dot products on a GPU). --protocol adm\n"
    "  (default: ADM's TF1 resize and (x-128)/128, as DiT's published numbers) or pytorch-fid (its\n"
    "  bilinear resize and 2x-1). --save-activations: the samples' pool, spatial and logits arrays.\n"
    "--device: where the network runs (default auto: the GPU when one is visible). --precision: fp32\n"
    "  (default, TF32 off: a GPU gives the CPU's features to fp32 rounding) or tf32 (GPU only: the\n"
    "  convolutions on TF32 tensor cores, PyTorch's default for pytorch-fid; scores move slightly).\n"
    "  Images are decoded and resized on the host; the statistics are float64 on the host.\n"
    "--features CKPT: embed with a vtrain classifier's pre-logit features (final normed class\n"
    "  token) instead of Inception-v3; images get the classifier's DeiT eval transform (resize\n"
    "  to int(img_size/crop_pct), center crop img_size). CKPT: step_<N>/, a run directory or a\n"
    "  .safetensors file; CONFIG defaults to the run's config.yaml. Such scores are NOT\n"
    "  comparable with published FIDs (another feature space), only with each other for the\n"
    "  same checkpoint.\n"
    "stats --out: the name given (.npz appended only when missing; a directory gets <images>_stats.npz);\n"
    "  what made it is recorded in OUT.manifest.json: a rerun with the same arguments says it is done,\n"
    "  other arguments are refused naming the key and both values unless --overwrite true; one writer\n"
    "  per output at a time.\n"
    "top1: top-1/top-5/loss of a vtrain checkpoint with the DeiT eval transform, every image\n"
    "  counted once. CONFIG as for vtrain (a path, or a name in the installed or source configs/); split=val means\n"
    "  data.val_split; prune_last=K drops the last K blocks (the final norms and head stay: the\n"
    "  paper's layer-pruning study); other key=value words override the config (e.g. eval.batch_size=500).\n";

struct Args {
  std::map<std::string, std::string> opts;
  std::string get(const std::string& k, const std::string& def = "") const {
    auto it = opts.find(k);
    return it == opts.end() ? def : it->second;
  }
  std::string need(const std::string& k) const {
    auto it = opts.find(k);
    if (it == opts.end()) throw std::invalid_argument("missing required option --" + k);
    return it->second;
  }
};

Args parse(int argc, char** argv, int first, std::initializer_list<const char*> allowed) {
  Args a;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument '" + s + "'");
    std::string key = s.substr(2), val;
    if (auto eq = key.find('='); eq != std::string::npos) {
      val = key.substr(eq + 1), key = key.substr(0, eq);
    } else {
      if (i + 1 >= argc) throw std::invalid_argument("option --" + key + " needs a value");
      val = argv[++i];
    }
    bool ok = false;
    for (const char* k : allowed) ok |= key == k;
    if (!ok) throw std::invalid_argument("unknown option --" + key);
    a.opts[key] = val;
  }
  return a;
}

int64_t parse_batch(const Args& a) {
  const std::string s = a.get("batch", "50");
  size_t pos = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &pos);
  } catch (...) {
    pos = 0;
  }
  if (pos != s.size() || v < 1) throw std::invalid_argument("--batch must be a positive integer, got '" + s + "'");
  return v;
}

void progress(int64_t done, int64_t total) {
  if (!vt::dist().is_root()) return;  // rank 0 reports (its own shard's progress)
  static bool tty = isatty(fileno(stderr));
  if (tty) std::fprintf(stderr, "\r  %lld / %lld images", static_cast<long long>(done), static_cast<long long>(total));
  else if (done == total || done % 1000 < 50) std::fprintf(stderr, "  %lld / %lld images\n", static_cast<long long>(done), static_cast<long long>(total));
  if (tty && done == total) std::fprintf(stderr, "\n");
}

// Inception or, with --features, a classifier: whichever embeds the images.
struct Embedder {
  std::unique_ptr<vt::InceptionFid> net;
  std::unique_ptr<vt::ClassifierEmbedding> cls;
  std::string weights;  // what the features came from, for the report
  vt::DeviceChoice device;
  vt::FidSourceStats stats(const std::string& path, int64_t batch) const {
    return cls ? vt::embedding_source_stats(path, *cls, batch, progress)
               : vt::fid_source_stats(path, net.get(), batch, progress);
  }
};

bool parse_bool(const Args& a, const std::string& k) {
  const std::string v = a.get(k, "false");
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  throw std::invalid_argument("--" + k + " must be true or false, got '" + v + "'");
}

// The network, loaded only when some PATH holds images.
std::unique_ptr<vt::InceptionFid> load_net_if_needed(const Args& a, std::initializer_list<std::string> paths,
                                                     std::string* weights) {
  bool need = false;
  for (const auto& p : paths) need |= vt::classify_fid_source(p) != vt::FidSourceKind::StatsNpz;
  if (!need) return nullptr;
  *weights = vt::find_inception_weights(a.get("inception"));
  auto net = std::make_unique<vt::InceptionFid>(vt::InceptionFid::load(*weights));
  if (net->width_divisor() != 1)
    std::fprintf(stderr, "warning: %s is a width/%d test network; scores are not comparable with published FIDs\n",
                 weights->c_str(), net->width_divisor());
  return net;
}

// Checked before any image is embedded: a typo in --json/--out must not
// cost the whole computation. Runtime error (exit 1), like a missing input.
// An output file (--json, --save-activations) in an existing directory, not
// a directory itself, and never one of the run's inputs: a report written
// over the samples or the reference would destroy them. (An earlier report
// of that name is replaced, as a shell redirection replaces it.)
void check_output_parent(const std::string& opt, const std::string& file, const Args& a) {
  if (file.empty()) throw std::invalid_argument("--" + opt + " needs a file name");
  for (const char* input : {"samples", "ref", "images", "inception", "features"}) {
    std::error_code ec;
    const std::string in = a.get(input);
    if (!in.empty() && std::filesystem::exists(file, ec) && std::filesystem::equivalent(file, in, ec))
      throw std::invalid_argument("--" + opt + " '" + file + "' is the --" + input +
                                  " input: it would be overwritten; give another file name");
  }
  const std::filesystem::path parent = std::filesystem::path(file).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    throw std::runtime_error("--" + opt + " '" + file + "': directory '" + parent.string() + "' does not exist");
  if (std::filesystem::is_directory(file))
    throw std::runtime_error("--" + opt + " '" + file + "' is a directory, expected a file name");
}

// "N images (kind)", or for a statistics file "statistics from FILE [(N images)]".
std::string describe_source(const std::string& path, const vt::FidSourceStats& s) {
  if (s.kind == vt::FidSourceKind::StatsNpz)
    return "statistics from " + path + (s.count > 0 ? " (" + std::to_string(s.count) + " images)" : "");
  return std::to_string(s.count) + " images (" + vt::fid_source_name(s.kind) + ")";
}

// --device and --precision through vtrain's parser (the same values and
// messages as its `device` and `precision` keys). veval computes in fp32
// (default: TF32 off, so a GPU run gives the CPU's statistics to fp32
// rounding) or, with --precision tf32 on a GPU, runs the network's
// convolutions (Inception) or GEMMs (--features) on TF32 tensor cores, as
// PyTorch does by default for convolutions; the statistics and the
// precision/recall distances stay fp32/float64. bf16 is refused.
vt::DeviceChoice check_device(const Args& a) {
  const std::string precision = a.get("precision", "fp32");
  if (precision != "fp32" && precision != "tf32")
    throw vt::ConfigError("--precision: expected fp32 | tf32 (veval computes its features in fp32, or TF32 on a GPU), got '" +
                          precision + "'");
  const vt::DeviceChoice d = vt::choose_device(a.get("device", "auto"), precision, "--device", "--precision");
  vt::DeviceChoice fp32 = d;
  fp32.precision = vt::Precision::FP32;  // GEMMs (manifold distances) stay fp32; the networks opt in below
  vt::apply_device_choice(fp32);
  return d;
}

bool tf32(const vt::DeviceChoice& d) { return d.precision == vt::Precision::TF32; }

// The Inception network on the chosen device, in its precision.
void place(vt::InceptionFid& net, const vt::DeviceChoice& device) {
  if (device.device.is_cpu()) return;
  net.to(device.device);
  net.set_tf32(tf32(device));
}

// Built on the host, then moved to the chosen device once.
Embedder make_embedder(const Args& a, std::initializer_list<std::string> paths, const vt::DeviceChoice& device) {
  Embedder e;
  e.device = device;
  const std::string ckpt = a.get("features");
  if (ckpt.empty()) {
    if (!a.get("config").empty() || a.opts.count("ema"))
      throw std::invalid_argument("--config and --ema go with --features CKPT");
    e.net = load_net_if_needed(a, paths, &e.weights);
    if (e.net) place(*e.net, device);
    return e;
  }
  if (!a.get("inception").empty()) throw std::invalid_argument("--inception and --features exclude each other");
  e.cls = std::make_unique<vt::ClassifierEmbedding>(
      vt::ClassifierEmbedding::load(ckpt, a.get("config"), parse_bool(a, "ema"), vt::config_search_dirs(VT_CONFIGS_DIR)));
  e.weights = e.cls->classifier().weights_file;
  if (!device.device.is_cpu()) e.cls->to(device.device);
  vt::set_matmul_tf32(tf32(device));  // the classifier's GEMMs
  const vt::TrainOptions& o = e.cls->classifier().options;
  std::fprintf(stderr,
               "features: %s (%lld-d pre-logit class token, images to %lld px by the DeiT eval transform, "
               "crop_pct %g); scores are not comparable with published (Inception) FIDs\n",
               e.weights.c_str(), static_cast<long long>(e.cls->feature_dim()), static_cast<long long>(o.vit.img_size),
               o.crop_pct);
  return e;
}

void log_line(const char* s) { std::fprintf(stderr, "%s\n", s); }

int64_t parse_positive(const Args& a, const std::string& key, const std::string& def) {
  const std::string s = a.get(key, def);
  size_t pos = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &pos);
  } catch (...) {
    pos = 0;
  }
  if (pos != s.size() || v < 1) throw std::invalid_argument("--" + key + " must be a positive integer, got '" + s + "'");
  return v;
}

// One metric line of the report: "NAME: value" or "NAME: unavailable (why)".
void print_metric(const char* name, const vt::SuiteValue& v, bool wanted) {
  if (!wanted) return;
  if (v.available) std::printf("%s: %.6f\n", name, v.value);
  else std::printf("%s: unavailable (%s)\n", name, v.why.c_str());
}

nlohmann::json metric_json(const vt::SuiteValue& v) {
  return v.available ? nlohmann::json(v.value) : nlohmann::json(nullptr);
}

// FID, sFID, IS, precision, recall with the FID Inception (eval/adm_suite.h).
int cmd_fid_suite(const Args& a, const std::string& samples, const std::string& ref, int64_t batch,
                  const vt::DeviceChoice& device, vt::SqrtmMethod method) {
  const vt::SuiteMetrics metrics = vt::parse_suite_metrics(a.get("metrics", "all"));
  vt::SuiteOptions o;
  o.protocol = vt::fid_protocol_from_name(a.get("protocol", "adm"));
  o.batch = batch;
  o.is_split = parse_positive(a, "is-split", "5000");
  o.sqrtm = method;
  o.manifold.device = device.device;  // precision / recall dot products on the GPU when there is one
  o.save_activations = a.get("save-activations");
  o.progress = progress;
  o.log = log_line;
  if (a.opts.count("save-activations")) check_output_parent("save-activations", o.save_activations, a);
  if (vt::dist().world() > 1)
    throw std::invalid_argument("the evaluation suite (--metrics beyond fid, or --protocol adm) runs in one process; "
                                "under mpirun use --metrics fid --protocol pytorch-fid");
  std::string weights;
  std::unique_ptr<vt::InceptionFid> net = load_net_if_needed(a, {samples, ref}, &weights);
  if (net) place(*net, device);
  auto t0 = std::chrono::steady_clock::now();
  const vt::SuiteReport r = vt::run_adm_suite(samples, ref, net.get(), metrics, o);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  print_metric("FID", r.fid, metrics.fid);
  print_metric("sFID", r.sfid, metrics.sfid);
  print_metric("IS", r.is, metrics.is);
  print_metric("precision", r.precision, metrics.precision);
  print_metric("recall", r.recall, metrics.recall);
  auto side = [](const vt::SuiteSideInfo& s) {
    if (s.kind == vt::FidSourceKind::StatsNpz)
      return "statistics from " + s.path + (s.count > 0 ? " (" + std::to_string(s.count) + " images)" : "");
    return std::to_string(s.count) + " images (" + vt::fid_source_name(s.kind) + ")";
  };
  std::printf("samples: %s\nref: %s\n", side(r.samples).c_str(), side(r.ref).c_str());
  std::printf("protocol: %s\n", vt::fid_protocol_name(o.protocol));
  std::printf("device: %s\n", device.describe().c_str());
  if (r.is.available)
    std::fprintf(stderr, "IS: %zu splits of %lld, std %.6f\n", r.is_detail.splits.size(),
                 static_cast<long long>(o.is_split), r.is_detail.std);
  if (const std::string jf = a.get("json"); !jf.empty()) {
    nlohmann::json un = nlohmann::json::object();
    const std::pair<const char*, const vt::SuiteValue*> all[] = {
        {"fid", &r.fid}, {"sfid", &r.sfid}, {"inception_score", &r.is}, {"precision", &r.precision}, {"recall", &r.recall}};
    for (const auto& [k, v] : all)
      if (!v->available && !v->why.empty()) un[k] = v->why;
    nlohmann::json j = {
        {"fid", metric_json(r.fid)},
        {"sfid", metric_json(r.sfid)},
        {"inception_score", metric_json(r.is)},
        {"precision", metric_json(r.precision)},
        {"recall", metric_json(r.recall)},
        {"unavailable", un},
        {"protocol", vt::fid_protocol_name(o.protocol)},
        {"samples", {{"path", samples}, {"kind", vt::fid_source_name(r.samples.kind)}, {"count", r.samples.count}}},
        {"ref", {{"path", ref}, {"kind", vt::fid_source_name(r.ref.kind)}, {"count", r.ref.count}}},
        {"feature_dim", r.feature_dim},
        {"inception_weights", weights},
        {"embedding", "inception-v3 pool3"},
        {"sqrtm", a.get("sqrtm", "eig")},
        {"device", device.describe()},
        {"seconds", sec}};
    if (r.fid.available)
      j["terms"] = {{"mean", r.fid_terms.mean_term}, {"trace_sigma_samples", r.fid_terms.tr_sigma1},
                    {"trace_sigma_ref", r.fid_terms.tr_sigma2}, {"trace_covmean", r.fid_terms.tr_covmean},
                    {"max_imag", r.fid_terms.max_imag}, {"eps_added", r.fid_terms.eps_added}};
    if (r.is.available)
      j["inception_score_detail"] = {{"split_size", o.is_split}, {"splits", r.is_detail.splits}, {"std", r.is_detail.std}};
    if (r.precision.available || r.recall.available)
      j["precision_recall_detail"] = {{"k", o.manifold.k}, {"distances", "float64 squared Euclidean"},
                                      {"samples_in_ref_manifold", r.pr_detail.samples_in},
                                      {"refs_in_sample_manifold", r.pr_detail.refs_in}};
    std::ofstream f(jf);
    if (!f) throw std::runtime_error("cannot write --json '" + jf + "'");
    f << j.dump(2) << "\n";
  }
  // A metric asked for by name that the inputs cannot give fails the command.
  if (metrics.chosen)
    for (const vt::SuiteValue* v : {&r.fid, &r.sfid, &r.is, &r.precision, &r.recall})
      if (!v->available && !v->why.empty()) return 1;
  return 0;
}

int cmd_fid(int argc, char** argv) {
  Args a = parse(argc, argv, 2,
                 {"samples", "ref", "batch", "device", "precision", "inception", "sqrtm", "json", "features", "config",
                  "ema", "metrics", "protocol", "is-split", "save-activations"});
  const std::string samples = a.need("samples"), ref = a.need("ref");
  const int64_t batch = parse_batch(a);
  const vt::DeviceChoice device = check_device(a);
  if (a.opts.count("json")) check_output_parent("json", a.get("json"), a);
  const vt::SqrtmMethod method = vt::sqrtm_method_from_name(a.get("sqrtm", "eig"));
  const bool suite_opts = a.opts.count("metrics") || a.opts.count("protocol") || a.opts.count("is-split") ||
                          a.opts.count("save-activations");
  if (!a.get("features").empty()) {
    if (suite_opts)
      throw std::invalid_argument("--metrics, --protocol, --is-split and --save-activations go with the Inception "
                                  "network, not --features (which gives FID only)");
  } else {
    // Under mpirun, FID alone with pytorch-fid's preprocessing keeps the
    // sharded one-process statistics (eval/sharded_stats.h).
    const bool legacy = vt::dist().world() > 1 && a.get("metrics") == "fid" && a.get("protocol") == "pytorch-fid" &&
                        !a.opts.count("save-activations");
    if (!legacy) return cmd_fid_suite(a, samples, ref, batch, device, method);
  }
  const Embedder emb = make_embedder(a, {samples, ref}, device);
  const std::string& weights = emb.weights;
  auto t0 = std::chrono::steady_clock::now();
  std::fprintf(stderr, "samples: %s\n", samples.c_str());
  vt::FidSourceStats s = emb.stats(samples, batch);
  std::fprintf(stderr, "ref: %s\n", ref.c_str());
  vt::FidSourceStats r = emb.stats(ref, batch);
  if (!vt::dist().is_root()) return 0;  // the features are gathered on rank 0, which reports
  if (s.stats.dim() != r.stats.dim())
    throw std::runtime_error("feature dimensions differ: --samples '" + samples + "' gives " +
                             std::to_string(s.stats.dim()) + ", --ref '" + ref + "' gives " +
                             std::to_string(r.stats.dim()) + " (statistics from another network?)");
  vt::FrechetResult fr = vt::frechet_distance(s.stats, r.stats, method);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("FID: %.6f\n", fr.fid);
  std::printf("samples: %s\nref: %s\n", describe_source(samples, s).c_str(), describe_source(ref, r).c_str());
  std::printf("device: %s\n", emb.device.describe().c_str());
  if (const std::string jf = a.get("json"); !jf.empty()) {
    nlohmann::json j = {
        {"fid", fr.fid},
        {"samples", {{"path", samples}, {"kind", vt::fid_source_name(s.kind)}, {"count", s.count}}},
        {"ref", {{"path", ref}, {"kind", vt::fid_source_name(r.kind)}, {"count", r.count}}},
        {"feature_dim", s.stats.dim()},
        {emb.cls ? "features_checkpoint" : "inception_weights", weights},
        {"embedding", emb.cls ? "classifier pre-logit (not comparable with published FIDs)" : "inception-v3 pool3"},
        {"sqrtm", a.get("sqrtm", "eig")},
        {"device", emb.device.describe()},
        {"terms", {{"mean", fr.mean_term}, {"trace_sigma_samples", fr.tr_sigma1}, {"trace_sigma_ref", fr.tr_sigma2},
                   {"trace_covmean", fr.tr_covmean}, {"max_imag", fr.max_imag}, {"eps_added", fr.eps_added}}},
        {"seconds", sec}};
    std::ofstream f(jf);
    if (!f) throw std::runtime_error("cannot write --json '" + jf + "'");
    f << j.dump(2) << "\n";
  }
  return 0;
}

// What makes a statistics file (core/output_claim.h): the images, the
// embedding and the protocol; the batch and the device do not change it
// beyond rounding.
vt::OutputKeys stats_keys(const Args& a, const std::string& images) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::weakly_canonical(images, ec);
  vt::OutputKeys k = {{"images", ec ? images : abs.string()}, {"images_stamp", vt::path_stamp(images)}};
  if (const std::string f = a.get("features"); !f.empty()) {
    k.push_back({"features", f});
    k.push_back({"features_stamp", vt::path_stamp(f)});
    k.push_back({"config", a.get("config")});
    k.push_back({"ema", a.get("ema", "false")});
  } else {
    const std::string w = vt::find_inception_weights(a.get("inception"));
    k.push_back({"inception", w});
    k.push_back({"inception_stamp", vt::path_stamp(w)});
    k.push_back({"protocol", a.get("protocol", "adm")});
  }
  return k;
}

// `--images DIR/` -> "DIR_stats"; "ref.npz" -> "ref_stats".
std::string default_stats_stem(const std::string& images) {
  std::filesystem::path p(images);
  if (p.filename().empty()) p = p.parent_path();
  return p.stem().string() + "_stats";
}

int cmd_stats(int argc, char** argv) {
  Args a = parse(argc, argv, 2, {"images", "out", "batch", "device", "precision", "inception", "features", "config", "ema",
                                 "protocol", "overwrite"});
  const std::string images = a.need("images");
  // The name given (.npz appended only when missing; a directory gets <images>_stats.npz).
  const std::string out = vt::output_file_name(a.need("out"), ".npz", default_stats_stem(images));
  const bool overwrite = parse_bool(a, "overwrite");
  const int64_t batch = parse_batch(a);
  const vt::DeviceChoice device = check_device(a);
  check_output_parent("out", out, a);
  // One writer per output; an output of these arguments is done, one of
  // others is refused (under mpirun only rank 0 writes, and a done output
  // is computed again: the ranks cannot stop together before the pass).
  std::optional<vt::OutputClaim> claim;
  vt::OutputKeys keys;
  if (vt::dist().is_root()) {
    claim.emplace(vt::OutputFlags{"veval stats", "--out", "--overwrite true"}, out);
    keys = stats_keys(a, images);
    if (claim->check(keys, overwrite) && vt::dist().world() == 1) {
      std::printf("veval stats: %s is done: it was made with these arguments (%s); nothing computed "
                  "(--overwrite true computes it again)\n",
                  out.c_str(), claim->record_path().c_str());
      return 0;
    }
  }
  if (a.get("features").empty() && !(vt::dist().world() > 1 && a.get("protocol") == "pytorch-fid")) {
    // A reference in ADM's format (eval/adm_suite.h: write_adm_reference).
    if (vt::dist().world() > 1)
      throw std::invalid_argument("veval stats with --protocol adm runs in one process (under mpirun: --protocol pytorch-fid)");
    vt::SuiteOptions o;
    o.protocol = vt::fid_protocol_from_name(a.get("protocol", "adm"));
    o.batch = batch;
    o.progress = progress;
    o.log = log_line;
    std::string weights = vt::find_inception_weights(a.get("inception"));
    vt::InceptionFid net = vt::InceptionFid::load(weights);
    if (net.width_divisor() != 1)
      std::fprintf(stderr, "warning: %s is a width/%d test network; scores are not comparable with published FIDs\n",
                   weights.c_str(), net.width_divisor());
    place(net, device);
    const int64_t n = vt::write_adm_reference(images, out, net, o);
    claim->record(keys, {{"device", device.describe()}});
    std::printf("wrote %s: mu, sigma [%lld], mu_s, sigma_s [%lld], pool [%lld, %lld] from %lld images (protocol %s)\n",
                out.c_str(), static_cast<long long>(net.feature_dim()),
                static_cast<long long>(vt::InceptionFid::spatial_dim()), static_cast<long long>(n),
                static_cast<long long>(net.feature_dim()), static_cast<long long>(n), vt::fid_protocol_name(o.protocol));
    std::printf("device: %s\n", device.describe().c_str());
    return 0;
  }
  if (a.opts.count("protocol") && !a.get("features").empty())
    throw std::invalid_argument("--protocol goes with the Inception network, not --features");
  const Embedder emb = make_embedder(a, {images}, device);
  vt::FidSourceStats s = emb.stats(images, batch);
  if (!vt::dist().is_root()) return 0;  // the features are gathered on rank 0, which writes
  vt::save_stats_npz(out, s.stats);
  claim->record(keys, {{"device", emb.device.describe()}});
  std::printf("wrote %s: mu [%lld], sigma [%lld, %lld] from %lld images\n", out.c_str(),
              static_cast<long long>(s.stats.dim()), static_cast<long long>(s.stats.dim()),
              static_cast<long long>(s.stats.dim()), static_cast<long long>(s.count));
  std::printf("device: %s\n", emb.device.describe().c_str());
  return 0;
}

int cmd_top1(int argc, char** argv) {
  const vt::Top1Request req = vt::parse_top1_args(std::vector<std::string>(argv + 2, argv + argc));
  auto t0 = std::chrono::steady_clock::now();
  const vt::Top1Report rep = vt::run_top1(req, vt::config_search_dirs(VT_CONFIGS_DIR), [](int64_t d, int64_t t) { progress(d, t); });
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const vt::EvalResult& e = rep.result;
  if (!vt::dist().is_root()) return 0;  // every rank holds the reduced result; rank 0 reports
  std::printf("top1: %.2f%%  top5: %.2f%%  loss: %.4f  (%lld images; %lld top-1 and %lld top-5 correct%s)\n", e.top1,
              e.top5, e.loss, static_cast<long long>(e.images), static_cast<long long>(e.correct1),
              static_cast<long long>(e.correct5),
              e.skipped > 0 ? ("; " + std::to_string(e.skipped) + " unreadable images skipped").c_str() : "");
  std::printf("checkpoint: %s%s\nsplit: %s (%lld classes)\nconfig: %s\n", rep.weights_file.c_str(),
              req.ema ? " (EMA)" : "", rep.split_dir.c_str(), static_cast<long long>(rep.num_classes),
              rep.config_path.c_str());
  std::printf("device: %s\n", rep.device.c_str());
  std::printf("blocks: %lld of %lld run (prune_last=%lld)\n", static_cast<long long>(rep.blocks_run),
              static_cast<long long>(rep.depth), static_cast<long long>(req.prune_last));
  std::fprintf(stderr, "%.1f s, %.1f images/s\n", sec, sec > 0 ? static_cast<double>(e.images) / sec : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // As vtrain: spinning OpenMP workers slow everything down on shared cores.
  vt::reexec_with_passive_omp_wait(argv);
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (vt::is_version_flag(argv[1])) {
    std::fputs(vt::version_text("veval").c_str(), stdout);
    return 0;
  }
  const std::string cmd = argv[1];
  // `veval CMD --help`: the usage (every command's synopsis) on stdout.
  if (argc >= 3 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h") &&
      (cmd == "fid" || cmd == "stats" || cmd == "top1")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  // Under mpirun/srun: MPI starts here; top1, fid and stats split the
  // images over the ranks (fid/stats: eval/sharded_stats.h). A failing rank
  // aborts the whole job (vt::dist_fail).
  std::unique_ptr<vt::DistSession> session;
  try {
    session = std::make_unique<vt::DistSession>(&argc, &argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "veval: %s\n", e.what());
    return 2;
  }
  try {
    if (cmd == "fid") return cmd_fid(argc, argv);
    if (cmd == "stats") return cmd_stats(argc, argv);
    if (cmd == "top1") return cmd_top1(argc, argv);
    std::fprintf(stderr, "veval: %s\n%s", vt::unknown_command_message(cmd, {"fid", "stats", "top1"}).c_str(), kUsage);
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "veval %s: %s\n%s", cmd.c_str(), e.what(), kUsage);
    return vt::dist_fail(2);
  } catch (const vt::ConfigError& e) {
    std::fprintf(stderr, "veval %s: config error: %s\n", cmd.c_str(), e.what());
    return vt::dist_fail(2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "veval %s: error: %s\n", cmd.c_str(), e.what());
    return vt::dist_fail(1);
  }
}
