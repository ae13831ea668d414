#include "vision/evaluate.h"


#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/dist.h"
#include "core/out_of_memory.h"
#include "data_pipeline/batch_upload.h"
#include "kernels/cross_entropy.h"

namespace vt {

ImagePipelineConfig deit_eval_pipeline(const TrainOptions& o) {
  ImagePipelineConfig c;
  c.kind = ImagePipeline::DeitEval;
  c.size = static_cast<int>(o.vit.img_size);
  c.crop_pct = o.crop_pct;
  c.dct_scaling = o.dct_scaling;
  return c;
}

EvalOptions eval_options(const TrainOptions& o) {
  EvalOptions e;
  e.batch_size = static_cast<int>(o.eval_batch_size);
  e.workers = o.workers;
  e.prefetch = o.prefetch;
  e.seed = o.seed;
  e.on_corrupt = parse_on_corrupt(o.on_corrupt);
  e.max_images = o.eval_max_images;
  return e;
}

EpochOrder eval_shard_order(int64_t dataset_size, const EvalOptions& o) {
  int64_t n = dataset_size;
  if (o.max_images) n = std::max<int64_t>(0, std::min(n, *o.max_images));
  // Positions into the global list; eval_order validates rank/world.
  const EpochOrder pos = eval_order(n, o.rank, o.world);
  EpochOrder out;
  for (int64_t p : pos.indices) {
    const int64_t i = n < dataset_size ? p * dataset_size / n : p;
    out.indices.push_back(i);
    out.draw_ids.push_back(i);
  }
  return out;
}

namespace {

// Takes a row that was counted by the batch's cross-entropy (its top-1
// hit, the first maximum as the kernel picks it, and its loss) back out.
void unaccount_row(const float* row, int64_t K, int32_t label, EvalResult& e) {
  int64_t arg = 0;
  for (int64_t k = 1; k < K; ++k)
    if (row[k] > row[arg]) arg = k;
  if (arg == label) --e.correct1;
  double se = 0;
  for (int64_t k = 0; k < K; ++k) se += std::exp(static_cast<double>(row[k] - row[arg]));
  e.loss_sum -= static_cast<double>(row[arg]) + std::log(se) - static_cast<double>(row[label]);
}

void finish(EvalResult& e) {
  e.top1 = e.top5 = e.loss = 0;
  if (e.images > 0) {
    const double n = static_cast<double>(e.images);
    e.top1 = 100.0 * static_cast<double>(e.correct1) / n;
    e.top5 = 100.0 * static_cast<double>(e.correct5) / n;
    e.loss = e.loss_sum / n;
  }
}

}  // namespace

EvalResult evaluate_classifier(VisionTransformer& model, std::shared_ptr<const Dataset> ds, const EvalOptions& o,
                               const std::function<void(int64_t, int64_t)>& progress) {
  const VitConfig& vc = model.config();
  const Shape want{vc.in_chans, vc.img_size, vc.img_size};
  if (ds->sample_shape() != want)
    throw std::invalid_argument("evaluate_classifier: the dataset gives samples " + shape_str(ds->sample_shape()) +
                                " but the model takes " + shape_str(want));
  if (ds->num_classes() > vc.num_classes)
    throw std::invalid_argument("evaluate_classifier: the dataset has " + std::to_string(ds->num_classes()) +
                                " classes but the model's head has " + std::to_string(vc.num_classes));
  if (o.batch_size < 1)
    throw std::invalid_argument("evaluate_classifier: batch size must be positive, got " + std::to_string(o.batch_size));
  EpochOrder order = eval_shard_order(ds->size(), o);
  const int64_t total = static_cast<int64_t>(order.size());
  const std::vector<int64_t> order_indices = order.indices;
  const Device dev = model.device();
  LoaderConfig lc;
  lc.batch_size = o.batch_size;
  lc.workers = o.workers;
  lc.prefetch = o.prefetch;
  lc.drop_last = false;  // the ragged last batch counts
  lc.seed = o.seed;
  lc.on_corrupt = o.on_corrupt;
  lc.rank = o.rank;
  lc.pinned_slots = dev.is_cuda();  // uploaded from pinned slots
  Loader loader(ds, lc);
  loader.start_epoch(0, std::move(order));
  // On a GPU each batch is copied from its pinned slot on the uploader's
  // stream while the previous batch is evaluated (data_pipeline/
  // batch_upload.h, as in training); the loss and top-1 count are computed
  // there; only the logits come back for the top-5 count.
  std::unique_ptr<BatchUploader> upload;
  if (dev.is_cuda()) upload = std::make_unique<BatchUploader>(loader, dev);
  const int64_t K = vc.num_classes;
  const std::vector<int64_t>& wanted = order_indices;  // dataset index of each position
  EvalResult e;
  Batch b;
  DeviceBatch db;
  Tensor logits, host_logits;
  // A device out-of-memory here (after training fitted) names the
  // evaluation batch and its key; nothing has been recorded yet.
  const std::string oom_context =
      "evaluation batch (eval.batch_size=" + std::to_string(o.batch_size) + " per process; lower it)";
  naming_out_of_memory(oom_context, [&] {
    while (upload ? upload->next(db) : loader.next(b)) {
      const Tensor& images = upload ? db.images : b.images;
      const Tensor& labels = upload ? db.labels : b.labels;
      const Tensor& host_labels = upload ? db.host_labels : b.labels;
      const int64_t B = images.shape()[0];
      if (!logits.defined() || logits.shape()[0] != B) logits = Tensor::empty({B, K}, DType::F32, dev);
      model.forward(images, logits, false);
      if (upload) upload->prefetch();  // the next batch's copy overlaps this one's forward
      CrossEntropyResult r = cross_entropy_forward_backward(logits, labels, 0.0f, Tensor());
      e.loss_sum += r.loss * static_cast<double>(B);
      e.correct1 += r.correct;
      host_logits = logits.to(Device::cpu());
      const float* l = host_logits.f32();
      const std::vector<int64_t>& used = upload ? db.indices : b.indices;
      const int64_t first = (upload ? db.index : b.index) * o.batch_size;
      int64_t evaluated = 0;
      for (int64_t i = 0; i < B; ++i) {
        const float* row = l + i * K;
        const int32_t label = host_labels.i32()[i];
        if (used[static_cast<size_t>(i)] != wanted[static_cast<size_t>(first + i)]) {
          // The loader put the next readable image (and its label) in place
          // of an unreadable one; that image is evaluated at its own
          // position, so this row is taken out of the counts.
          unaccount_row(row, K, label, e);
          continue;
        }
        const float v = row[label];
        int64_t above = 0;
        for (int64_t k = 0; k < K; ++k) above += row[k] > v;
        e.correct5 += above < 5;
        ++evaluated;
      }
      e.skipped += B - evaluated;
      e.images += evaluated;
      if (progress) progress(e.images, total);
      if (o.stop && o.stop()) break;
    }
  });
  finish(e);
  return e;
}

EvalResult merge_eval_results(const std::vector<EvalResult>& shards) {
  EvalResult m;
  for (const EvalResult& s : shards) {
    m.images += s.images;
    m.correct1 += s.correct1;
    m.correct5 += s.correct5;
    m.loss_sum += s.loss_sum;
    m.skipped += s.skipped;
  }
  finish(m);
  return m;
}

EvalResult reduce_eval_result(const EvalResult& shard) {
  // Counts below 2^53 are exact in doubles: one all-reduce for all five.
  double v[5] = {static_cast<double>(shard.images), static_cast<double>(shard.correct1),
                 static_cast<double>(shard.correct5), static_cast<double>(shard.skipped), shard.loss_sum};
  dist().allreduce_sum(v, 5);
  EvalResult m;
  m.images = static_cast<int64_t>(v[0]);
  m.correct1 = static_cast<int64_t>(v[1]);
  m.correct5 = static_cast<int64_t>(v[2]);
  m.skipped = static_cast<int64_t>(v[3]);
  m.loss_sum = v[4];
  finish(m);
  return m;
}

}  // namespace vt
