#!/usr/bin/env python3
"""Reference fixtures for the shared backbone (docs/design.md §3).

Implements, in PyTorch (float64 arithmetic on float32-representable values),
the DeiT and DiT transformer stacks of vtrain for each norm scheme:

  pre                : timm / DiT Pre-Norm blocks
  post               : Post-Norm blocks, x = norm_k(x + F_k(x)) per sublayer
                       (names norm1/norm2 as in timm, applied AFTER the
                       residual add; DiT: non-affine norms, F_k input is
                       modulate(x, shift_k, scale_k), output gated)
  siamese            : SiameseNorm as released in Qwen-Applications/SiameseNorm
                       (deit-model-siamesenorm.py, dit-model-siamesenorm.py)
  siamese_noinput    : siamese without the normalized input (input_norm_k /
                       norm_k dropped; DiT still modulates)
  siamese_nodepth    : siamese with c_l = 1
  mixln              : Mix-LN (arXiv 2412.13795): the first floor(alpha * L)
                       blocks Post-Norm, the rest Pre-Norm, one stream; final
                       norm as Pre (alpha = MIXLN_ALPHA so both kinds occur)
  deepnorm           : DeepNet (arXiv 2203.00555): x = norm_k(alpha * x + F_k(x)),
                       alpha = (2L)^(1/4)
  residual           : ResiDual (arXiv 2304.14802): x = norm_k(x + F_k(x)),
                       d = d + F_k(x), x = d = h at the input; out x + dual_norm(d)
  hybrid             : HybridNorm (arXiv 2503.04598): x = x + Attn_QKVNorm(x)
                       (q, k, v LayerNorm'ed over head_dim after the projection,
                       attn.{q,k,v}_norm), n = norm2(x), x = n + F_2(n); final
                       norm as Pre
  spannorm           : SpanNorm (arXiv 2601.22580) as read from its abstract
                       (not the authors' code): a = norm1(x + Attn(x)),
                       b = norm2(a + FFN(a)), x = x + alpha * b, alpha = 1/sqrt(L);
                       final norm as Pre. DiT: gate_msa on Attn as Post-Norm,
                       gate_mlp on the span (x = x + alpha * gate_mlp * b)

DeiT stack: tokens h [B,T,D] -> blocks -> out
    pre, mixln, hybrid, spannorm: norm(stream);  post, deepnorm: x;
    siamese: final_norm(pre_norm(x) + post_norm(y));  residual: x + dual_norm(d)
DiT stack: tokens h [B,T,D], conditioning c [B,D] -> blocks -> out
    pre/post/mixln/deepnorm/hybrid/spannorm: the stream;  siamese: postnorm(x) + prenorm(y);
    residual: x + LN(d) (non-affine, as DiT's block norms)

Every parameter (adaLN and LayerNorm affine included) is random and
non-trivial so that no gradient is trivially zero. No drop-path.
Loss = sum(out * R) for a fixed random R (saved as "loss_weight").

Writes tests/fixtures/backbone_{deit,dit}_{scheme}.safetensors with keys:
  <state-dict name>            parameters
  input.h, input.c (DiT)       inputs
  output                       out
  loss_weight                  R
  grad.input.h, grad.input.c   dloss/dinputs
  grad.<state-dict name>       dloss/dparam
and metadata (dims, scheme, switches, gelu kind, eps).
"""
import math
import os
import sys

import torch
from safetensors.torch import save_file

# D = 12 (not 32; also not a multiple of 8, exercising vector tails) keeps the
# fixtures (parameters + gradients) under 100 KB each.
D, H, L, T, B, MLP_RATIO, EPS = 12, 2, 3, 5, 2, 4, 1e-6
DH = D // H
MIXLN_ALPHA = 0.5  # floor(0.5 * 3) = 1 Post block, then 2 Pre blocks
SCHEMES = {
    "pre": ("pre", True, True),
    "post": ("post", True, True),
    "siamese": ("siamese", True, True),
    "siamese_noinput": ("siamese", False, True),
    "siamese_nodepth": ("siamese", True, False),
}
# Added later; seeded separately so the fixtures above stay byte-identical.
NEW_SCHEMES = {
    "mixln": ("mixln", True, True),
    "deepnorm": ("deepnorm", True, True),
    "residual": ("residual", True, True),
    "hybrid": ("hybrid", True, True),
}
# Added after those; seeded separately again.
SPAN_SCHEMES = {
    "spannorm": ("spannorm", True, True),
}


