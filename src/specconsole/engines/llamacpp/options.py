"""llama-server's own ``[server]`` keys: the speculative and capacity knobs a tuner sweeps.

Why its own keys: llama.cpp's speculation is not SGLang's tree (an algorithm, steps, topk,
draft tokens) but a draft model with a type (``--spec-type draft-simple``), a maximum and a
minimum draft length and a probability cut-off; its capacity is a context size shared by a
number of slots (``-c``, ``--parallel``), not a memory fraction. Users tune these by their
llama.cpp names, so the keys are those names (the long flag without ``--``, dashes as
underscores) — except the draft model, ``speculative_draft_model_path`` (``-md``), whose name
its plans have always used. The shared fields it uses are ``model_path`` (``-m``), ``host``
and ``port``.

Each key has every spelling llama.cpp builds have used for it (:data:`SPELLINGS`, newest
first): a command line is read back whatever it says, and rendered in the spelling the box's
binary accepts (its ``--help``, ``ServerConfig.box_flags``) — this generation renamed
``--draft-max`` to ``--spec-draft-n-max`` and exits 1 on the old name, older builds know only
the old one.
"""

from __future__ import annotations

from specconsole.core.config.concepts import Concept
from specconsole.core.config.options import OptionField

__all__ = ["OPTION_FIELDS", "SPEC_TYPES", "SPELLINGS"]

SPEC_TYPES: tuple[str, ...] = (
    "none",
    "draft-simple",
    "draft-eagle3",
    "draft-mtp",
    "draft-dflash",
    "draft-dspark",
    "ngram-simple",
    "ngram-map-k",
    "ngram-map-k4v",
    "ngram-mod",
    "ngram-cache",
)
"""``--spec-type``'s values in this generation (its ``--help``); ``none`` is the default."""

_LAYERS = ("auto", "all")
"""Words ``-ngl`` / ``-ngld`` take besides a number of layers."""

