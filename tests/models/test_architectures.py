"""Every registered torch model: shapes, gradients, attention maps, defaults, search space, validation."""

from __future__ import annotations

import inspect
import random
from pathlib import Path

import pytest
import torch

from pipeline.models.embeddings import POSITIONS
from pipeline.models.registry import REGISTRY, TORCH_LEARNER

TORCH_MODELS = sorted(name for name, info in REGISTRY.items() if info.learner == TORCH_LEARNER)
ATTENTION_MODELS = [name for name in TORCH_MODELS if REGISTRY[name].attention]
NEW_MODELS = ["cnn_attention", "tab_transformer", "cross_attention_se", "cbam_cnn", "cnn_transformer",
              "single_head_attention"]
INPUTS = {"numeric": (5, []), "categorical": (0, [3, 1, 6]), "mixed": (4, [2, 5, 3])}
B = 6


def arch_defaults(name: str) -> dict:
    return dict(REGISTRY[name].defaults)  # the architecture alone: training keys are the recipe's


def build(name: str, kind: str = "mixed", d_out: int = 2, **overrides):
    n_num, cards = INPUTS[kind]
    torch.manual_seed(0)
    model = REGISTRY[name].load()(n_num=n_num, cat_cardinalities=cards, d_out=d_out,
                                  **{**arch_defaults(name), **overrides})
    return model, batch(kind)


def batch(kind: str, b: int = B, seed: int = 1):
    n_num, cards = INPUTS[kind]
    g = torch.Generator().manual_seed(seed)
    x_num = torch.randn(b, n_num, generator=g)
    x_cat = torch.stack([torch.randint(0, c, (b,), generator=g) for c in cards], 1) if cards else torch.zeros(
        b, 0, dtype=torch.long)
    return x_num, x_cat


def test_new_models_are_registered():
    assert set(NEW_MODELS) <= set(TORCH_MODELS)
    for name in NEW_MODELS:
        assert REGISTRY[name].attention


@pytest.mark.parametrize("name", TORCH_MODELS)
@pytest.mark.parametrize("kind", list(INPUTS))
@pytest.mark.parametrize("d_out", [1, 2, 3])
def test_output_shape(name, kind, d_out):
    model, (x_num, x_cat) = build(name, kind, d_out)
    for mode in (model.train, model.eval):
        mode()
        out = model(x_num, x_cat)
        assert out.shape == (B, d_out) and out.dtype == torch.float32
        assert torch.isfinite(out).all()


