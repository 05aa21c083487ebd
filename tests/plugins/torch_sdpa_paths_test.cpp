// What the libtorch adapter's backward (plugins/torch/torch_backward.cpp) relies on,
// checked against libtorch 1.13 itself: at::_scaled_dot_product_attention called on
// tensors that require grad (what backward does, to let autograd record the graph)
// returns bit for bit what it returns on plain tensors (what forward does) and what
// its math path, at::_scaled_dot_product_attention_math, returns. So the gradients
// the adapter hands back are the derivatives of the very forward the checker judged.
// Every dtype the adapter supports (f32, f64, bf16), with and without a bool mask,
// is_causal, and the float mask (the bias). A plain program (it links libtorch, whose
// target lives in plugins/torch/): exit 0 when every comparison holds, 1 otherwise.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/ops/_scaled_dot_product_attention.h>
#include <ATen/ops/_scaled_dot_product_attention_math.h>

#include <cstdio>
#include <tuple>

int main() {
  at::manual_seed(20261130);
  at::set_num_threads(1);
  int failures = 0;
  for (at::ScalarType type : {at::kFloat, at::kDouble, at::kBFloat16})
    for (int attn_mask = 0; attn_mask < 3; ++attn_mask)  // none, bool, float
      for (bool is_causal : {false, true}) {
        if (attn_mask != 0 && is_causal) continue;  // 1.13 refuses both together
        // q [2, 3, 7, 16], k [2, 3, 9, 16], v [2, 3, 9, 5]: q_len != kv_len, value_dim != head_dim.
        const at::Tensor q = at::randn({2, 3, 7, 16}).to(type), k = at::randn({2, 3, 9, 16}).to(type),
                         v = at::randn({2, 3, 9, 5}).to(type);
        c10::optional<at::Tensor> mask;
        if (attn_mask == 1) mask = at::rand({2, 3, 7, 9}).gt(0.3);
        if (attn_mask == 2) mask = at::randn({2, 3, 7, 9}).to(type);
        const at::Tensor plain = std::get<0>(at::_scaled_dot_product_attention(q, k, v, mask, 0.0, false, is_causal));
        const at::Tensor math =
            std::get<0>(at::_scaled_dot_product_attention_math(q, k, v, mask, 0.0, false, is_causal));
        const at::Tensor qg = q.clone().requires_grad_(true), kg = k.clone().requires_grad_(true),
                         vg = v.clone().requires_grad_(true);
        const at::Tensor recorded =
            std::get<0>(at::_scaled_dot_product_attention(qg, kg, vg, mask, 0.0, false, is_causal));
        const bool same_as_recorded = at::equal(plain, recorded.detach());
        const bool same_as_math = at::equal(plain, math);
        const bool has_graph = recorded.requires_grad();
        std::printf("%s attn_mask %s is_causal %d: plain == with requires_grad: %s, plain == math path: %s, graph: %s\n",
                    c10::toString(type), attn_mask == 0 ? "none" : attn_mask == 1 ? "bool" : "float", is_causal,
                    same_as_recorded ? "yes" : "NO", same_as_math ? "yes" : "NO", has_graph ? "yes" : "NO");
        failures += !same_as_recorded + !same_as_math + !has_graph;
      }
  return failures == 0 ? 0 : 1;
}
