"""Make the models the real-vLLM tests serve, from SmolLM2-135M-Instruct's GGUF.

Run by scripts/build-vllm-bed.sh with the vLLM bed's own Python (torch, transformers, gguf,
accelerate, safetensors; the project's .venv has none of them):

    make-vllm-models.py --gguf SmolLM2-135M-Instruct.Q4_1.gguf --out DIR

vLLM's core no longer loads GGUF files (the loader moved to a plugin), so the target is
converted once into a bf16 safetensors folder. Every folder below is written under a temporary
name and renamed when complete, and skipped when it is already there:

- ``smollm2-135m``: the target. transformers dequantizes the GGUF, but refuses to save a
  model that still carries its GGUF quantization config, so a fresh ``LlamaForCausalLM`` is
  built from the config without it, the dequantized tensors are loaded into it (strictly:
  every tensor named, none left over) and saved with the tokenizer and its chat template.
- ``smollm2-draft-2l``: the same weights restricted to the first two decoder layers: a real
  (poor) draft model for ``method = "draft_model"``.
- ``draft-broken``: ``smollm2-draft-2l``'s weights under a config whose
  ``num_key_value_heads`` does not match them: vLLM dies loading the drafter's weights.
- ``eagle1-random`` and ``eagle3-random``: EAGLE-1 and EAGLE-3 heads shaped for this model
  with random (seeded) weights, in the checkpoint layouts vLLM's Llama EAGLE loaders read
  (EAGLE-3: ``midlayer.*`` over [embeddings, hidden] of width 2H, ``fc`` from three hidden
  states, its own ``norm`` and ``lm_head``; EAGLE-1: ``fc`` over [embedding, hidden] and one
  ``layers.0`` without an input norm). They load and serve; nearly nothing they draft is
  accepted — the "bad drafter" case.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
)

TARGET = "smollm2-135m"
DRAFT = "smollm2-draft-2l"
BROKEN = "draft-broken"
EAGLE1 = "eagle1-random"
EAGLE3 = "eagle3-random"
DRAFT_LAYERS = 2
SEED = 0
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def _done(out: Path, name: str) -> bool:
    return (out / name / "config.json").is_file()


def _publish(out: Path, name: str, write: Callable[[Path], None]) -> None:
    """Write folder ``name`` under a temporary name, then rename it into place."""
    if _done(out, name):
        return
    part = out / f"{name}.part"
    shutil.rmtree(part, ignore_errors=True)
    part.mkdir(parents=True)
    write(part)
    shutil.rmtree(out / name, ignore_errors=True)
    part.rename(out / name)
    print(f"make-vllm-models: wrote {name}")


def _clean_config(raw: dict) -> dict:
    """The GGUF's config without its quantization and the keys LlamaConfig sets itself."""
    return {
        key: value
        for key, value in raw.items()
        if key not in ("quantization_config", "architectures", "transformers_version")
    }


def convert(gguf: Path, out: Path) -> None:
    """The target and the two-layer draft (and its broken copy), from the GGUF."""
    if all(_done(out, name) for name in (TARGET, DRAFT)):
        return
    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    dequantized = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.bfloat16
    ).state_dict()
    raw = _clean_config(AutoConfig.from_pretrained(folder, gguf_file=name).to_dict())

    def model_with(layers: int) -> Callable[[Path], None]:
        def write(part: Path) -> None:
            config = LlamaConfig(**raw)
            config.num_hidden_layers = layers
            config.architectures = ["LlamaForCausalLM"]
            model = LlamaForCausalLM(config).to(torch.bfloat16)
            kept = {
                key: tensor
                for key, tensor in dequantized.items()
                if not key.startswith("model.layers.") or int(key.split(".")[2]) < layers
            }
            model.load_state_dict(kept, strict=True)
            model.save_pretrained(part)
            tokenizer.save_pretrained(part)

        return write

    _publish(out, TARGET, model_with(raw["num_hidden_layers"]))
    _publish(out, DRAFT, model_with(DRAFT_LAYERS))


