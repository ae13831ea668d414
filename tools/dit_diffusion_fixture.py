#!/usr/bin/env python3
"""Reference fixture for diffusion/gaussian_diffusion (docs/recipes.md §8).

Re-implements, in float64 torch/numpy, the parts of the DiT repository's
diffusion package (facebookresearch/DiT diffusion/gaussian_diffusion.py,
respace.py, diffusion_utils.py) that vtrain ports:

  * linear beta schedule, T = 1000, and the derived arrays;
  * q_sample;
  * the training loss with learned-range variance: MSE on eps plus the VB term
    computed with the detached eps prediction (KL for t > 0, discretised
    Gaussian NLL for t = 0), and its gradient with respect to the model
    output (autograd);
  * space_timesteps for counts 1, 2, 3, 9, 27, 81, 250, 1000 and "ddim25",
    with the respaced betas;
  * one DDPM step and one DDIM step (eta 0.5) for fixed noise, on the full
    and on a respaced schedule;
  * classifier-free guidance combination (all noise channels, and DiT's
    3-channel behaviour);
  * timestep embedding (dim 16) and 2D sin-cos position embedding (4x4, 16).

Everything is stored as float32 in tests/fixtures/diffusion/diffusion.safetensors
(keys listed in main()); the C++ test compares within 1e-5 relative.
"""
import math
import os
import sys

import numpy as np
import torch
from safetensors.torch import save_file

T = 1000


def linear_betas():
    return np.linspace(1e-4, 0.02, T, dtype=np.float64)


def space_timesteps(num_timesteps, section_counts):
    """DiT respace.py, verbatim semantics."""
    if isinstance(section_counts, str):
        if section_counts.startswith("ddim"):
            desired = int(section_counts[len("ddim"):])
            for i in range(1, num_timesteps):
                if len(range(0, num_timesteps, i)) == desired:
                    return set(range(0, num_timesteps, i))
            raise ValueError(section_counts)
        section_counts = [int(x) for x in section_counts.split(",")]
    size_per = num_timesteps // len(section_counts)
    extra = num_timesteps % len(section_counts)
    start_idx = 0
    all_steps = []
    for i, section_count in enumerate(section_counts):
        size = size_per + (1 if i < extra else 0)
        frac_stride = 1 if section_count <= 1 else (size - 1) / (section_count - 1)
        cur_idx = 0.0
        taken = []
        for _ in range(section_count):
            taken.append(start_idx + round(cur_idx))
            cur_idx += frac_stride
        all_steps += taken
        start_idx += size
    return set(all_steps)


class Diffusion:
    def __init__(self, betas, timestep_map):
        self.betas = betas
        self.timestep_map = timestep_map
        alphas = 1.0 - betas
        self.ac = np.cumprod(alphas)
        self.ac_prev = np.append(1.0, self.ac[:-1])
        self.sqrt_ac = np.sqrt(self.ac)
        self.sqrt_1mac = np.sqrt(1.0 - self.ac)
        self.sqrt_recip_ac = np.sqrt(1.0 / self.ac)
        self.sqrt_recipm1_ac = np.sqrt(1.0 / self.ac - 1)
        self.post_var = betas * (1.0 - self.ac_prev) / (1.0 - self.ac)
        self.post_logvar = np.log(np.append(self.post_var[1], self.post_var[1:])) if len(self.post_var) > 1 \
            else np.array([])
        self.coef1 = betas * np.sqrt(self.ac_prev) / (1.0 - self.ac)
        self.coef2 = (1.0 - self.ac_prev) * np.sqrt(alphas) / (1.0 - self.ac)


def respaced(spec):
    base = Diffusion(linear_betas(), list(range(T)))
    use = space_timesteps(T, spec)
    last = 1.0
    nb, tmap = [], []
    for i, a in enumerate(base.ac):
        if i in use:
            nb.append(1 - a / last)
            last = a
            tmap.append(i)
    return Diffusion(np.array(nb), tmap)


def ext(arr, t, ndim):
    v = torch.from_numpy(np.asarray(arr)[t]).double()
    return v.reshape(-1, *([1] * (ndim - 1)))


def approx_std_normal_cdf(x):
    return 0.5 * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def disc_gauss_ll(x, means, log_scales):
    cx = x - means
    inv = torch.exp(-log_scales)
    cdf_plus = approx_std_normal_cdf(inv * (cx + 1.0 / 255.0))
    cdf_min = approx_std_normal_cdf(inv * (cx - 1.0 / 255.0))
    log_cdf_plus = torch.log(cdf_plus.clamp(min=1e-12))
    log_1m_cdf_min = torch.log((1.0 - cdf_min).clamp(min=1e-12))
    cdf_delta = cdf_plus - cdf_min
    return torch.where(x < -0.999, log_cdf_plus,
                       torch.where(x > 0.999, log_1m_cdf_min, torch.log(cdf_delta.clamp(min=1e-12))))


