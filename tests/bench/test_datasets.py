"""Workloads: ShareGPT and JSONL files (streamed), random and built-in prompts, length
ranges, seeds, and the dataset's name and hash in every record."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from specconsole.bench.loadgen import plan_for, run_ladder
from specconsole.bench.workload import datasets
from specconsole.bench.workload.datasets import iter_json_entries, load_dataset
from specconsole.bench.workload.prompts import PromptError
from specconsole.core.plans.parse import parse_plan
from specconsole.core.ports import BenchSpec
from specconsole.sim.physics.textkind import classify
from tests.bench.servers import mini_server


def _sharegpt(path: Path, n: int) -> Path:
    entries = [
        {
            "id": f"c{i}",
            "conversations": [
                {"from": "human", "value": f"Question {i}: explain how tides work in detail."},
                {"from": "gpt", "value": "Tides are caused by the moon. " * (i + 1)},
            ],
        }
        for i in range(n)
    ]
    entries.insert(1, {"id": "short", "conversations": [{"from": "human", "value": "hi"}]})
    path.write_text(json.dumps(entries, indent=1))
    return path


def test_sharegpt_is_read_as_a_stream_and_hashed(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = _sharegpt(tmp_path / "sg.json", 400)
    monkeypatch.setattr(datasets, "_READ_BLOCK", 256)  # many partial reads
    seen: list[int] = []
    real = datasets.iter_json_entries

    def spy(p: str):  # type: ignore[no-untyped-def]
        for number, obj in real(p):
            seen.append(number)
            yield number, obj

    monkeypatch.setattr(datasets, "iter_json_entries", spy)
    prompts, settings = load_dataset(f"sharegpt:{path}", 10, input_len=64, output_len=32)
    assert len(prompts) == 10 and all(p.text.startswith("Question") for p in prompts)
    assert max(seen) == 11  # stopped after the entries it needed (one short entry skipped)
    assert settings["dataset_name"] == "sharegpt" and settings["dataset_path"] == str(path)
    assert settings["dataset_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert all(p.output_len == 32 for p in prompts)


def test_json_lines_and_arrays_decode_alike(tmp_path: Path) -> None:
    objs = [{"a": i, "s": "x" * 300} for i in range(5)]
    (tmp_path / "a.json").write_text(json.dumps(objs))
    (tmp_path / "b.jsonl").write_text("\n".join(json.dumps(o) for o in objs))
    assert [o for _, o in iter_json_entries(str(tmp_path / "a.json"))] == objs
    assert [o for _, o in iter_json_entries(str(tmp_path / "b.jsonl"))] == objs
    (tmp_path / "bad.json").write_text('[{"a": 1}, {"a": ')
    with pytest.raises(PromptError, match="entry 2 is not valid JSON"):
        list(iter_json_entries(str(tmp_path / "bad.json")))
    (tmp_path / "nc.json").write_text('[{"a": 1}]')
    with pytest.raises(PromptError, match='no "conversations"'):
        load_dataset(f"sharegpt:{tmp_path / 'nc.json'}", 3, input_len=8, output_len=8)


def test_range_ratio_and_seed_follow_bench_serving(tmp_path: Path) -> None:
    prompts, settings = load_dataset(
        "random", 200, input_len=100, output_len=40, range_ratio=0.5, seed=3
    )
    ins = [p.est_tokens for p in prompts]
    outs = [p.output_len for p in prompts]
    assert min(ins) >= 50 and max(ins) <= 100 and len(set(ins)) > 20
    assert all(o is not None and 20 <= o <= 40 for o in outs)
    again, _ = load_dataset("random", 200, input_len=100, output_len=40, range_ratio=0.5, seed=3)
    assert again == prompts
    other, _ = load_dataset("random", 200, input_len=100, output_len=40, range_ratio=0.5, seed=4)
    assert other != prompts and settings["random_range_ratio"] == 0.5
    fixed, _ = load_dataset("builtin", 20, input_len=64, output_len=16)
    assert all(p.output_len is None for p in fixed)  # the plan's fixed length
    with pytest.raises(PromptError, match="--range-ratio"):
        load_dataset("random", 2, input_len=8, output_len=8, range_ratio=0)
    jl = tmp_path / "p.jsonl"
    jl.write_text('{"prompt": "Write a bash script that counts lines.", "output_len": 7}\n')
    (p,), s = load_dataset(f"jsonl:{jl}", 1, input_len=8, output_len=99)
    assert p.output_len == 7 and s["dataset_name"] == "custom"


def test_builtin_set_has_chat_code_and_summarisation() -> None:
    prompts, settings = load_dataset("builtin", 48, input_len=512, output_len=16)
    kinds = {classify(p.text).value for p in prompts}
    assert {"chat", "code", "summarisation"} <= kinds and len(settings["dataset_sha256"]) == 64


async def test_records_carry_the_dataset_and_per_request_output_lengths(tmp_path: Path) -> None:
    path = _sharegpt(tmp_path / "sg.json", 20)
    spec = BenchSpec(
        ladder=(2,),
        requests_per_level=6,
        output_len=12,
        range_ratio=0.5,
        prompts=f"sharegpt:{path}",
        seed=1,
    )
    lens = [p.output_len for p in plan_for(spec).prompts[2:8]]  # after the 2 warm-ups
    with mini_server("--step-s", "0.001", "--chunks", "1,3,2") as url:
        result = await run_ladder(spec, url)
    record = result.records()[0]
    assert record["dataset_name"] == "sharegpt" and record["random_range_ratio"] == 0.5
    assert record["dataset_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert result.levels[0].total_output_tokens == sum(lens)  # type: ignore[arg-type]


def test_plan_takes_dataset_and_range_ratio() -> None:
    spec = parse_plan(
        {
            "server": {"model_path": "m"},
            "bench": {"dataset": "sharegpt:/data/sg.json", "range_ratio": 0.25, "seed": 7},
        }
    ).bench
    assert (spec.prompts, spec.range_ratio, spec.seed) == ("sharegpt:/data/sg.json", 0.25, 7)


def _answer_lens(path: Path) -> dict[str, int]:
    """Each ShareGPT question → its answer's estimated tokens (~4 characters a token)."""
    from specconsole.bench.workload.prompts import estimate_tokens

    entries = json.loads(path.read_text())
    return {
        e["conversations"][0]["value"]: estimate_tokens(e["conversations"][1]["value"])
        for e in entries
        if len(e["conversations"]) > 1
    }