@pytest.mark.parametrize("name", TORCH_MODELS)
@pytest.mark.parametrize("kind", list(INPUTS))
def test_rows_are_independent_in_eval(name, kind):
    """No batch statistics or cross-row mixing at inference: a row's output does not depend on its batch."""
    model, (x_num, x_cat) = build(name, kind)
    model.eval()
    with torch.no_grad():
        full = model(x_num, x_cat)
        single = torch.cat([model(x_num[i:i + 1], x_cat[i:i + 1]) for i in range(B)])
    torch.testing.assert_close(single, full, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", TORCH_MODELS)
@pytest.mark.parametrize("kind", list(INPUTS))
def test_gradients_reach_every_parameter(name, kind):
    model, (x_num, x_cat) = build(name, kind, d_out=3)
    # SAGAN's γ starts at 0, which zeroes its Q/K/V gradients; open the gate to see that they flow.
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if pname.endswith("gamma"):
                p.fill_(0.5)
    model.train()
    loss = torch.nn.functional.cross_entropy(model(x_num, x_cat), torch.arange(B) % 3)
    loss.backward()
    for pname, p in model.named_parameters():
        assert p.grad is not None, pname
        assert torch.isfinite(p.grad).all(), pname
        # A key bias adds the same amount to every score of a query, which softmax ignores.
        if not pname.endswith(".k.bias"):
            assert p.grad.abs().sum() > 0, pname


@pytest.mark.parametrize("name", ATTENTION_MODELS)
@pytest.mark.parametrize("kind", list(INPUTS))
def test_attention_maps(name, kind):
    model, (x_num, x_cat) = build(name, kind)
    model.eval()
    out, maps = model(x_num, x_cat, return_attention=True)
    torch.testing.assert_close(out, model(x_num, x_cat), atol=1e-5, rtol=1e-4)  # both paths agree
    assert isinstance(maps, list)
    for w in maps:
        assert w.ndim == 4 and w.shape[0] == B and torch.isfinite(w).all()
    f = x_num.shape[1] + x_cat.shape[1]
    model.train()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    fa = model.feature_attention(x_num, x_cat)
    assert model.training  # inspected in eval mode, the mode restored ...
    for k, v in model.state_dict().items():  # ... and no batch-norm statistics updated
        assert torch.equal(v, state[k]), k
    torch.testing.assert_close(fa, model.feature_attention(x_num, x_cat))  # no dropout
    assert fa.shape == (f, f) and torch.isfinite(fa).all() and (fa >= 0).all()
    if not (name == "tab_transformer" and kind == "numeric"):
        assert fa.sum() > 0


@pytest.mark.parametrize("name", TORCH_MODELS)
def test_the_constructor_states_the_defaults_once(name):
    """A torch model's architecture defaults are its constructor's keyword defaults, read by the registry
    with ast (no torch): every keyword but the data's inputs, the same value and type as the signature's;
    its INFO states none of them again."""
    from pipeline.models.model_file import read_info
    from pipeline.models.registry import _INFO_KEYS

    info = REGISTRY[name]
    params = inspect.signature(info.load()).parameters
    inputs = ("n_num", "cat_cardinalities", "d_out")
    own = {k: p.default for k, p in params.items() if k not in inputs}
    assert list(arch_defaults(name).items()) == list(own.items())
    assert all(type(v) is type(own[k]) for k, v in arch_defaults(name).items())
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())
    module = inspect.getmodule(info.load())
    assert module is not None and "defaults" not in module.INFO
    assert read_info(Path(module.__file__), _INFO_KEYS)["defaults"] == own


@pytest.mark.parametrize("name", sorted(n for n in REGISTRY if REGISTRY[n].ablations))
def test_ablation_switches_are_the_models_own(name):
    """The claims' switches, declared by the models that have them (INFO's ablations): each turns a key
    of the model's configuration off, its default has it on (a configuration without the key counts as
    on), and what it needs is one of the model's switches."""
    info = REGISTRY[name]
    config = info.config_defaults()
    for word, switch in info.ablations.items():
        assert switch.key in config and config[switch.key] != switch.off, switch
        assert switch.on({}) and switch.on(config) and not switch.on({switch.key: switch.off})
        assert set(switch.needs) <= set(info.ablations) - {word}


def _sample(spec: dict, rng: random.Random, where: str | None = None):
    (kind, arg), = spec.items()
    if kind == "choice":
        return rng.choice(arg) if where is None else arg[0 if where == "lo" else -1]
    lo, hi = arg
    if where is not None:
        return lo if where == "lo" else hi
    return rng.randint(lo, hi) if kind in ("int", "logint") else rng.uniform(lo, hi)


@pytest.mark.parametrize("name", TORCH_MODELS)
def test_search_space_configs_build_and_run(name):
    info = REGISTRY[name]
    arch_space = {k: v for k, v in info.space.items() if k in info.defaults}
    rng = random.Random(0)
    configs = [{k: _sample(s, rng, where) for k, s in arch_space.items()} for where in ("lo", "hi")]
    configs += [{k: _sample(s, rng) for k, s in arch_space.items()} for _ in range(4)]
    for config in configs:
        model, (x_num, x_cat) = build(name, "mixed", 2, **config)
        assert model(x_num, x_cat).shape == (B, 2), config


