// The paper's mechanism measurements (arXiv 2602.08064) as metrics scalars,
// the same for vtrain and dittrain: log.stream_rms (Fig. 2) and
// log.norm_scales (the streams' relative contribution).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "backbone/backbone.h"

namespace vt {

// "stream_rms/x/<l>" and "stream_rms/y/<l>" for each active block l, from
// Backbone::stream_rms() of the last forward (RMS over all elements of the
// batch, dimensionless); a stream a block does not carry (NaN) is left out.
// Throws std::logic_error before the first forward.
std::vector<std::pair<std::string, double>> stream_rms_scalars(const Backbone& backbone);

// "norm_scale/<state-dict name>" = mean |weight| of each affine LayerNorm,
// Backbone::norm_scales() (empty for DiT's non-affine block norms).
std::vector<std::pair<std::string, double>> norm_scale_scalars(const Backbone& backbone);

}  // namespace vt