def normal_kl(m1, lv1, m2, lv2):
    return 0.5 * (-1.0 + lv2 - lv1 + torch.exp(lv1 - lv2) + (m1 - m2) ** 2 * torch.exp(-lv2))


def p_mean_var(d, model_out, x, t):
    C = x.shape[1]
    eps, v = model_out[:, :C], model_out[:, C:]
    min_log = ext(d.post_logvar, t, x.dim())
    max_log = ext(np.log(d.betas), t, x.dim())
    frac = (v + 1) / 2
    logvar = frac * max_log + (1 - frac) * min_log
    x0 = ext(d.sqrt_recip_ac, t, x.dim()) * x - ext(d.sqrt_recipm1_ac, t, x.dim()) * eps
    mean = ext(d.coef1, t, x.dim()) * x0 + ext(d.coef2, t, x.dim()) * x
    return mean, logvar, x0


def training_loss(d, model_out, x0, xt, noise, t):
    C = x0.shape[1]
    eps = model_out[:, :C]
    mse = ((noise - eps) ** 2).mean(dim=(1, 2, 3))
    frozen = torch.cat([eps.detach(), model_out[:, C:]], dim=1)
    true_mean = ext(d.coef1, t, 4) * x0 + ext(d.coef2, t, 4) * xt
    true_lv = ext(d.post_logvar, t, 4)
    mean, lv, _ = p_mean_var(d, frozen, xt, t)
    kl = normal_kl(true_mean, true_lv, mean, lv).mean(dim=(1, 2, 3)) / math.log(2.0)
    nll = -disc_gauss_ll(x0, mean, 0.5 * lv).mean(dim=(1, 2, 3)) / math.log(2.0)
    vb = torch.where(torch.from_numpy(np.asarray(t)) == 0, nll, kl)
    return mse, vb, mse + vb


def timestep_embedding(t, dim, max_period=10000):
    # DiT models.py, in float32 as the model runs it.
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(0, half, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args.double()), torch.sin(args.double())], dim=-1)