@pytest.mark.parametrize("name", TORCH_MODELS)
def test_invalid_arguments_raise_value_error(name):
    cls = REGISTRY[name].load()
    for bad in (dict(n_num=3, cat_cardinalities=[], d_out=0), dict(n_num=0, cat_cardinalities=[], d_out=1)):
        with pytest.raises(ValueError):
            cls(**bad)


@pytest.mark.parametrize("name,bad", [
    ("cnn_attention", dict(attention="softmax")),
    ("cnn_attention", dict(position="bogus")),
    ("cnn_attention", dict(channels=64, n_heads=3)),
    ("cnn_attention", dict(cat_cardinalities=[3, 0])),
    ("tab_transformer", dict(d_token=30, n_heads=4)),
    ("tab_transformer", dict(cat_embedding="bogus")),
    ("cross_attention_se", dict(sparsity=1.0)),
    ("cross_attention_se", dict(block_size=-1)),
    ("cbam_cnn", dict(position="rope")),
    ("cbam_cnn", dict(n_conv=0)),
    ("cnn_transformer", dict(channels=32, n_heads=3)),
    ("single_head_attention", dict(n_blocks=0)),
    ("single_head_attention", dict(n_num=-1)),
])
def test_model_specific_validation(name, bad):
    kwargs = {"n_num": 2, "cat_cardinalities": [3], "d_out": 2, **arch_defaults(name)}
    with pytest.raises(ValueError):
        REGISTRY[name].load()(**{**kwargs, **bad})


@pytest.mark.parametrize("name", TORCH_MODELS)
def test_bf16_autocast(name):
    """Masks and buffers follow the activations' dtype (the harness uses autocast on GPUs)."""
    model, (x_num, x_cat) = build(name, "mixed")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x_num, x_cat)
    assert out.shape == (B, 2) and torch.isfinite(out.float()).all()


# --- variants -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cnn_attention", "cnn_transformer"])
@pytest.mark.parametrize("position", POSITIONS)
def test_positional_options(name, position):
    model, (x_num, x_cat) = build(name, "mixed", position=position)
    out, maps = model(x_num, x_cat, return_attention=True)
    assert out.shape == (B, 2) and torch.isfinite(out).all()
    assert all(w.shape[-2:] == (7, 7) for w in maps)  # attention over the 7 feature positions


@pytest.mark.parametrize("attention", ["unscaled", "scaled", "scaled_proj"])
def test_cnn_attention_variants(attention):
    model, (x_num, x_cat) = build("cnn_attention", "mixed", attention=attention, d_attention=24)
    assert model(x_num, x_cat).shape == (B, 2)
    assert model.attn.scale == (1.0 if attention == "unscaled" else None)
    assert isinstance(model.attn.out, torch.nn.Identity) == (attention != "scaled_proj")
    assert model.head[-1].in_features == (48 if attention == "scaled_proj" else 2 * 64)


@pytest.mark.parametrize("kind", list(INPUTS))
@pytest.mark.parametrize("variant", [{}, {"block_size": 2}, {"sparsity": 0.5},
                                     {"block_size": 2, "sparsity": 0.9}])
def test_cross_attention_variants(kind, variant):
    model, (x_num, x_cat) = build("cross_attention_se", kind, n_blocks=2, **variant)
    model.eval()
    out, maps = model(x_num, x_cat, return_attention=True)
    assert torch.isfinite(out).all()
    n_num, cards = INPUTS[kind]
    cross = n_num > 0 and len(cards) > 0
    assert maps[0].shape[-2:] == ((len(cards), n_num) if cross else (n_num + len(cards),) * 2)
    fa = model.feature_attention(x_num, x_cat)
    if cross:  # only the categorical-query × numeric-key block is filled
        assert fa[n_num:, :n_num].sum() > 0
        assert fa[:n_num].sum() == 0 and fa[:, n_num:].sum() == 0
        torch.testing.assert_close(fa[n_num:, :n_num].sum(1), torch.ones(len(cards)))
    if "sparsity" in variant:  # masked pairs get no weight
        attended = fa[n_num:, :n_num] if cross else fa
        assert (attended[model.mask.isinf()] == 0).all()