def broken_draft(out: Path) -> None:
    """The two-layer draft's files with a config that does not fit its weights."""

    def write(part: Path) -> None:
        for path in (out / DRAFT).iterdir():
            if path.name != "config.json":
                shutil.copy2(path, part / path.name)
        config = json.loads((out / DRAFT / "config.json").read_text())
        config["num_key_value_heads"] = config["num_attention_heads"]
        (part / "config.json").write_text(json.dumps(config, indent=1))

    _publish(out, BROKEN, write)


def _eagle_heads(out: Path) -> None:
    """Seeded random EAGLE-1 and EAGLE-3 heads sized from the target's config."""
    target = json.loads((out / TARGET / "config.json").read_text())
    hidden = target["hidden_size"]
    heads = target["num_attention_heads"]
    kv_heads = target["num_key_value_heads"]
    head_dim = target.get("head_dim") or hidden // heads
    inner = target["intermediate_size"]
    vocab = target["vocab_size"]
    generator = torch.Generator().manual_seed(SEED)

    def rand(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=generator) * 0.02).to(torch.bfloat16)

    def ones(n: int) -> torch.Tensor:
        return torch.ones(n, dtype=torch.bfloat16)

    def layer(prefix: str, width: int) -> dict[str, torch.Tensor]:
        return {
            f"{prefix}.self_attn.q_proj.weight": rand(heads * head_dim, width),
            f"{prefix}.self_attn.k_proj.weight": rand(kv_heads * head_dim, width),
            f"{prefix}.self_attn.v_proj.weight": rand(kv_heads * head_dim, width),
            f"{prefix}.self_attn.o_proj.weight": rand(hidden, heads * head_dim),
            f"{prefix}.mlp.gate_proj.weight": rand(inner, hidden),
            f"{prefix}.mlp.up_proj.weight": rand(inner, hidden),
            f"{prefix}.mlp.down_proj.weight": rand(hidden, inner),
            f"{prefix}.post_attention_layernorm.weight": ones(hidden),
        }

    base = {
        key: target[key]
        for key in (
            "model_type",
            "hidden_size",
            "intermediate_size",
            "num_attention_heads",
            "num_key_value_heads",
            "vocab_size",
            "rms_norm_eps",
            "max_position_embeddings",
            "hidden_act",
            "bos_token_id",
            "eos_token_id",
        )
        if key in target
    }
    for key in ("rope_theta", "rope_parameters", "rope_scaling"):
        if target.get(key) is not None:
            base[key] = target[key]
    base.update(head_dim=head_dim, num_hidden_layers=1, tie_word_embeddings=False)
    base["torch_dtype"] = "bfloat16"

    def head(config: dict, weights: dict[str, torch.Tensor]) -> Callable[[Path], None]:
        def write(part: Path) -> None:
            (part / "config.json").write_text(json.dumps(config, indent=1))
            save_file(weights, str(part / "model.safetensors"), metadata={"format": "pt"})
            for name in TOKENIZER_FILES:
                shutil.copy2(out / TARGET / name, part / name)

        return write

    eagle3 = layer("midlayer", 2 * hidden) | {
        "midlayer.input_layernorm.weight": ones(hidden),
        "midlayer.hidden_norm.weight": ones(hidden),
        "fc.weight": rand(hidden, 3 * hidden),
        "norm.weight": ones(hidden),
        "lm_head.weight": rand(vocab, hidden),
    }
    # the midlayer's attention reads [embeddings, hidden] (2H wide), its MLP the hidden width
    _publish(
        out,
        EAGLE3,
        head(
            base | {"architectures": ["LlamaForCausalLMEagle3"], "draft_vocab_size": vocab},
            eagle3,
        ),
    )
    eagle1 = layer("layers.0", hidden) | {"fc.weight": rand(hidden, 2 * hidden)}
    _publish(out, EAGLE1, head(base | {"architectures": ["LlamaForCausalLM"]}, eagle1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(SEED)
    convert(args.gguf, args.out)
    broken_draft(args.out)
    _eagle_heads(args.out)


if __name__ == "__main__":
    main()
