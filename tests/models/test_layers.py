"""Attention primitives and embeddings against naive reference implementations."""

from __future__ import annotations

import doctest
import math

import pytest
import torch
import torch.nn.functional as F

from pipeline.models import embeddings, layers
from pipeline.models.embeddings import (
    FeatureTokenizer,
    JointNumericEmbedding,
    SharedCategoricalEmbedding,
    alibi_bias,
    apply_rope,
    make_position,
    sinusoidal_table,
)
from pipeline.models.layers import (
    CBAM1d,
    ChannelAttention1d,
    GatedSelfAttention1d,
    MultiheadAttention,
    SpatialAttention1d,
    SqueezeExcitation,
    TransformerBlock,
    attention,
    block_keys,
    blockwise_attention,
    sparse_mask,
)

ATOL = 1e-5


def naive_attention(q, k, v, mask=None, scale=None):
    """softmax(q kᵀ · scale + mask) v, written out with explicit loops over batch and heads."""
    b, h, tq, dh = q.shape
    scale = 1 / math.sqrt(dh) if scale is None else scale
    out = torch.zeros(b, h, tq, v.shape[-1])
    weights = torch.zeros(b, h, tq, k.shape[-2])
    for i in range(b):
        for j in range(h):
            s = q[i, j] @ k[i, j].T * scale  # Tq × Tk
            if mask is not None:
                m = torch.broadcast_to(mask, (b, h, tq, k.shape[-2]))[i, j]
                s = s.masked_fill(~m, float("-inf")) if m.dtype == torch.bool else s + m
            weights[i, j] = torch.softmax(s, dim=-1)
            out[i, j] = weights[i, j] @ v[i, j]
    return out, weights


def qkv(b=2, h=2, tq=5, tk=7, dh=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, h, tq, dh, generator=g), torch.randn(b, h, tk, dh, generator=g),
            torch.randn(b, h, tk, dh, generator=g))


def test_doctests():
    for module in (layers, embeddings):
        result = doctest.testmod(module)
        assert result.failed == 0, module.__name__


# --- scaled dot-product attention -------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [None, 1.0, 0.3])
@pytest.mark.parametrize("need_weights", [False, True])
def test_attention_matches_naive(scale, need_weights):
    q, k, v = qkv()
    ref, ref_w = naive_attention(q, k, v, scale=scale)
    y, w = attention(q, k, v, scale=scale, need_weights=need_weights)
    torch.testing.assert_close(y, ref, atol=ATOL, rtol=0)
    if need_weights:
        torch.testing.assert_close(w, ref_w, atol=ATOL, rtol=0)
    else:
        assert w is None


def _masks(b=2, h=2, tq=5, tk=7):
    keep = torch.rand(b, 1, tq, tk, generator=torch.Generator().manual_seed(1)) > 0.5
    keep[..., 0] = True  # every query keeps a key
    padding = torch.ones(b, tk, dtype=torch.bool)
    padding[0, 4:] = False
    padding[1, 2:5] = False
    return {
        "bool": keep,
        "additive": torch.zeros(b, 1, tq, tk).masked_fill(~keep, float("-inf")),
        "padding": padding[:, None, None, :],
    }


@pytest.mark.parametrize("kind", ["bool", "additive", "padding"])
@pytest.mark.parametrize("need_weights", [False, True])
def test_attention_masks_match_naive_and_exclude_keys(kind, need_weights):
    q, k, v = qkv()
    mask = _masks()[kind]
    ref, ref_w = naive_attention(q, k, v, mask=mask)
    y, w = attention(q, k, v, mask=mask, need_weights=need_weights)
    torch.testing.assert_close(y, ref, atol=ATOL, rtol=0)
    keep = torch.broadcast_to(mask if mask.dtype == torch.bool else mask == 0, ref_w.shape)
    # Changing the keys and values that are masked (for every query) leaves the output unchanged.
    k2, v2 = k.clone(), v.clone()
    if kind == "padding":
        dead = ~mask[:, 0, 0, :]  # B × Tk
        k2[dead.unsqueeze(1).expand(-1, k.shape[1], -1)] = 100.0
        v2[dead.unsqueeze(1).expand(-1, k.shape[1], -1)] = -100.0
        y2, _ = attention(q, k2, v2, mask=mask, need_weights=need_weights)
        torch.testing.assert_close(y2, y, atol=ATOL, rtol=0)
    if need_weights:
        assert (w[~keep] == 0).all()
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))


