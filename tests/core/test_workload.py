"""The workloads a speculative sweep can trust (issue 31): the templated built-in sets (each
prompt in its model's chat template on the text APIs, a user message on the chat API), and
the warning for random tokens or bare template-less text."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.bench.workload.datasets import load_dataset
from specconsole.commands.tui import DEMO_STORIES, demo_plan, read_console_file
from specconsole.controller.probe.preflight import local_report
from specconsole.core.config.chat_templates import apply_template, template_for
from specconsole.core.machine.handlers.preflight import PreflightFacts, run_checks
from specconsole.core.plans.workload import workload_warning
from specconsole.core.ports import BenchApi
from specconsole.paths import examples_dir
from specconsole.sim.physics.textkind import TextKind, classify
from tests.controller.helpers import plan


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("Qwen/Qwen3.5-122B-A10B-FP8", "chatml"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama3"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral"),
        ("google/gemma-2-9b-it", "gemma"),
        ("deepseek-ai/DeepSeek-V3", "deepseek"),
        ("/models/mystery", "chatml"),
        (None, "chatml"),
    ],
)
def test_a_models_template(model: str | None, family: str) -> None:
    assert template_for(model) == family


def test_templates_wrap_one_user_turn() -> None:
    assert (
        apply_template("chatml", "Hi") == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert apply_template("llama3", "Hi").endswith(
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )


@pytest.mark.parametrize(("dataset", "kind"), [("coding", TextKind.CODE), ("prose", TextKind.CHAT)])
def test_the_templated_sets(dataset: str, kind: TextKind) -> None:
    prompts, settings = load_dataset(
        dataset, 12, input_len=512, output_len=64, chat_template="llama3"
    )
    assert settings["dataset_name"] == dataset and settings["chat_template"] == "llama3"
    for p in prompts:
        message = p.chat_messages()
        assert len(message) == 1 and message[0]["role"] == "user"
        assert p.text == apply_template("llama3", message[0]["content"])  # text APIs: wrapped
    kinds = {classify(p.text) for p in prompts}
    assert kind in kinds and TextKind.RANDOM not in kinds


def test_the_warning() -> None:
    speculative = plan()  # EAGLE-3 steps, /generate, the built-in prompts
    assert "without the model's chat template" in workload_warning(speculative)
    randoms = replace(speculative, bench=replace(speculative.bench, prompts="random"))
    assert "random tokens" in workload_warning(randoms)
    chat = replace(speculative, bench=replace(speculative.bench, api=BenchApi.CHAT))
    assert workload_warning(chat) == ""
    coding = replace(speculative, bench=replace(speculative.bench, prompts="coding"))
    assert workload_warning(coding) == ""
    plain = replace(
        speculative,
        base=replace(
            speculative.base, speculative_algorithm=None, speculative_draft_model_path=None
        ),
        axes=(),
    )
    assert workload_warning(plain) == ""  # nothing drafts: acceptance is not the question
    report = run_checks(PreflightFacts(plan=randoms))
    assert [(f.check, f.blocking) for f in report.findings] == [("workload", False)]


def test_the_template_warning_only_where_a_template_moves_acceptance() -> None:
    """Bare text reads low for a trained draft on a real engine only: n-gram lookup drafts
    from the text whatever wraps it, and the simulator reads the text's kind, never its
    template; random tokens read low for every drafter."""
    speculative = plan()
    assert "chat template" in workload_warning(speculative)
    simulated = replace(
        speculative, base=replace(speculative.base, launcher="/v/bin/python -m specconsole.sim")
    )
    assert workload_warning(simulated) == ""
    sim_random = replace(simulated, bench=replace(simulated.bench, prompts="random"))
    assert "random tokens" in workload_warning(sim_random)
    ngram = replace(
        speculative,
        base=replace(
            speculative.base, speculative_algorithm="NGRAM", speculative_draft_model_path=None
        ),
    )
    assert workload_warning(ngram) == ""
    assert "random tokens" in workload_warning(
        replace(ngram, bench=replace(ngram.bench, prompts="random"))
    )


def _shipped_plans() -> list[Path]:
    return sorted(p for p in examples_dir().glob("*.toml"))


@pytest.mark.parametrize("path", _shipped_plans(), ids=lambda p: p.name)
def test_every_shipped_example_is_clean_at_pre_flight(path: Path) -> None:
    """Issue 42 #8: the shipped demo plan warned about itself at pre-flight. Every plan in
    examples/ passes every check that needs no box (the box's own facts — reach, release,
    flags, GPUs, its unit — are the box's, not the example's)."""
    console_plan, _theme = read_console_file(path)
    report = run_checks(PreflightFacts(plan=console_plan))
    assert report.findings == (), [f.message for f in report.findings]
    assert local_report(console_plan).findings == ()


@pytest.mark.parametrize("story", sorted(DEMO_STORIES))
@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_every_demo_story_is_clean_at_pre_flight(story: str, engine: str) -> None:
    """``specconsole demo`` (every story, every engine) starts without a pre-flight warning."""
    if engine not in DEMO_STORIES[story]:
        pytest.skip(f"no {engine} face for the {story} story")
    demo = demo_plan(engine=engine, story=story)
    assert run_checks(PreflightFacts(plan=demo)).findings == ()
