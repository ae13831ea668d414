#!/usr/bin/env python3
"""Reference fixture for diffusion/dit_model (a tiny DiT, pre-norm and siamese).

Re-implements the DiT repository's models.py (facebookresearch/DiT) and the
released SiameseNorm DiT (Qwen-Applications/SiameseNorm dit-model-siamesenorm.py,
restated in docs/design.md §3) functionally in float64 torch, with every
parameter random and non-zero (adaLN and final layers included) so that no
gradient is trivially zero. Loss = sum(out * R) for a fixed random R.

Writes tests/fixtures/diffusion/dit_{pre,siamese}.safetensors:
  <state-dict name>     parameters (pos_embed: the frozen 2D sin-cos table)
  input.x, input.t, input.y, loss_weight, output
  grad.<name>           dloss/dparam for every trainable parameter
with the configuration in the metadata.
"""
import math
import os
import sys

import numpy as np
import torch
from safetensors.torch import save_file

CFG = dict(input_size=8, in_channels=2, patch=2, hidden=16, depth=2, heads=2, num_classes=5, batch=3)
EPS = 1e-6


def pos_embed_2d(D, g):
    def one_d(d, pos):
        omega = 1.0 / 10000 ** (np.arange(d // 2, dtype=np.float64) / (d / 2.0))
        out = np.einsum("m,d->md", pos.reshape(-1), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)
    gw, gh = np.meshgrid(np.arange(g, dtype=np.float64), np.arange(g, dtype=np.float64))
    return np.concatenate([one_d(D // 2, gw), one_d(D // 2, gh)], axis=1)[None]


def timestep_embedding(t, dim=256, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(0, half, dtype=torch.float32) / half)
    args = (t[:, None].float() * freqs[None]).double()
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def ln(x, P=None, name=None):
    D = x.shape[-1]
    if name is None:
        return torch.nn.functional.layer_norm(x, (D,), eps=EPS)
    return torch.nn.functional.layer_norm(x, (D,), P[name + ".weight"], P[name + ".bias"], eps=EPS)


def lin(x, P, name):
    return x @ P[name + ".weight"].t() + P[name + ".bias"]


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


def attn(x, P, pfx, H):
    B, N, C = x.shape
    qkv = lin(x, P, pfx + "attn.qkv").reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    a = ((q @ k.transpose(-2, -1)) * (C // H) ** -0.5).softmax(dim=-1)
    return lin((a @ v).transpose(1, 2).reshape(B, N, C), P, pfx + "attn.proj")


def mlp(x, P, pfx):
    return lin(torch.nn.functional.gelu(lin(x, P, pfx + "mlp.fc1"), approximate="tanh"), P, pfx + "mlp.fc2")


def forward(P, x, t, y, scheme):
    c = CFG
    D, p, C, S = c["hidden"], c["patch"], c["in_channels"], c["input_size"]
    h = torch.nn.functional.conv2d(x, P["x_embedder.proj.weight"], P["x_embedder.proj.bias"], stride=p)
    h = h.flatten(2).transpose(1, 2) + P["pos_embed"]
    temb = lin(torch.nn.functional.silu(lin(timestep_embedding(t), P, "t_embedder.mlp.0")), P, "t_embedder.mlp.2")
    cond = temb + P["y_embedder.embedding_table.weight"][y]
    sc = torch.nn.functional.silu(cond)
    if scheme == "pre":
        for l in range(c["depth"]):
            b = f"blocks.{l}."
            m = lin(sc, P, b + "adaLN_modulation.1").chunk(6, dim=1)
            h = h + m[2].unsqueeze(1) * attn(modulate(ln(h), m[0], m[1]), P, b, c["heads"])
            h = h + m[5].unsqueeze(1) * mlp(modulate(ln(h), m[3], m[4]), P, b)
        o = h
    else:
        xs, ys = h, h
        for l in range(c["depth"]):
            b = f"blocks.{l}."
            m = lin(sc, P, b + "adaLN_modulation.1").chunk(6, dim=1)
            cl = math.sqrt(2 * (l + 1))
            for k, F, (sh, sc_, g) in ((1, lambda z: attn(z, P, b, c["heads"]), m[0:3]),
                                       (2, lambda z: mlp(z, P, b), m[3:6])):
                u = ln(xs, P, b + f"postnorm{k}")
                s = u + ln(ys, P, b + f"prenorm{k}")
                out = g.unsqueeze(1) * F(modulate(ln(s), sh, sc_))
                xs, ys = u + out / cl, ys + out
        o = ln(xs, P, "postnorm") + ln(ys, P, "prenorm")
    shift, scale = lin(sc, P, "final_layer.adaLN_modulation.1").chunk(2, dim=1)
    tok = lin(modulate(ln(o), shift, scale), P, "final_layer.linear")
    # DiT unpatchify: nhwpqc -> nchpwq.
    B, g, Co = x.shape[0], S // p, 2 * C
    img = tok.reshape(B, g, g, p, p, Co)
    img = torch.einsum("nhwpqc->nchpwq", img)
    return img.reshape(B, Co, S, S)


def make(scheme, out_dir, seed):
    c = CFG
    D, p, C, L = c["hidden"], c["patch"], c["in_channels"], c["depth"]
    g = torch.Generator().manual_seed(seed)
    P = {}

    def new(name, shape, std, mean=0.0):
        P[name] = (torch.randn(*shape, generator=g) * std + mean).float().double().requires_grad_(True)

    def linear(name, o, i):
        new(name + ".weight", (o, i), 1.0 / math.sqrt(i))
        new(name + ".bias", (o,), 0.1)

    def norm(name):
        new(name + ".weight", (D,), 0.2, 1.0)
        new(name + ".bias", (D,), 0.1)

    new("x_embedder.proj.weight", (D, C, p, p), 1.0 / math.sqrt(C * p * p))
    new("x_embedder.proj.bias", (D,), 0.1)
    linear("t_embedder.mlp.0", D, 256)
    linear("t_embedder.mlp.2", D, D)
    new("y_embedder.embedding_table.weight", (c["num_classes"] + 1, D), 0.5)
    for l in range(L):
        b = f"blocks.{l}."
        if scheme == "siamese":
            for k in (1, 2):
                norm(b + f"postnorm{k}")
                norm(b + f"prenorm{k}")
        linear(b + "attn.qkv", 3 * D, D)
        linear(b + "attn.proj", D, D)
        linear(b + "mlp.fc1", 4 * D, D)
        linear(b + "mlp.fc2", D, 4 * D)
        linear(b + "adaLN_modulation.1", 6 * D, D)
    if scheme == "siamese":
        norm("postnorm")
        norm("prenorm")
    linear("final_layer.adaLN_modulation.1", 2 * D, D)
    linear("final_layer.linear", p * p * 2 * C, D)
    pos = torch.from_numpy(pos_embed_2d(D, c["input_size"] // p)).float().double()

    B = c["batch"]
    x = torch.randn(B, C, c["input_size"], c["input_size"], generator=g).float().double()
    t = torch.tensor([0.0, 17.0, 999.0])
    y = torch.tensor([1, c["num_classes"], 3])  # the null class in the middle
    R = torch.randn(B, 2 * C, c["input_size"], c["input_size"], generator=g).float().double()
    out = forward({**P, "pos_embed": pos}, x, t, y, scheme)
    names = list(P)
    grads = torch.autograd.grad((out * R).sum(), [P[n] for n in names])
    T = {n: P[n].detach().float().contiguous() for n in names}
    T["pos_embed"] = pos.float().contiguous()
    for n, gr in zip(names, grads):
        T["grad." + n] = gr.float().contiguous()
    T.update({"input.x": x.float(), "input.t": t.float(), "input.y": y.to(torch.int32),
              "loss_weight": R.float(), "output": out.detach().float().contiguous()})
    meta = {k: str(v) for k, v in c.items()}
    meta.update(scheme=scheme, learn_sigma="true", loss="sum(output * loss_weight)")
    path = os.path.join(out_dir, f"dit_{scheme}.safetensors")
    save_file(T, path, metadata=meta)
    print(path, os.path.getsize(path), "bytes")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests", "fixtures", "diffusion")
    os.makedirs(out_dir, exist_ok=True)
    make("pre", out_dir, 11)
    make("siamese", out_dir, 12)


if __name__ == "__main__":
    main()
