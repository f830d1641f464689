"""The chat templates of the common model families, for prompts sent as plain text.

Why: a draft head is trained on the conversations its model serves — the model's chat
template around every turn — so a speculative sweep benchmarked on bare text (``/generate``,
``/v1/completions`` without the template) measures an acceptance the model never shows in
production: it reads low. The chat API gets the template from the server itself; for the
text APIs the built-in ``coding`` and ``prose`` workloads wrap each prompt in its model's
template, chosen here from the model's name (``[server] model_path``, ``[bench] model``).
The table holds the families' single-turn user-then-assistant shapes as each publishes them
(``tokenizer_config.json``'s ``chat_template`` rendered for one user message, with the
generation prompt); an unknown family gets ChatML, the most common one.
"""

from __future__ import annotations

import re

__all__ = ["CHAT_TEMPLATES", "DEFAULT_TEMPLATE", "apply_template", "template_for"]

CHAT_TEMPLATES: dict[str, tuple[str, str]] = {
    "llama3": (
        r"llama-?3|llama3",
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n{prompt}<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
    ),
    "mistral": (r"mistral|mixtral|ministral", "<s>[INST] {prompt} [/INST]"),
    "gemma": (
        r"gemma",
        "<bos><start_of_turn>user\n{prompt}<end_of_turn>\n<start_of_turn>model\n",
    ),
    "deepseek": (r"deepseek-?(v3|r1)", "<｜begin▁of▁sentence｜><｜User｜>{prompt}<｜Assistant｜>"),
    "phi3": (r"phi-?[34]", "<|user|>\n{prompt}<|end|>\n<|assistant|>\n"),
    "chatml": (
        r"qwen|yi-|hermes|smollm|chatml",
        "<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n",
    ),
}
"""family → (a pattern of its model names, its single-turn shape with ``{prompt}``)."""

DEFAULT_TEMPLATE = "chatml"


def template_for(model: str | None) -> str:
    """The template family of a model by its name (a path or a hub id); ChatML when the
    name says nothing."""
    name = (model or "").lower()
    for family, (pattern, _shape) in CHAT_TEMPLATES.items():
        if re.search(pattern, name):
            return family
    return DEFAULT_TEMPLATE


def apply_template(family: str | None, prompt: str) -> str:
    """``prompt`` as one user turn of ``family``'s template, ready for the assistant."""
    shape = CHAT_TEMPLATES.get(family or DEFAULT_TEMPLATE, CHAT_TEMPLATES[DEFAULT_TEMPLATE])[1]
    return shape.replace("{prompt}", prompt)
