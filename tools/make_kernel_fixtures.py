#!/usr/bin/env python3
"""Reference tensors for tests/kernels/test_upstream_parity.cpp, from
PyTorch/numpy.

Writes tests/fixtures/kernels_upstream_parity.safetensors. Each reference
below is the upstream code copied verbatim (DiT models.py, MAE/DiT
pos_embed, timm's Attention), so the C++ ops are checked against the
implementations users compare with, not against a re-derivation.

Usage: python3 tools/make_kernel_fixtures.py [out.safetensors]
"""
import math
import os
import sys

import numpy as np
import torch
from safetensors.torch import save_file


# --- DiT models.py: TimestepEmbedder.timestep_embedding (verbatim) ---------
def timestep_embedding(t, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(
        -math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float32) / half
    ).to(device=t.device)
    args = t[:, None].float() * freqs[None]
    embedding = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        embedding = torch.cat([embedding, torch.zeros_like(embedding[:, :1])], dim=-1)
    return embedding


# --- DiT models.py / MAE util/pos_embed.py (verbatim) -----------------------
def get_2d_sincos_pos_embed(embed_dim, grid_size):
    grid_h = np.arange(grid_size, dtype=np.float32)
    grid_w = np.arange(grid_size, dtype=np.float32)
    grid = np.meshgrid(grid_w, grid_h)  # here w goes first
    grid = np.stack(grid, axis=0)
    grid = grid.reshape([2, 1, grid_size, grid_size])
    return get_2d_sincos_pos_embed_from_grid(embed_dim, grid)


def get_2d_sincos_pos_embed_from_grid(embed_dim, grid):
    assert embed_dim % 2 == 0
    emb_h = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[0])  # (H*W, D/2)
    emb_w = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[1])  # (H*W, D/2)
    return np.concatenate([emb_h, emb_w], axis=1)  # (H*W, D)


def get_1d_sincos_pos_embed_from_grid(embed_dim, pos):
    assert embed_dim % 2 == 0
    omega = np.arange(embed_dim // 2, dtype=np.float64)
    omega /= embed_dim / 2.
    omega = 1. / 10000**omega  # (D/2,)
    pos = pos.reshape(-1)  # (M,)
    out = np.einsum('m,d->md', pos, omega)  # (M, D/2), outer product
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)  # (M, D)


# --- DiT models.py: DiT.unpatchify (verbatim, c and p passed in) ------------
def unpatchify(x, c, p):
    h = w = int(x.shape[1] ** 0.5)
    assert h * w == x.shape[1]
    x = x.reshape(shape=(x.shape[0], h, w, p, p, c))
    x = torch.einsum('nhwpqc->nchpwq', x)
    return x.reshape(shape=(x.shape[0], c, h * p, h * p))


# --- timm vision_transformer.Attention.forward, qkv given, proj omitted -----
def attention(qkv, num_heads):
    B, N, C3 = qkv.shape
    C = C3 // 3
    qkv = qkv.reshape(B, N, 3, num_heads, C // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    attn = (q @ k.transpose(-2, -1)) * (C // num_heads) ** -0.5
    attn = attn.softmax(dim=-1)
    return (attn @ v).transpose(1, 2).reshape(B, N, C)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, '..', 'tests', 'fixtures', 'kernels_upstream_parity.safetensors')
    g = torch.Generator().manual_seed(0)
    t = {}

    ts = torch.tensor([0.0, 1.0, 3.5, 250.0, 500.25, 999.0], dtype=torch.float32)
    t['timestep.t'] = ts
    t['timestep.emb256'] = timestep_embedding(ts, 256)
    t['timestep.emb7'] = timestep_embedding(ts, 7)
    t['pos2d.grid4_d32'] = torch.from_numpy(get_2d_sincos_pos_embed(32, 4)).float()

    C, p = 3, 2
    tok = torch.randn(2, 9, p * p * C, generator=g)
    t['unpatchify.tokens'] = tok
    t['unpatchify.image'] = unpatchify(tok, C, p)

    img = torch.randn(2, C, 6, 6, generator=g)
    w = torch.randn(5, C, p, p, generator=g)
    t['conv.image'] = img
    t['conv.weight'] = w
    t['conv.out'] = torch.nn.functional.conv2d(img, w, stride=p).flatten(2).transpose(1, 2).contiguous()

    # float32 inputs (what the C++ test reads), reference computed in float64.
    qkv = torch.randn(2, 5, 3 * 8, generator=g).double().requires_grad_(True)
    r = torch.randn(2, 5, 8, generator=g).double()
    o = attention(qkv, 2)
    (o * r).sum().backward()
    t['attn.qkv'] = qkv.detach().float()
    t['attn.r'] = r.float()
    t['attn.out'] = o.detach().float()
    t['attn.dqkv'] = qkv.grad.float()

    save_file({k: v.contiguous() for k, v in t.items()}, out)
    print('wrote', out, len(t), 'tensors')


if __name__ == '__main__':
    main()