def test_masked_key_values_do_not_leak_per_query():
    """A key masked for one query only: its value may change without that query's output changing."""
    q, k, v = qkv(b=1, h=1, tq=3, tk=4)
    mask = torch.ones(1, 1, 3, 4, dtype=torch.bool)
    mask[0, 0, 1, 2] = False  # query 1 may not see key 2
    v2, k2 = v.clone(), k.clone()
    v2[0, 0, 2] += 50.0
    k2[0, 0, 2] -= 50.0
    for need_weights in (False, True):
        y, _ = attention(q, k, v, mask=mask, need_weights=need_weights)
        y2, _ = attention(q, k2, v2, mask=mask, need_weights=need_weights)
        torch.testing.assert_close(y2[0, 0, 1], y[0, 0, 1], atol=ATOL, rtol=0)
        assert not torch.allclose(y2[0, 0, 0], y[0, 0, 0])


def test_attention_dropout_on_weights():
    q, k, v = qkv()
    y0, w0 = attention(q, k, v, need_weights=True)
    torch.manual_seed(0)
    y1, w1 = attention(q, k, v, dropout=0.5, need_weights=True)
    torch.testing.assert_close(w1, w0)  # the weights returned are before dropout
    assert not torch.allclose(y1, y0)
    torch.manual_seed(0)
    assert not torch.allclose(attention(q, k, v, dropout=0.5)[0], y0)  # fused path drops too


# --- multi-head attention ---------------------------------------------------------------------------------