def pos_embed_2d(D, gh, gw):
    def one_d(d, pos):
        omega = np.arange(d // 2, dtype=np.float64) / (d / 2.0)
        omega = 1.0 / 10000 ** omega
        out = np.einsum("m,d->md", pos.reshape(-1), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)
    gy, gx = np.meshgrid(np.arange(gh, dtype=np.float64), np.arange(gw, dtype=np.float64), indexing="ij")
    emb_w = one_d(D // 2, gx)  # columns first, as DiT's grid[0] is the w coordinate
    emb_h = one_d(D // 2, gy)
    return np.concatenate([emb_w, emb_h], axis=1)


def f32(x):
    if isinstance(x, np.ndarray):
        x = torch.from_numpy(x)
    return x.detach().double().float().contiguous()


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests", "fixtures", "diffusion")
    os.makedirs(out_dir, exist_ok=True)
    g = torch.Generator().manual_seed(2026)
    out = {}
    full = Diffusion(linear_betas(), list(range(T)))
    for k, v in (("betas", full.betas), ("alphas_cumprod", full.ac), ("alphas_cumprod_prev", full.ac_prev),
                 ("posterior_variance", full.post_var), ("posterior_log_variance_clipped", full.post_logvar),
                 ("posterior_mean_coef1", full.coef1), ("posterior_mean_coef2", full.coef2)):
        out["schedule." + k] = f32(v)

    B, C, H, W = 4, 2, 4, 4
    t = [0, 1, 500, 999]
    x0 = (torch.rand(B, C, H, W, generator=g) * 2 - 1).float().double()
    x0[0, 0, 0, 0], x0[0, 0, 0, 1], x0[0, 1, 1, 1] = -1.0, 1.0, 0.0  # both edge bins of the t = 0 NLL
    noise = torch.randn(B, C, H, W, generator=g).float().double()
    xt = ext(full.sqrt_ac, t, 4) * x0 + ext(full.sqrt_1mac, t, 4) * noise
    model_out = torch.cat([noise + 0.3 * torch.randn(B, C, H, W, generator=g),
                           torch.rand(B, C, H, W, generator=g) * 2 - 1], dim=1).float().double()
    # A t = 0 sample whose eps prediction is exact also occurs in practice:
    # keep one as it tests the NLL near the bin centre.
    model_out.requires_grad_(True)
    mse, vb, loss = training_loss(full, model_out, x0, xt.float().double(), noise, t)
    (grad,) = torch.autograd.grad(loss.mean(), [model_out])
    out.update({"loss.x0": f32(x0), "loss.noise": f32(noise), "loss.t": torch.tensor(t, dtype=torch.int32),
                "loss.x_t": f32(xt), "loss.model_out": f32(model_out), "loss.mse": f32(mse), "loss.vb": f32(vb),
                "loss.loss": f32(loss), "loss.grad_model_out": f32(grad)})

    # Sampling steps: full schedule (DDPM) and respaced "ddim25" (DDIM, eta 0.5).
    x = torch.randn(B, C, H, W, generator=g).float().double()
    z = torch.randn(B, C, H, W, generator=g).float().double()
    mo = model_out.detach()
    mean, lv, _ = p_mean_var(full, mo, x, t)
    nonzero = torch.tensor([0.0 if s == 0 else 1.0 for s in t], dtype=torch.float64).view(-1, 1, 1, 1)
    ddpm = mean + nonzero * torch.exp(0.5 * lv) * z
    out.update({"step.x": f32(x), "step.noise": f32(z), "step.ddpm_full": f32(ddpm)})
    sp = respaced("ddim25")
    ts = [0, 1, 12, 24]
    eta = 0.5
    _, _, x0h = p_mean_var(sp, mo, x, ts)
    eps = (ext(sp.sqrt_recip_ac, ts, 4) * x - x0h) / ext(sp.sqrt_recipm1_ac, ts, 4)
    ab, abp = ext(sp.ac, ts, 4), ext(sp.ac_prev, ts, 4)
    sigma = eta * torch.sqrt((1 - abp) / (1 - ab)) * torch.sqrt(1 - ab / abp)
    nz = torch.tensor([0.0 if s == 0 else 1.0 for s in ts], dtype=torch.float64).view(-1, 1, 1, 1)
    ddim = x0h * torch.sqrt(abp) + torch.sqrt(1 - abp - sigma ** 2) * eps + nz * sigma * z
    mean_sp, lv_sp, _ = p_mean_var(sp, mo, x, ts)
    ddpm_sp = mean_sp + nz * torch.exp(0.5 * lv_sp) * z
    out.update({"step.t_respaced": torch.tensor(ts, dtype=torch.int32), "step.ddim_ddim25_eta05": f32(ddim),
                "step.ddpm_ddim25": f32(ddpm_sp)})

    # Classifier-free guidance: rows [cond; uncond], 4 noise + 4 variance channels.
    Cg = 4
    both = torch.randn(2 * 2, 2 * Cg, 2, 2, generator=g).float().double()
    s = 4.0
    cond, unc = both[:2], both[2:]
    guided_all = torch.cat([unc[:, :Cg] + s * (cond[:, :Cg] - unc[:, :Cg]), cond[:, Cg:]], dim=1)
    guided_3 = torch.cat([unc[:, :3] + s * (cond[:, :3] - unc[:, :3]), cond[:, 3:]], dim=1)
    out.update({"cfg.model_out": f32(both), "cfg.guided_all": f32(guided_all), "cfg.guided_dit3": f32(guided_3)})

    # Respacing.
    for n in (1, 2, 3, 9, 27, 81, 250, 1000):
        steps = sorted(space_timesteps(T, str(n)))
        sp = respaced(str(n))
        out[f"respace.{n}.steps"] = torch.tensor(steps, dtype=torch.int32)
        out[f"respace.{n}.betas"] = f32(sp.betas)
    out["respace.ddim25.steps"] = torch.tensor(sorted(space_timesteps(T, "ddim25")), dtype=torch.int32)
    out["respace.ddim25.betas"] = f32(respaced("ddim25").betas)

    te_t = torch.tensor([0.0, 1.0, 17.0, 500.0, 999.0])
    out["embed.t"] = f32(te_t)
    out["embed.timestep16"] = f32(timestep_embedding(te_t, 16))
    out["embed.pos_4x4x16"] = f32(pos_embed_2d(16, 4, 4))

    path = os.path.join(out_dir, "diffusion.safetensors")
    save_file(out, path, metadata={"generator": "tools/dit_diffusion_fixture.py", "eta": str(eta),
                                   "cfg_scale": str(s)})
    print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
