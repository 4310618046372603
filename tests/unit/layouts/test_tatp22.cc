// SPDX-License-Identifier: Apache-2.0
// The tatp22/linformer-pytorch layout (tools/convert/layouts/tatp22.cc): sharing read from aliasing.
#include "layout_checkpoint.h"
#include "linfer/format/kinds/linformer.h"

namespace linfer::testing {
namespace {

const char* kTatp22Config = R"({"num_tokens": 10, "input_size": 8, "channels": 8, "dim_k": 4, "dim_ff": 16,
                          "nhead": 2, "depth": 1, "parameter_sharing": "headwise"})";

// A LinformerLM of kTatp22Config whose heads share one E and one F (headwise: head 1's are head 0's).
LayoutCheckpoint tatp22_checkpoint() {
  LayoutCheckpoint ck;
  ck.add("to_token_emb.weight", {10, 8});
  ck.linear("to_logits", 10, 8);
  const std::string a = "linformer.seq.0.", f = "linformer.seq.1.";
  for (int h = 0; h < 2; ++h)
    for (const char* w : {"to_q", "to_k", "to_v"}) ck.add(a + "fn." + w + "." + std::to_string(h) + ".weight", {4, 8});
  ck.linear(a + "fn.w_o", 8, 8);
  ck.linear(a + "fn.heads.0.E", 4, 8);
  ck.linear(a + "fn.heads.0.F", 4, 8);
  for (const char* w : {"E.weight", "E.bias", "F.weight", "F.bias"})
    ck.alias(a + "fn.heads.1." + w, a + "fn.heads.0." + w);
  ck.norm(a + "norm", 8);
  ck.linear(f + "fn.w_1", 16, 8);
  ck.linear(f + "fn.w_2", 8, 16);
  ck.norm(f + "norm", 8);
  return ck;
}

TEST_SUITE("tatp22") {
  TEST_CASE("tatp22 layout: detected and mapped, headwise sharing from the storages") {
    LayoutCheckpoint ck = tatp22_checkpoint();
    check_detect_and_unused(ck, "tatp22", kTatp22Config);
    MappedModel out;
    REQUIRE(ck.map("tatp22", kTatp22Config, &out).ok());
    const EncoderConfig& c = out.desc.config;
    CHECK(c.head_dim == 4);
    CHECK(linformer_fields(c).projection_sharing == ProjectionSharing::Headwise);
    CHECK(c.positions == PositionKind::Sinusoidal);
    CHECK(c.norm_placement == NormPlacement::Post);
    CHECK(out.desc.layers[0].q.weight.shape == Shape{8, 8});  // two [4, 8] heads stacked
    CHECK(out.desc.layers[0].kind_tensors[LinformerTensors::kProjK].shape == Shape{4, 8});
    CHECK(out.desc.layers[0].kind_tensors[LinformerTensors::kProjVBias].shape == Shape{4});
    REQUIRE(!out.notes.empty());
    CHECK(out.notes[0] == "sharing detected from storage aliasing: headwise");
  }

  TEST_CASE("tatp22 layout: refusals") {
    LayoutCheckpoint ck = tatp22_checkpoint();
    MappedModel declared, method, missing;
    CHECK(ck.map("tatp22", R"({"num_tokens": 10, "input_size": 8, "channels": 8, "dim_k": 4, "dim_ff": 16,
                               "nhead": 2, "depth": 1, "parameter_sharing": "none"})",
                 &declared)
              .message() ==
          "--config says parameter_sharing 'none' but the checkpoint's storage sharing is 'headwise'");
    CHECK(ck.map("tatp22", R"({"method": "no_params"})", &method).message().rfind("tatp22 method 'no_params'", 0) == 0);
    ck.remove("linformer.seq.0.fn.heads.1.F.weight");
    CHECK(ck.map("tatp22", kTatp22Config, &missing).message() ==
          "tensor 'linformer.seq.0.fn.heads.1.F.weight' is missing");
  }
}

}  // namespace
}  // namespace linfer::testing