def test_tab_transformer_attention_block():
    model, (x_num, x_cat) = build("tab_transformer", "mixed")
    fa = model.feature_attention(x_num, x_cat)
    assert fa[:4].sum() == 0 and fa[:, :4].sum() == 0
    torch.testing.assert_close(fa[4:, 4:].sum(1), torch.ones(3))
    numeric_only, _ = build("tab_transformer", "numeric")
    assert numeric_only.embed is None and not hasattr(numeric_only, "blocks")


def test_single_head_masks_missing_categories():
    model, (x_num, x_cat) = build("single_head_attention", "mixed", mask_missing=True)
    model.eval()
    x_cat[:3, 0] = 0  # feature 0 missing in the first three rows
    x_cat[3:, 0] = 1
    before = model(x_num, x_cat)
    with torch.no_grad():  # change the embedding of feature 0's missing code: masked rows must not notice
        model.tokenizer.cat.embedding.weight[0] += 5.0
    after = model(x_num, x_cat)
    torch.testing.assert_close(after[:3], before[:3], atol=1e-5, rtol=1e-4)
    fa = model.feature_attention(x_num[:3], x_cat[:3])
    assert (fa[:, 4] == 0).all()  # no token attends to the missing one
    # A row with nothing but missing categories keeps all its tokens rather than dividing by zero.
    cat_only, (xn, xc) = build("single_head_attention", "categorical", mask_missing=True)
    assert torch.isfinite(cat_only(xn, torch.zeros_like(xc))).all()


def test_default_sizes_are_small():
    """Defaults are meant for small CPU runs."""
    for name in NEW_MODELS:
        model, _ = build(name, "mixed")
        assert sum(p.numel() for p in model.parameters()) < 200_000, name


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_searched_key_has_a_default(name):
    """A model's whole space (its Learner's: a torch model's includes the recipe's keys) against its
    whole defaults: the registry reads INFO without the Learner, so this is where they meet."""
    info = REGISTRY[name]
    assert set(info.search_space()) <= set(info.config_defaults())
    assert not set(info.training) & set(info.defaults), "a key is either the builder's or the recipe's"


def test_ablation_switches_remove_what_they_name():
    """The claims' ablations: squeeze-and-excitation off (cross-attention model, CBAM CNN), and
    self-attention over all tokens in place of categorical → numeric cross-attention."""
    from pipeline.models.layers import ChannelAttention1d, SqueezeExcitation

    def count(model, cls):
        return sum(isinstance(m, cls) for m in model.modules())

    with_se, x = build("cross_attention_se")
    without, _ = build("cross_attention_se", se_reduction=0)
    assert count(with_se, SqueezeExcitation) == 1 and count(without, SqueezeExcitation) == 0
    assert without(*x).shape == with_se(*x).shape
    cross = with_se.feature_attention(*x)
    self_att, _ = build("cross_attention_se", attention="self")
    full = self_att.feature_attention(*x)
    n_num = INPUTS["mixed"][0]
    assert cross[:n_num].abs().sum() == 0 and cross[n_num:, :n_num].abs().sum() > 0  # cat rows query num columns
    assert (full.abs().sum(dim=1) > 0).all()  # every token attends
    with pytest.raises(ValueError, match="attention"):
        build("cross_attention_se", attention="both")
    cbam, x = build("cbam_cnn")
    plain, _ = build("cbam_cnn", se=False)
    assert count(cbam, ChannelAttention1d) == 2 and count(plain, ChannelAttention1d) == 0  # one per conv block
    assert plain(*x).shape == cbam(*x).shape