class Params:
    """Named float64 leaf tensors whose values are exactly float32."""

    def __init__(self, gen):
        self.gen = gen
        self.p = {}

    def _new(self, name, shape, mean, std):
        v = (torch.randn(*shape, generator=self.gen) * std + mean).float().double()
        v.requires_grad_(True)
        self.p[name] = v
        return v

    def linear(self, name, n_out, n_in):
        self._new(name + ".weight", (n_out, n_in), 0.0, 1.0 / math.sqrt(n_in))
        self._new(name + ".bias", (n_out,), 0.0, 0.1)

    def norm(self, name, size=D):
        self._new(name + ".weight", (size,), 1.0, 0.2)
        self._new(name + ".bias", (size,), 0.0, 0.1)

    def __getitem__(self, k):
        return self.p[k]


def ln(x, P=None, name=None):
    n = x.shape[-1]
    if name is None:
        return torch.nn.functional.layer_norm(x, (n,), eps=EPS)
    return torch.nn.functional.layer_norm(x, (n,), P[name + ".weight"], P[name + ".bias"], eps=EPS)


def lin(x, P, name):
    return x @ P[name + ".weight"].t() + P[name + ".bias"]


def attn(x, P, pfx, qkv_norm=False):
    Bx, N, C = x.shape
    qkv = lin(x, P, pfx + "attn.qkv").reshape(Bx, N, 3, H, C // H).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    if qkv_norm:  # HybridNorm's QKV-Norm, per head as timm's q_norm/k_norm
        q, k, v = (ln(t, P, pfx + f"attn.{n}_norm") for t, n in ((q, "q"), (k, "k"), (v, "v")))
    a = ((q @ k.transpose(-2, -1)) * (C // H) ** -0.5).softmax(dim=-1)
    o = (a @ v).transpose(1, 2).reshape(Bx, N, C)
    return lin(o, P, pfx + "attn.proj")


def mlp(x, P, pfx, gelu):
    h = torch.nn.functional.gelu(lin(x, P, pfx + "mlp.fc1"), approximate=gelu)
    return lin(h, P, pfx + "mlp.fc2")


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


def build_params(variant, scheme, normalized_input, gen):
    P = Params(gen)
    for l in range(L):
        b = f"blocks.{l}."
        if scheme == "hybrid":
            if variant == "deit":
                P.norm(b + "norm2")
            for n in ("q", "k", "v"):
                P.norm(b + f"attn.{n}_norm", DH)
        elif variant == "deit":
            if scheme in ("pre", "post", "mixln", "deepnorm", "residual", "spannorm"):
                P.norm(b + "norm1")
                P.norm(b + "norm2")
            else:
                for k in (1, 2):
                    P.norm(b + f"post_norm{k}")
                    P.norm(b + f"pre_norm{k}")
                    if normalized_input:
                        P.norm(b + f"input_norm{k}")
        else:
            if scheme == "siamese":
                for k in (1, 2):
                    P.norm(b + f"postnorm{k}")
                    P.norm(b + f"prenorm{k}")
        P.linear(b + "attn.qkv", 3 * D, D)
        P.linear(b + "attn.proj", D, D)
        P.linear(b + "mlp.fc1", MLP_RATIO * D, D)
        P.linear(b + "mlp.fc2", D, MLP_RATIO * D)
        if variant == "dit":
            P.linear(b + "adaLN_modulation.1", 6 * D, D)
    if variant == "deit":
        if scheme in ("pre", "mixln", "hybrid", "spannorm"):
            P.norm("norm")
        elif scheme == "residual":
            P.norm("dual_norm")
        elif scheme == "siamese":
            for n in ("pre_norm", "post_norm", "final_norm"):
                P.norm(n)
    elif scheme == "siamese":
        P.norm("postnorm")
        P.norm("prenorm")
    return P


def spannorm_deit(h, P, gelu):
    # One identity path spanning the block; Post-Norm inside it.
    alpha = 1.0 / math.sqrt(L)
    x = h
    for l in range(L):
        b = f"blocks.{l}."
        a = ln(x + attn(x, P, b), P, b + "norm1")
        out = ln(a + mlp(a, P, b, gelu), P, b + "norm2")
        x = x + alpha * out
    return ln(x, P, "norm")


def spannorm_dit(h, cond, P, gelu):
    # adaLN-Zero: modulate each sublayer's input, gate_msa on Attn (as Post),
    # gate_mlp on the spanning branch so that zero gates give the identity.
    alpha = 1.0 / math.sqrt(L)
    x = h
    for l in range(L):
        b = f"blocks.{l}."
        shift1, scale1, gate1, shift2, scale2, gate2 = lin(
            torch.nn.functional.silu(cond), P, b + "adaLN_modulation.1").chunk(6, dim=1)
        a = ln(x + gate1.unsqueeze(1) * attn(modulate(x, shift1, scale1), P, b))
        out = ln(a + mlp(modulate(a, shift2, scale2), P, b, gelu))
        x = x + alpha * gate2.unsqueeze(1) * out
    return x


def deit_forward(h, P, scheme, ni, ds):
    gelu = "none"
    if scheme == "spannorm":
        return spannorm_deit(h, P, gelu)
    if scheme == "mixln":
        x = h
        for l in range(L):
            b = f"blocks.{l}."
            if l < math.floor(MIXLN_ALPHA * L):
                x = ln(x + attn(x, P, b), P, b + "norm1")
                x = ln(x + mlp(x, P, b, gelu), P, b + "norm2")
            else:
                x = x + attn(ln(x, P, b + "norm1"), P, b)
                x = x + mlp(ln(x, P, b + "norm2"), P, b, gelu)
        return ln(x, P, "norm")
    if scheme == "deepnorm":
        alpha = (2 * L) ** 0.25
        x = h
        for l in range(L):
            b = f"blocks.{l}."
            x = ln(alpha * x + attn(x, P, b), P, b + "norm1")
            x = ln(alpha * x + mlp(x, P, b, gelu), P, b + "norm2")
        return x
    if scheme == "residual":
        x, d = h, h
        for l in range(L):
            b = f"blocks.{l}."
            for k, F in ((1, lambda z: attn(z, P, b)), (2, lambda z: mlp(z, P, b, gelu))):
                o = F(x)
                x, d = ln(x + o, P, b + f"norm{k}"), d + o
        return x + ln(d, P, "dual_norm")
    if scheme == "hybrid":
        x = h
        for l in range(L):
            b = f"blocks.{l}."
            x = x + attn(x, P, b, qkv_norm=True)
            n = ln(x, P, b + "norm2")
            x = n + mlp(n, P, b, gelu)
        return ln(x, P, "norm")
    if scheme == "pre":
        y = h
        for l in range(L):
            b = f"blocks.{l}."
            y = y + attn(ln(y, P, b + "norm1"), P, b)
            y = y + mlp(ln(y, P, b + "norm2"), P, b, gelu)
        return ln(y, P, "norm")
    if scheme == "post":
        x = h
        for l in range(L):
            b = f"blocks.{l}."
            x = ln(x + attn(x, P, b), P, b + "norm1")
            x = ln(x + mlp(x, P, b, gelu), P, b + "norm2")
        return x
    x, y = h, h
    for l in range(L):
        b = f"blocks.{l}."
        c = math.sqrt(2 * (l + 1)) if ds else 1.0
        for k, F in ((1, lambda z: attn(z, P, b)), (2, lambda z: mlp(z, P, b, gelu))):
            x = ln(x, P, b + f"post_norm{k}")
            s = x + ln(y, P, b + f"pre_norm{k}")
            z = ln(s, P, b + f"input_norm{k}") if ni else s
            o = F(z)
            x, y = x + o / c, y + o
    return ln(ln(x, P, "pre_norm") + ln(y, P, "post_norm"), P, "final_norm")


def dit_forward(h, cond, P, scheme, ni, ds):
    gelu = "tanh"
    if scheme == "spannorm":
        return spannorm_dit(h, cond, P, gelu)
    if scheme in ("pre", "post", "mixln", "deepnorm"):
        alpha = (2 * L) ** 0.25 if scheme == "deepnorm" else 1.0
        x = h
        for l in range(L):
            b = f"blocks.{l}."
            m = lin(torch.nn.functional.silu(cond), P, b + "adaLN_modulation.1").chunk(6, dim=1)
            subs = ((lambda z: attn(z, P, b), m[0], m[1], m[2]),
                    (lambda z: mlp(z, P, b, gelu), m[3], m[4], m[5]))
            post = scheme in ("post", "deepnorm") or (scheme == "mixln" and l < math.floor(MIXLN_ALPHA * L))
            for F, shift, scale, gate in subs:
                if not post:
                    x = x + gate.unsqueeze(1) * F(modulate(ln(x), shift, scale))
                else:
                    x = ln(alpha * x + gate.unsqueeze(1) * F(modulate(x, shift, scale)))
        return x
    if scheme in ("residual", "hybrid"):
        x, d = h, h
        for l in range(L):
            b = f"blocks.{l}."
            m = lin(torch.nn.functional.silu(cond), P, b + "adaLN_modulation.1").chunk(6, dim=1)
            g1, g2 = m[2].unsqueeze(1), m[5].unsqueeze(1)
            if scheme == "residual":
                o = g1 * attn(modulate(x, m[0], m[1]), P, b)
                x, d = ln(x + o), d + o
                o = g2 * mlp(modulate(x, m[3], m[4]), P, b, gelu)
                x, d = ln(x + o), d + o
            else:
                x = x + g1 * attn(modulate(x, m[0], m[1]), P, b, qkv_norm=True)
                n = ln(x)
                x = n + g2 * mlp(modulate(n, m[3], m[4]), P, b, gelu)
        return x + ln(d) if scheme == "residual" else x
    x, y = h, h
    for l in range(L):
        b = f"blocks.{l}."
        m = lin(torch.nn.functional.silu(cond), P, b + "adaLN_modulation.1").chunk(6, dim=1)
        gm = math.sqrt(2 * (l + 1)) if ds else 1.0
        subs = ((1, lambda z: attn(z, P, b), m[0], m[1], m[2]),
                (2, lambda z: mlp(z, P, b, gelu), m[3], m[4], m[5]))
        for k, F, shift, scale, gate in subs:
            u = ln(x, P, b + f"postnorm{k}")
            s = u + ln(y, P, b + f"prenorm{k}")
            z = modulate(ln(s) if ni else s, shift, scale)
            o = gate.unsqueeze(1) * F(z)
            x, y = u + o / gm, y + o
    return ln(x, P, "postnorm") + ln(y, P, "prenorm")


def make(variant, name, out_dir, seed):
    scheme, ni, ds = {**SCHEMES, **NEW_SCHEMES, **SPAN_SCHEMES}[name]
    gen = torch.Generator().manual_seed(seed)
    P = build_params(variant, scheme, ni, gen)
    h = torch.randn(B, T, D, generator=gen).float().double().requires_grad_(True)
    cond = torch.randn(B, D, generator=gen).float().double().requires_grad_(True)
    R = torch.randn(B, T, D, generator=gen).float().double()
    if variant == "deit":
        out = deit_forward(h, P, scheme, ni, ds)
        inputs = {"input.h": h}
    else:
        out = dit_forward(h, cond, P, scheme, ni, ds)
        inputs = {"input.h": h, "input.c": cond}
    loss = (out * R).sum()
    leaves = list(inputs.items()) + list(P.p.items())
    grads = torch.autograd.grad(loss, [v for _, v in leaves])
    t = {}
    for (k, v), g in zip(leaves, grads):
        t[k] = v.detach().float().contiguous()
        t["grad." + k] = g.detach().float().contiguous()
    t["output"] = out.detach().float().contiguous()
    t["loss_weight"] = R.float().contiguous()
    meta = {
        "variant": variant, "scheme": scheme, "normalized_input": str(ni).lower(),
        "depth_scaling": str(ds).lower(), "dim": str(D), "heads": str(H), "depth": str(L),
        "tokens": str(T), "batch": str(B), "mlp_ratio": str(MLP_RATIO), "eps": str(EPS),
        "gelu": "tanh" if variant == "dit" else "erf", "loss": "sum(output * loss_weight)",
    }
    if scheme == "mixln":
        meta["mixln_alpha"] = str(MIXLN_ALPHA)
    path = os.path.join(out_dir, f"backbone_{variant}_{name}.safetensors")
    save_file(t, path, metadata=meta)
    return path


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests", "fixtures")
    os.makedirs(out_dir, exist_ok=True)
    seed = 1234
    for variant in ("deit", "dit"):
        for name in SCHEMES:
            seed += 1
            print(make(variant, name, out_dir, seed))
    seed = 5678
    for variant in ("deit", "dit"):
        for name in NEW_SCHEMES:
            seed += 1
            print(make(variant, name, out_dir, seed))
    seed = 9012
    for variant in ("deit", "dit"):
        for name in SPAN_SCHEMES:
            seed += 1
            print(make(variant, name, out_dir, seed))


if __name__ == "__main__":
    main()