def naive_mha(m: MultiheadAttention, x, ctx):
    d, h = x.shape[-1], m.n_heads
    wk, wv = m.kv.weight[:d], m.kv.weight[d:]
    bk, bv = (m.kv.bias[:d], m.kv.bias[d:]) if m.kv.bias is not None else (0, 0)
    q = x @ m.q.weight.T + (m.q.bias if m.q.bias is not None else 0)
    k, v = ctx @ wk.T + bk, ctx @ wv.T + bv

    def split(t):
        return t.view(t.shape[0], t.shape[1], h, d // h).transpose(1, 2)

    y, w = naive_attention(split(q), split(k), split(v), scale=m.scale)
    y = y.transpose(1, 2).reshape(x.shape[0], x.shape[1], d)
    return m.out(y), w


@pytest.mark.parametrize("n_heads", [1, 2, 4])
@pytest.mark.parametrize("cross", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_multihead_matches_naive(n_heads, cross, bias):
    torch.manual_seed(0)
    m = MultiheadAttention(8, n_heads, bias=bias).eval()
    x = torch.randn(3, 5, 8)
    ctx = torch.randn(3, 6, 8) if cross else x
    ref, ref_w = naive_mha(m, x, ctx)
    for need_weights in (False, True):
        y, w = m(x, ctx if cross else None, need_weights=need_weights)
        torch.testing.assert_close(y, ref, atol=ATOL, rtol=0)
        if need_weights:
            assert w.shape == (3, n_heads, 5, ctx.shape[1])
            torch.testing.assert_close(w, ref_w, atol=ATOL, rtol=0)
    assert (m.q.bias is None) == (not bias) and (m.kv.bias is None) == (not bias)


def test_multihead_projection_options():
    x = torch.randn(2, 4, 8)
    assert MultiheadAttention(8, 2, d_proj=12)(x)[0].shape == (2, 4, 12)
    m = MultiheadAttention(8, 2, proj=False)
    assert isinstance(m.out, torch.nn.Identity) and m(x)[0].shape == (2, 4, 8)
    unscaled = MultiheadAttention(8, 1, scale=1.0).eval()
    ref, _ = naive_mha(unscaled, x, x)
    torch.testing.assert_close(unscaled(x)[0], ref, atol=ATOL, rtol=0)
    for bad in (dict(d=8, n_heads=3), dict(d=8, n_heads=2, block_size=-1), dict(d=8, proj=False, d_proj=4)):
        with pytest.raises(ValueError):
            MultiheadAttention(**bad)


def test_multihead_dropout_only_in_training():
    torch.manual_seed(0)
    m = MultiheadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 6, 8)
    m.eval()
    torch.testing.assert_close(m(x)[0], m(x)[0])
    m.train()
    assert not torch.allclose(m(x)[0], m.eval()(x)[0])


def test_multihead_rope_matches_naive():
    torch.manual_seed(0)
    m = MultiheadAttention(8, 2, rope=True).eval()
    x = torch.randn(2, 5, 8)
    q = apply_rope((x @ m.q.weight.T + m.q.bias).view(2, 5, 2, 4).transpose(1, 2))
    kv = (x @ m.kv.weight.T + m.kv.bias).view(2, 5, 2, 2, 4).permute(2, 0, 3, 1, 4)
    y, _ = naive_attention(q, apply_rope(kv[0]), kv[1])
    ref = m.out(y.transpose(1, 2).reshape(2, 5, 8))
    torch.testing.assert_close(m(x)[0], ref, atol=ATOL, rtol=0)


def test_rope_attention_depends_on_relative_position():
    x = torch.randn(1, 1, 1, 6).expand(1, 1, 9, 6)  # the same vector at every position
    r = apply_rope(x)
    scores = (r @ r.transpose(-2, -1))[0, 0]  # 9 × 9
    for offset in range(-3, 4):
        diag = torch.diagonal(scores, offset)
        torch.testing.assert_close(diag, diag[0].expand_as(diag), atol=1e-4, rtol=0)
    torch.testing.assert_close(r.norm(dim=-1), x.norm(dim=-1))  # rotations keep the norm
    odd = torch.randn(2, 3, 5)
    assert torch.equal(apply_rope(odd)[..., -1], odd[..., -1])  # the odd channel passes through
    assert torch.equal(apply_rope(odd)[..., 0, :], odd[..., 0, :])  # position 0 is not rotated


def test_alibi_and_sinusoidal():
    bias = alibi_bias(4, 5)
    assert bias.shape == (4, 5, 5)
    assert (torch.diagonal(bias, dim1=1, dim2=2) == 0).all()
    torch.testing.assert_close(bias[0, 0, 3], torch.tensor(-3 * 2.0**-2))
    torch.testing.assert_close(bias, bias.transpose(1, 2))
    table = sinusoidal_table(6, 7)
    assert table.shape == (6, 7)
    torch.testing.assert_close(table[0], torch.tensor([0.0, 1, 0, 1, 0, 1, 0]))
    torch.testing.assert_close(table[3, 0], torch.tensor(math.sin(3.0)))
    torch.testing.assert_close(table[3, 1], torch.tensor(math.cos(3.0)))


# --- blockwise attention ----------------------------------------------------------------------------------


def block_mask(tq, tk, bs):
    idx, valid = block_keys(tq, tk, bs)
    m = torch.zeros(tq, tk, dtype=torch.bool)
    for i in range(tq):
        m[i, idx[i][valid[i]]] = True
    return m


@pytest.mark.parametrize("bs", [7, 8, 100])
def test_blockwise_with_one_block_is_full_attention(bs):
    q, k, v = qkv(tk=7)
    y, w = blockwise_attention(q, k, v, bs, need_weights=True)
    ref, ref_w = naive_attention(q, k, v)
    torch.testing.assert_close(y, ref, atol=ATOL, rtol=0)
    torch.testing.assert_close(w, ref_w, atol=ATOL, rtol=0)


@pytest.mark.parametrize("tq,tk,bs", [(8, 8, 4), (9, 9, 4), (7, 7, 1), (3, 10, 4), (10, 4, 2), (5, 7, 3)])
def test_blockwise_matches_masked_full_attention(tq, tk, bs):
    q, k, v = qkv(tq=tq, tk=tk)
    m = block_mask(tq, tk, bs)
    assert m.any(dim=1).all()  # every query sees a key
    assert m.any(dim=0).all() or tq < math.ceil(tk / bs)  # with enough queries every key block is used
    ref, ref_w = naive_attention(q, k, v, mask=m)
    y, w = blockwise_attention(q, k, v, bs, need_weights=True)
    torch.testing.assert_close(y, ref, atol=ATOL, rtol=0)
    torch.testing.assert_close(w, ref_w, atol=ATOL, rtol=0)
    assert (w[..., ~m] == 0).all()
    # Keys outside a query's block do not reach it.
    k2, v2 = k.clone(), v.clone()
    k2[..., ~m[0], :] = 30.0
    v2[..., ~m[0], :] = -30.0
    y2, _ = blockwise_attention(q, k2, v2, bs)
    torch.testing.assert_close(y2[..., 0, :], y[..., 0, :], atol=ATOL, rtol=0)


def test_self_blockwise_blocks_are_contiguous():
    assert torch.equal(block_mask(6, 6, 2), torch.block_diag(*[torch.ones(2, 2, dtype=torch.bool)] * 3))
    full, short = torch.ones(4, 4, dtype=torch.bool), torch.ones(1, 1, dtype=torch.bool)
    assert torch.equal(block_mask(9, 9, 4), torch.block_diag(full, full, short))  # the last block is short


@pytest.mark.parametrize("mask_kind", ["bool", "additive"])
def test_blockwise_with_mask(mask_kind):
    q, k, v = qkv(tq=6, tk=6)
    keep = torch.ones(6, 6, dtype=torch.bool)
    keep[0, 1] = keep[3, 2] = keep[5, 4] = False
    mask = keep if mask_kind == "bool" else torch.zeros(6, 6).masked_fill(~keep, float("-inf"))
    ref, _ = naive_attention(q, k, v, mask=keep & block_mask(6, 6, 3))
    y, _ = blockwise_attention(q, k, v, 3, mask=mask)
    torch.testing.assert_close(y, ref, atol=ATOL, rtol=0)


def test_blockwise_multihead_module():
    torch.manual_seed(0)
    full = MultiheadAttention(8, 2).eval()
    blocked = MultiheadAttention(8, 2, block_size=3).eval()
    blocked.load_state_dict(full.state_dict())
    x, ctx = torch.randn(2, 4, 8), torch.randn(2, 9, 8)
    yb, wb = blocked(x, ctx, need_weights=True)
    m = block_mask(4, 9, 3)
    yf, _ = full(x, ctx, mask=m)
    torch.testing.assert_close(yb, yf, atol=ATOL, rtol=0)
    assert (wb[..., ~m] == 0).all()


def test_sparse_mask():
    m = sparse_mask(50, 40, 0.7, seed=3)
    assert m.shape == (50, 40) and set(m.unique().tolist()) <= {0.0, float("-inf")}
    assert (m == 0).any(dim=1).all()
    assert 0.6 < (m != 0).float().mean() < 0.8
    assert torch.equal(m, sparse_mask(50, 40, 0.7, seed=3))
    assert not torch.equal(m, sparse_mask(50, 40, 0.7, seed=4))
    assert (torch.diagonal(sparse_mask(9, 9, 0.99)) == 0).all()  # self-attention keeps itself
    kept_in_block = (sparse_mask(5, 12, 0.99, block_size=4) == 0) & block_mask(5, 12, 4)
    assert kept_in_block.any(dim=1).all()
    state = torch.random.get_rng_state()
    sparse_mask(5, 5, 0.5)
    assert torch.equal(state, torch.random.get_rng_state())
    with pytest.raises(ValueError):
        sparse_mask(3, 3, 1.0)


# --- squeeze-excitation, CBAM, SAGAN ----------------------------------------------------------------------


def test_squeeze_excitation_matches_naive():
    torch.manual_seed(0)
    se = SqueezeExcitation(16, reduction=4)
    x = torch.randn(3, 5, 16)
    fc1, fc2 = se.excite[0], se.excite[2]
    assert fc1.out_features == 4
    z = x.mean(dim=1)
    s = torch.sigmoid(fc2(torch.relu(fc1(z))))
    torch.testing.assert_close(se(x), x * s[:, None, :], atol=ATOL, rtol=0)
    assert SqueezeExcitation(3, reduction=16).excite[0].out_features == 1


def test_channel_attention_matches_naive():
    torch.manual_seed(0)
    ca = ChannelAttention1d(32, reduction=16)
    assert ca.mlp[0].out_features == 2
    assert ChannelAttention1d(8).mlp[0].out_features == 1  # clamped to one hidden unit
    x = torch.randn(2, 32, 6)
    mlp = ca.mlp
    w = torch.sigmoid(mlp(x.mean(-1)) + mlp(x.max(-1).values))
    torch.testing.assert_close(ca(x), x * w[..., None], atol=ATOL, rtol=0)


def test_spatial_attention_matches_naive():
    torch.manual_seed(0)
    sa = SpatialAttention1d(7)
    x = torch.randn(2, 5, 9)
    desc = torch.stack([x.mean(1), x.max(1).values], dim=1)  # B × 2 × L
    s = torch.sigmoid(F.conv1d(desc, sa.conv.weight, padding=3))
    torch.testing.assert_close(sa(x), x * s, atol=ATOL, rtol=0)
    assert CBAM1d(32)(torch.randn(2, 32, 3)).shape == (2, 32, 3)  # shorter than the kernel


def test_gated_self_attention():
    torch.manual_seed(0)
    layer = GatedSelfAttention1d(16)
    assert layer.q.out_channels == 2 and layer.v.out_channels == 16
    assert GatedSelfAttention1d(4).q.out_channels == 1
    x = torch.randn(2, 16, 7)
    y, w = layer(x, need_weights=True)
    assert torch.equal(y, x) and layer.gamma.item() == 0  # identity at initialisation
    assert w.shape == (2, 1, 7, 7)
    with torch.no_grad():
        layer.gamma.fill_(0.7)
    q, k, v = layer.q(x), layer.k(x), layer.v(x)  # B × c × L
    a = torch.softmax(q.transpose(1, 2) @ k, dim=-1)  # B × L × L, unscaled as in SAGAN
    ref = x + 0.7 * (v @ a.transpose(1, 2))
    torch.testing.assert_close(layer(x)[0], ref, atol=ATOL, rtol=0)
    torch.testing.assert_close(layer(x, need_weights=True)[1][:, 0], a, atol=ATOL, rtol=0)


def test_transformer_block():
    torch.manual_seed(0)
    block = TransformerBlock(16, 4, first_norm=False, rope=True)
    assert isinstance(block.norm1, torch.nn.Identity)
    y, w = block(torch.randn(2, 5, 16), mask=alibi_bias(4, 5), need_weights=True)
    assert y.shape == (2, 5, 16) and w.shape == (2, 4, 5, 5)


# --- embeddings -------------------------------------------------------------------------------------------


def test_tokenizer_options():
    x_num, x_cat = torch.randn(4, 3), torch.tensor([[0, 4], [2, 1], [1, 0], [2, 3]])
    for num in ("per_feature", "joint"):
        for cat in ("per_feature", "shared"):
            t = FeatureTokenizer(3, [3, 5], 8, num_embedding=num, cat_embedding=cat)
            assert t(x_num, x_cat).shape == (4, 5, 8)
    assert sum(p.numel() for p in JointNumericEmbedding(10, 8).parameters()) == 16
    shared = SharedCategoricalEmbedding([3, 5, 4], 8)
    assert shared.embedding.weight.shape == (5, 8)
    # Features with the same code differ only through their bias.
    out = shared(torch.tensor([[2, 2, 2]]))
    torch.testing.assert_close(out[0, 0] - shared.bias[0], out[0, 1] - shared.bias[1])
    with pytest.raises(ValueError):
        FeatureTokenizer(0, [], 8)
    with pytest.raises(ValueError):
        FeatureTokenizer(2, [], 8, num_embedding="bogus")


def test_make_position():
    x = torch.randn(2, 5, 8)
    for kind in embeddings.POSITIONS:
        assert make_position(kind, 5, 8)(x).shape == x.shape
    for kind in ("none", "rope", "alibi"):
        assert torch.equal(make_position(kind, 5, 8)(x), x)
    torch.testing.assert_close(make_position("sinusoidal", 5, 8)(x), x + sinusoidal_table(5, 8))
    with pytest.raises(ValueError):
        make_position("bogus", 5, 8)


def test_cpu_dropout_keeps_its_share_and_the_mean_in_fp32_and_bf16():
    """The 15-bit masks (two elements per 32-bit draw): the kept share is 1 − p and the scale keeps the mean,
    in every dtype; the two halves of each draw are independent (no pattern between neighbours)."""
    from pipeline.models.layers import apply_dropout, dropout_mask

    torch.manual_seed(0)
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.ones(400_000, dtype=dtype)
        for p in (0.1, 0.2, 0.5):
            y = apply_dropout(x, p)
            assert abs((y != 0).float().mean().item() - (1 - p)) < 0.004, (dtype, p)
            assert abs(y.float().mean().item() - 1.0) < 0.01, (dtype, p)
            values = torch.unique(y.float()).tolist()
            assert values[0] == 0.0 and values[1:] == [pytest.approx(1 / (1 - p), rel=1e-2)]
    m = dropout_mask(torch.Size([200_000]), 0.5, torch.device("cpu")).float()
    both = (m[0::2] * m[1::2]).mean().item()  # kept together: 1/4 if independent
    assert abs(both - 0.25) < 0.005
    torch.manual_seed(3)
    a = dropout_mask(torch.Size([1000]), 0.3, torch.device("cpu"))
    torch.manual_seed(3)
    assert torch.equal(a, dropout_mask(torch.Size([1000]), 0.3, torch.device("cpu")))  # seeded like the rest