OPTION_FIELDS: tuple[OptionField, ...] = (
    OptionField(
        "speculative_draft_model_path",
        "str",
        "--spec-draft-model",
        "the draft model (-md): a GGUF file on the box",
        plain=True,
        leads=True,
        concept=Concept.DRAFT_MODEL,
    ),
    OptionField(
        "spec_type",
        "choice",
        "--spec-type",
        "speculation type (draft-simple: a draft model; default none)",
        choices=SPEC_TYPES,
        example='"draft-simple"',
        short="spec",
        concept=Concept.METHOD,
        edit=True,
    ),
    OptionField(
        "spec_draft_n_max",
        "int",
        "--spec-draft-n-max",
        "tokens drafted per step at most (default 3)",
        minimum=0,
        maximum=1024,
        example="4",
        short="n_max",
        concept=Concept.DRAFT_LENGTH,
        edit=True,
    ),
    OptionField(
        "spec_draft_n_min",
        "int",
        "--spec-draft-n-min",
        "tokens drafted per step at least (default 0)",
        minimum=0,
        maximum=1024,
        example="0",
        short="n_min",
        edit=True,
    ),
    OptionField(
        "spec_draft_p_min",
        "float",
        "--spec-draft-p-min",
        "stop drafting below this draft probability (default 0)",
        minimum=0,
        maximum=1,
        example="0.5",
        short="p_min",
        edit=True,
    ),
    OptionField(
        "spec_draft_p_split",
        "float",
        "--spec-draft-p-split",
        "draft split probability (default 0.1)",
        minimum=0,
        maximum=1,
        example="0.1",
        short="p_split",
    ),
    OptionField(
        "spec_draft_sampling",
        "choice",
        "--spec-draft-sampling",
        "draft sampling: greedy or probabilistic",
        choices=("greedy", "probabilistic"),
        short="sampling",
    ),
    OptionField(
        "spec_draft_ngl",
        "int",
        "--spec-draft-ngl",
        "draft layers offloaded to the GPU (auto, all or a number)",
        minimum=0,
        maximum=100_000,
        choices=_LAYERS,
        example="99",
        short="ngld",
        edit=True,
    ),
    OptionField(
        "spec_draft_threads",
        "int",
        "--spec-draft-threads",
        "CPU threads of the draft (-1: as --threads)",
        minimum=-1,
        maximum=4096,
        example="1",
        short="td",
        edit=True,
    ),
    OptionField(
        "spec_synth_len",
        "float",
        "--spec-synth-len",
        "benchmarking only: synthetic mean acceptance length",
        minimum=1,
        maximum=1024,
        example="2.5",
        short="synth_len",
    ),
    OptionField(
        "spec_synth_rates",
        "str",
        "--spec-synth-rates",
        "benchmarking only: per-position acceptance probabilities P0,P1,...",
        example='"0.9,0.8,0.7"',
        short="synth",
    ),
    OptionField(
        "ctx_size",
        "int",
        "--ctx-size",
        "context tokens shared by the slots (0: the model's)",
        minimum=0,
        maximum=1_000_000_000,
        example="8192",
        short="ctx",
        concept=Concept.CONTEXT_LENGTH,
        edit=True,
    ),
    OptionField(
        "parallel",
        "int",
        "--parallel",
        "server slots: requests decoded at once (-1: auto, 4)",
        minimum=-1,
        maximum=1_000_000,
        example="4",
        short="np",
        concept=Concept.MAX_CONCURRENCY,
        edit=True,
    ),
    OptionField(
        "threads",
        "int",
        "--threads",
        "CPU threads for generation (-1: auto)",
        minimum=-1,
        maximum=4096,
        example="8",
        short="t",
        edit=True,
    ),
    OptionField(
        "n_gpu_layers",
        "int",
        "--n-gpu-layers",
        "target layers offloaded to the GPU (auto, all or a number)",
        minimum=0,
        maximum=100_000,
        choices=_LAYERS,
        example="99",
        short="ngl",
        edit=True,
    ),
    OptionField(
        "fit",
        "choice",
        "--fit",
        "fit unset sizes to device memory",
        choices=("on", "off"),
    ),
    OptionField("metrics", "bool", "--metrics", "serve /metrics (acceptance needs it)"),
)
"""The keys in the order files, editors and command lines show them."""

SPELLINGS: dict[str, tuple[str, ...]] = {
    "model_path": ("--model", "-m"),
    "speculative_draft_model_path": ("--spec-draft-model", "-md", "--model-draft"),
    "spec_type": ("--spec-type",),
    "spec_draft_n_max": ("--spec-draft-n-max", "--draft-max", "--draft", "--draft-n"),
    "spec_draft_n_min": ("--spec-draft-n-min", "--draft-min", "--draft-n-min"),
    "spec_draft_p_min": ("--spec-draft-p-min", "--draft-p-min"),
    "spec_draft_p_split": ("--spec-draft-p-split", "--draft-p-split"),
    "spec_draft_sampling": ("--spec-draft-sampling",),
    "spec_draft_ngl": ("--spec-draft-ngl", "-ngld", "--gpu-layers-draft", "--n-gpu-layers-draft"),
    "spec_draft_threads": ("--spec-draft-threads", "-td", "--threads-draft"),
    "spec_synth_len": ("--spec-synth-len",),
    "spec_synth_rates": ("--spec-synth-rates",),
    "ctx_size": ("--ctx-size", "-c"),
    "parallel": ("--parallel", "-np"),
    "threads": ("--threads", "-t"),
    "n_gpu_layers": ("--n-gpu-layers", "-ngl", "--gpu-layers"),
    "fit": ("--fit", "-fit"),
    "metrics": ("--metrics",),
    "host": ("--host",),
    "port": ("--port",),
}
"""Every spelling of each key llama.cpp builds accept(ed), the rendered one first: this
generation's long name, then its aliases, then the names older builds used (``--draft-max``,
removed here: the server exits 1 on it)."""
