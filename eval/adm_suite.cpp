#include "eval/adm_suite.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "eval/fid_inputs.h"
#include "eval/npz_members.h"

namespace vt {
namespace {

bool has_key(const std::vector<std::string>& keys, const std::string& k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

// mu_key [D] and sigma_key [D, D] of a statistics .npz, float64, finite.
GaussianStats load_stats(const std::string& path, const std::string& mu_key, const std::string& sigma_key) {
  auto m = load_npz_members(path, {mu_key, sigma_key});
  const NpyArray& mu = m.at(mu_key);
  const NpyArray& sg = m.at(sigma_key);
  if (mu.shape.size() != 1 || sg.shape.size() != 2 || sg.shape[0] != mu.shape[0] || sg.shape[1] != mu.shape[0])
    throw std::runtime_error("'" + path + "': " + mu_key + " " + shape_str(mu.shape) + " and " + sigma_key + " " +
                             shape_str(sg.shape) + " must be [D] and [D, D]");
  const int64_t d = mu.shape[0];
  std::vector<double> a = mu.to_f64(), b = sg.to_f64();
  for (const auto* v : {&a, &b})
    for (size_t i = 0; i < v->size(); ++i)
      if (!std::isfinite((*v)[i]))
        throw std::runtime_error("'" + path + "': " + (v == &a ? mu_key : sigma_key) + " holds a non-finite value at flat index " +
                                 std::to_string(i));
  GaussianStats s;
  s.mu = Eigen::Map<Eigen::VectorXd>(a.data(), d);
  s.sigma = Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(b.data(), d, d);
  return s;
}

// What one PATH gives the suite.
struct Side {
  SuiteSideInfo info;
  std::optional<GaussianStats> pool, spatial;
  std::string pool_key = "mu", spatial_key = "mu_s", rows_key = "pool";  // names in messages
  std::string spatial_why, rows_why, logits_why;
  FidActivations acts;  // rows present when acts.pool_dim > 0
};

void note(const SuiteOptions& o, const std::string& s) {
  if (o.log) o.log(s.c_str());
}

Side load_side(const std::string& path, const char* role, const InceptionFid* net, const SuiteMetrics& m,
               const SuiteOptions& o, bool is_samples) {
  // The samples' spatial features and logits are also kept for --save-activations.
  const bool keep_all = is_samples && !o.save_activations.empty();
  Side s;
  s.info.path = path;
  s.info.kind = classify_fid_source(path);
  auto need_net = [&]() -> const InceptionFid& {
    if (!net) throw std::invalid_argument(std::string("run_adm_suite: ") + role + " '" + path + "' needs the network");
    return *net;
  };
  if (s.info.kind != FidSourceKind::StatsNpz) {
    note(o, std::string(role) + ": " + path);
    const bool want_logits = is_samples && (m.is || keep_all);
    if (want_logits && !need_net().has_logits()) s.logits_why = "the Inception weights have no key 'fc.weight' (the 1008-way logits)";
    s.acts = compute_fid_activations(path, need_net(), o.protocol, o.batch, m.sfid || keep_all,
                                     want_logits && net->has_logits(), o.progress);
    s.info.count = s.acts.n;
    s.pool = stats_of_rows(s.acts.pool, s.acts.n, s.acts.pool_dim);
    if (m.sfid) s.spatial = stats_of_rows(s.acts.spatial, s.acts.n, s.acts.spatial_dim);
    s.pool_key = s.spatial_key = s.rows_key = s.info.kind == FidSourceKind::ImageNpz ? "arr_0" : "images";
    return s;
  }
  const std::vector<std::string> keys = npz_keys(path);
  s.pool = load_stats(path, "mu", "sigma");
  s.info.count = stored_count(path);
  if (has_key(keys, "mu_s") && has_key(keys, "sigma_s")) s.spatial = load_stats(path, "mu_s", "sigma_s");
  else s.spatial_why = "'" + path + "' has no key '" + std::string(has_key(keys, "mu_s") ? "sigma_s" : "mu_s") + "'";
  s.logits_why = "'" + path + "' holds statistics, not images (the Inception Score needs per-image logits)";
  if (!m.pr()) return s;
  if (has_key(keys, "pool")) {
    const NpyArray f = load_npz_members(path, {"pool"}).at("pool");
    if (f.dtype != "<f4" || f.shape.size() != 2)
      throw std::runtime_error("'" + path + "': pool has dtype " + f.dtype + " and shape " + shape_str(f.shape) +
                               "; expected float32 [N, D]");
    s.acts.n = f.shape[0], s.acts.pool_dim = f.shape[1];
    s.acts.pool = f.as<float>();
    if (s.info.count == 0) s.info.count = s.acts.n;
  } else if (has_key(keys, "arr_0")) {
    note(o, std::string(role) + ": " + path + " (arr_0 images, for precision / recall)");
    s.acts = compute_fid_activations(path, need_net(), o.protocol, o.batch, false, false, o.progress);
    s.rows_key = "arr_0";
    if (s.info.count == 0) s.info.count = s.acts.n;
  } else {
    s.rows_why = "'" + path + "' has neither key 'arr_0' (images) nor key 'pool' (features)";
  }
  return s;
}

void check_dims(const Side& a, const Side& b, int64_t da, int64_t db, const std::string& ka, const std::string& kb,
                const char* what) {
  if (da != db)
    throw std::runtime_error(std::string(what) + " dimensions differ: --samples '" + a.info.path + "' " + ka + " gives " +
                             std::to_string(da) + ", --ref '" + b.info.path + "' " + kb + " gives " + std::to_string(db) +
                             " (another network or protocol?)");
}

// What a side will give, known without any network pass: its protocol
// (statistics files that record one) and its feature dimensions (a
// statistics file's mu / mu_s, or the network's for images).
struct SideDims {
  int64_t pool = 0, spatial = 0;  // 0: unknown or absent
  std::string pool_key, spatial_key;
};

SideDims precheck_side(const std::string& path, const InceptionFid* net, const SuiteOptions& o) {
  SideDims d;
  if (classify_fid_source(path) != FidSourceKind::StatsNpz) {
    if (net) d.pool = net->feature_dim(), d.spatial = InceptionFid::spatial_dim();
    d.pool_key = d.spatial_key = classify_fid_source(path) == FidSourceKind::ImageNpz ? "arr_0" : "images";
    return d;
  }
  const std::vector<std::string> keys = npz_keys(path);
  if (has_key(keys, "protocol")) {
    const NpyArray pr = load_npz_members(path, {"protocol"}).at("protocol");
    const std::string name = pr.dtype == "|u1" ? std::string(pr.bytes.begin(), pr.bytes.end()) : "?";
    if (name != fid_protocol_name(o.protocol))
      throw std::runtime_error("'" + path + "': key 'protocol' says its statistics were made with the " + name +
                               " protocol, but --protocol is " + fid_protocol_name(o.protocol));
  }
  auto dim_of = [&](const std::string& key) -> int64_t {
    if (!has_key(keys, key)) return 0;
    const NpyArray a = load_npz_members(path, {key}).at(key);  // a mean: [D], small
    return a.shape.size() == 1 ? a.shape[0] : 0;                // other shapes: load_stats names them
  };
  d.pool = dim_of("mu"), d.pool_key = "mu";
  d.spatial = dim_of("mu_s"), d.spatial_key = "mu_s";
  return d;
}

SuiteValue ok(double v) { return SuiteValue{true, v, ""}; }
SuiteValue missing(const std::string& why) { return SuiteValue{false, 0, why}; }

}  // namespace

SuiteMetrics parse_suite_metrics(const std::string& list) {
  SuiteMetrics m;
  if (list == "all") return m;
  m = SuiteMetrics{false, false, false, false, false, true};
  std::stringstream ss(list);
  std::string w;
  bool any = false;
  while (std::getline(ss, w, ',')) {
    if (w == "fid") m.fid = true;
    else if (w == "sfid") m.sfid = true;
    else if (w == "is") m.is = true;
    else if (w == "precision") m.precision = true;
    else if (w == "recall") m.recall = true;
    else throw std::invalid_argument("--metrics: unknown metric '" + w + "' (expected all or a comma list of fid, sfid, is, precision, recall)");
    any = true;
  }
  if (!any) throw std::invalid_argument("--metrics: empty list");
  return m;
}

SuiteReport run_adm_suite(const std::string& samples, const std::string& ref, const InceptionFid* net,
                          const SuiteMetrics& m, const SuiteOptions& o) {
  SuiteReport r;
  // Protocols and dimensions first: a mismatch must not cost the other
  // side's network pass (minutes at 50K images).
  {
    const SideDims ds = precheck_side(samples, net, o), dr = precheck_side(ref, net, o);
    auto differ = [&](const char* what, int64_t a, int64_t b, const std::string& ka, const std::string& kb) {
      if (a > 0 && b > 0 && a != b)
        throw std::runtime_error(std::string(what) + " dimensions differ: --samples '" + samples + "' " + ka +
                                 " gives " + std::to_string(a) + ", --ref '" + ref + "' " + kb + " gives " +
                                 std::to_string(b) + " (another network or protocol?)");
    };
    differ("pool feature", ds.pool, dr.pool, ds.pool_key, dr.pool_key);
    if (m.sfid) differ("spatial feature", ds.spatial, dr.spatial, ds.spatial_key, dr.spatial_key);
  }
  Side s = load_side(samples, "samples", net, m, o, true);
  if (!o.save_activations.empty()) {
    if (s.info.kind == FidSourceKind::StatsNpz)
      throw std::runtime_error("--save-activations: '" + samples + "' holds statistics, not images");
    save_activations_npz(o.save_activations, s.acts);
  }
  Side f = load_side(ref, "ref", net, m, o, false);
  r.samples = s.info, r.ref = f.info;
  r.feature_dim = s.pool->dim();
  check_dims(s, f, s.pool->dim(), f.pool->dim(), s.pool_key, f.pool_key, "pool feature");
  // Every dimension is checked before the (slow) distances.
  if (m.sfid && s.spatial && f.spatial)
    check_dims(s, f, s.spatial->dim(), f.spatial->dim(), s.spatial_key, f.spatial_key, "spatial feature");
  if (m.pr() && s.acts.pool_dim && f.acts.pool_dim)
    check_dims(s, f, s.acts.pool_dim, f.acts.pool_dim, s.pool_key, f.rows_key, "precision/recall feature");
  if (m.fid) {
    r.fid_terms = frechet_distance(*s.pool, *f.pool, o.sqrtm);
    r.fid = ok(r.fid_terms.fid);
  }
  if (m.sfid) {
    if (!s.spatial) r.sfid = missing(s.spatial_why);
    else if (!f.spatial) r.sfid = missing(f.spatial_why);
    else {
      r.sfid_terms = frechet_distance(*s.spatial, *f.spatial, o.sqrtm);
      r.sfid = ok(r.sfid_terms.fid);
    }
  }
  if (m.is) {
    if (!s.acts.logit_dim) {
      r.is = missing(s.logits_why.empty() ? "no logits" : s.logits_why);
    } else if (s.acts.n < 2 * o.is_split) {
      r.is = missing("'" + samples + "' " + s.pool_key + ": the Inception Score needs at least 2 splits of " +
                     std::to_string(o.is_split) + " samples (" + std::to_string(2 * o.is_split) + "), found " +
                     std::to_string(s.acts.n) + " (--is-split sets the split size)");
    } else {
      r.is_detail = inception_score(s.acts.logits.data(), s.acts.n, s.acts.logit_dim, o.is_split);
      r.is = ok(r.is_detail.mean);
    }
  }
  if (m.pr()) {
    std::string why;
    if (!s.acts.pool_dim) why = "'" + samples + "' holds statistics, not images (precision / recall need per-image features)";
    else if (!f.acts.pool_dim) why = f.rows_why;
    // ADM's k-th nearest neighbour radii need more than k rows per side.
    else if (s.acts.n <= o.manifold.k || f.acts.n <= o.manifold.k)
      why = "precision / recall need more than k = " + std::to_string(o.manifold.k) + " images on each side: '" +
            samples + "' " + s.pool_key + " has " + std::to_string(s.acts.n) + ", '" + ref + "' " + f.rows_key +
            " has " + std::to_string(f.acts.n);
    if (why.empty()) {
      note(o, "precision / recall: " + std::to_string(f.acts.n) + " x " + std::to_string(s.acts.n) + " distances");
      r.pr_detail = precision_recall(f.acts.pool.data(), f.acts.n, s.acts.pool.data(), s.acts.n, s.acts.pool_dim, o.manifold);
      r.precision = ok(r.pr_detail.precision);
      r.recall = ok(r.pr_detail.recall);
    } else {
      r.precision = r.recall = missing(why);
    }
    if (!m.precision) r.precision = SuiteValue{};
    if (!m.recall) r.recall = SuiteValue{};
  }
  return r;
}

int64_t write_adm_reference(const std::string& images, const std::string& out, const InceptionFid& net,
                            const SuiteOptions& o) {
  if (classify_fid_source(images) == FidSourceKind::StatsNpz)
    throw std::runtime_error("'" + images + "' holds statistics; a reference needs images");
  const FidActivations a = compute_fid_activations(images, net, o.protocol, o.batch, true, false, o.progress);
  const GaussianStats p = stats_of_rows(a.pool, a.n, a.pool_dim), s = stats_of_rows(a.spatial, a.n, a.spatial_dim);
  auto f64 = [](const GaussianStats& g, std::map<std::string, NpyArray>* m, const std::string& mk, const std::string& sk) {
    const int64_t d = g.dim();
    std::vector<double> mu(g.mu.data(), g.mu.data() + d), sg(static_cast<size_t>(d * d));
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j < d; ++j) sg[i * d + j] = g.sigma(i, j);
    m->emplace(mk, NpyArray::from(mu, {d}));
    m->emplace(sk, NpyArray::from(sg, {d, d}));
  };
  std::map<std::string, NpyArray> m;
  f64(p, &m, "mu", "sigma");
  f64(s, &m, "mu_s", "sigma_s");
  m.emplace("pool", NpyArray::from(a.pool, {a.n, a.pool_dim}));
  m.emplace("count", NpyArray::from(std::vector<int64_t>{a.n}, Shape{}));
  const std::string proto = fid_protocol_name(o.protocol);
  m.emplace("protocol", NpyArray::from(std::vector<uint8_t>(proto.begin(), proto.end()), {static_cast<int64_t>(proto.size())}));
  // arr_0 first, streamed from the images (never whole in memory); when a
  // folder's images differ in size the archive is started again without it.
  auto write_rest = [&](NpzStreamWriter& w) {
    for (const auto& [k, v] : m) w.add(k, v);
    w.commit();
  };
  {
    NpzStreamWriter w(out);
    if (write_stacked_images(images, w, "arr_0", o.batch)) {
      write_rest(w);
      return a.n;
    }
  }
  note(o, "images differ in size: no arr_0 written (ADM's evaluator reads arr_0 of a reference batch)");
  NpzStreamWriter w(out);
  write_rest(w);
  return a.n;
}

}  // namespace vt