def test_sharegpt_answers_set_the_output_lengths_as_bench_serving_samples_them(
    tmp_path: Path,
) -> None:
    path = _sharegpt(tmp_path / "sg.json", 30)
    entries = json.loads(path.read_text())
    entries.insert(3, {"conversations": [{"from": "human", "value": "What is a lunar tide?"}]})
    entries.insert(
        5, {"conversations": [{"from": "human", "value": "Why?"}, {"from": "gpt", "value": "No"}]}
    )
    path.write_text(json.dumps(entries))
    answers = _answer_lens(path)
    prompts, settings = load_dataset(
        f"sharegpt:{path}", 24, input_len=64, output_len=32, range_ratio=0.5, reply_lengths=True
    )
    assert settings["output_len_source"] == "dataset"
    # every request generates its conversation's answer length (no range drawn); entries
    # without an answer, or with one under 2 tokens, are pruned as bench_serving does
    assert all(p.output_len == answers[p.text] for p in prompts)
    assert {p.text for p in prompts} <= {t for t, n in answers.items() if n >= 2}
    assert len({p.output_len for p in prompts}) > 10  # the dataset's own spread of lengths
    fixed, fixed_settings = load_dataset(f"sharegpt:{path}", 24, input_len=64, output_len=32)
    assert {p.output_len for p in fixed} == {32} and "output_len_source" not in fixed_settings
    assert any(p.text == "What is a lunar tide?" for p in fixed)  # usable without an answer


def test_custom_lines_carry_their_answers(tmp_path: Path) -> None:
    path = tmp_path / "custom.jsonl"
    lines = [
        # bench_serving's custom format: role/content (or from/value) conversations
        {
            "conversations": [
                {"role": "user", "content": "Summarise the plot of Hamlet."},
                {"role": "assistant", "content": "A prince avenges his father. " * 8},
            ]
        },
        # OpenAI messages whose last turn is the recorded answer: not part of the prompt
        {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Name three prime numbers."},
                {"role": "assistant", "content": "Two, three and five."},
            ]
        },
        # an explicit output_len wins over the recorded answer
        {
            "messages": [
                {"role": "user", "content": "Count to ten, please."},
                {"role": "assistant", "content": "one two three four five six seven"},
            ],
            "output_len": 5,
        },
        {"prompt": "Write a haiku about tides."},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    prompts, _settings = load_dataset(
        f"jsonl:{path}", 4, input_len=64, output_len=40, reply_lengths=True, seed=3
    )
    by_start = {p.text.split()[0]: p for p in prompts}
    hamlet = by_start["Summarise"]
    assert hamlet.output_len == round(len("A prince avenges his father. " * 8) / 4)
    primes = by_start["system:"]
    assert primes.chat_messages()[-1] == {"role": "user", "content": "Name three prime numbers."}
    assert primes.output_len == round(len("Two, three and five.") / 4)
    assert by_start["user:"].output_len == 5
    assert by_start["Write"].output_len == 40  # no answer recorded: the plan's length
    with pytest.raises(PromptError, match="each turn must be an object"):
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"conversations": ["hello"]}\n')
        load_dataset(f"jsonl:{bad}", 1, input_len=8, output_len=8)


def test_the_plan_and_the_cli_take_the_datasets_lengths_unless_one_is_given(
    tmp_path: Path,
) -> None:
    from specconsole.core.plans.plan import PlanError

    def bench(**more: object) -> BenchSpec:
        table = {"dataset": "sharegpt:/data/sg.json", **more}
        return parse_plan({"server": {"model_path": "m"}, "bench": table}).bench

    assert bench().output_len_from_dataset and bench().output_len == 256
    given = bench(output_len=128)
    assert not given.output_len_from_dataset and given.output_len == 128
    with pytest.raises(PlanError, match="output_len_from_dataset"):
        bench(output_len_from_dataset=True)
    from specconsole.core.plans.parse import plan_document

    for table in (
        {"dataset": "sharegpt:/d.json"},
        {"dataset": "sharegpt:/d.json", "output_len": 9},
    ):
        plan = parse_plan({"server": {"model_path": "m"}, "bench": table})
        assert parse_plan(plan_document(plan)).bench == plan.bench  # a plan written back
    path = _sharegpt(tmp_path / "sg.json", 12)
    answers = _answer_lens(path)
    spec = BenchSpec(
        ladder=(1,),
        requests_per_level=4,
        prompts=f"sharegpt:{path}",
        output_len_from_dataset=True,
        warmup_requests=0,
    )
    plan = plan_for(spec)
    assert [p.output_len for p in plan.prompts] == [answers[p.text] for p in plan.prompts]
