"""``nvidia-smi`` from a broken or lying box (issue 44): the telemetry's CSV reader, the
probe's GPU query and the figures folded from them are total over generated hostile lines —
no exception, no figure outside its range reaching a record (memory within its total, power
and temperature finite and bounded, utilisation in [0, 100]), ``[N/A]`` kept as what the box
said and never read as 0, and tokens per joule only where every GPU's power is known.

Each property runs :data:`tests.fixtures.hostile.EXAMPLES` generated inputs (the issue's bar: at
least 1,000)."""

from __future__ import annotations

import math
import re

from hypothesis import given
from hypothesis import strategies as st

from specconsole.core.boxfacts import parse_gpus
from specconsole.core.measure.gpu import (
    MAX_MEMORY_MIB,
    MAX_POWER_W,
    MAX_TEMPERATURE_C,
    GpuSample,
    GpuSpan,
    TrialGpu,
    fold,
    parse_sample,
)
from specconsole.core.measure.trials import LevelSummary
from specconsole.present.figures.gpu import gpu_line, level_energy
from tests.fixtures.hostile import PROPERTY

figures = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**12), 10**12).map(str),
    st.sampled_from(
        [
            "[N/A]",
            "[Not Supported]",
            "N/A",
            "",
            "47.6 GiB",
            "287 mW",
            "287.41 W",
            "43310 MiB",
            "100 %",
            "67 C",
            "1e400",
            "-0",
            "nan",
            "ERR!",
        ]
    ),
)
indices = st.one_of(st.integers(0, 9).map(str), st.sampled_from(["-1", "x", "", "99999", "0x1"]))


@st.composite
def smi_lines(draw: st.DrawFn) -> str:
    fields = [
        draw(st.sampled_from(["2026/12/06 02:32:06.123", "", "garbage"])),
        draw(indices),
        *(draw(figures) for _ in range(5)),
    ]
    if draw(st.booleans()):  # a field too many or too few, or a line that is no sample
        cut = draw(st.integers(0, len(fields)))
        fields = fields[:cut] + draw(st.lists(st.text(max_size=8), max_size=2))
    return ", ".join(fields)


lines = st.one_of(smi_lines(), st.text(max_size=80))


def _sample_in_range(s: GpuSample) -> None:
    assert 0 <= s.index < 1000
    assert 0 < s.memory_total_mib <= MAX_MEMORY_MIB
    assert 0 <= s.memory_used_mib <= s.memory_total_mib
    assert 0.0 <= s.memory_share <= 1.0
    if s.utilization_pct is not None:
        assert 0 <= s.utilization_pct <= 100
    if s.power_w is not None:
        assert math.isfinite(s.power_w) and 0 <= s.power_w <= MAX_POWER_W
    else:
        assert s.said("power.draw")  # what the box printed instead, kept
    if s.temperature_c is not None:
        assert 0 <= s.temperature_c <= MAX_TEMPERATURE_C


@PROPERTY
@given(lines)
def test_a_telemetry_line_is_a_sample_in_range_or_none(line: str) -> None:
    sample = parse_sample(line)
    if sample is not None:
        _sample_in_range(sample)
        assert GpuSample.from_dict(sample.to_dict()) == sample


@PROPERTY
@given(st.lists(lines, max_size=24), st.floats(0, 1e6))
def test_a_level_never_shows_energy_from_part_of_its_gpus(raw: list[str], tok_s: float) -> None:
    samples = [s for s in map(parse_sample, raw) if s is not None]
    span = GpuSpan(fold((), samples))
    level = LevelSummary(
        concurrency=1, output_tok_s=tok_s, per_request_tok_s=1.0, completed=1, gpu=span
    )
    sampled = [g for g in span.gpus if g.samples]
    if span.power_w is not None:
        assert all(g.power_samples for g in sampled)
        assert 0 <= span.power_w <= MAX_POWER_W * len(sampled)
    if any(not g.power_samples for g in sampled):
        assert span.power_w is None and level.tokens_per_joule is None
        assert "tok/J unknown (no power from GPU" in level_energy(level)
    tpj = level.tokens_per_joule
    assert tpj is None or (math.isfinite(tpj) and tpj >= 0)
    for width in (200, 120, 80):  # a GPU whose power is unknown never reads as 0 W
        text = gpu_line(samples[-8:], width)
        zero = re.search(r"(?<![\d,.])0 ?W", text)
        assert not zero or any(s.power_w is not None and s.power_w < 0.5 for s in samples)


@PROPERTY
@given(
    st.lists(st.one_of(st.text(max_size=40), lines.map(lambda x: "NVIDIA H100, " + x)), max_size=12)
)
def test_the_probes_gpu_query_is_total(raw: list[str]) -> None:
    for gpu in parse_gpus("\n".join(raw)):
        assert gpu.name and gpu.name.isprintable() and len(gpu.name) <= 80
        total, used = gpu.memory_total_mib, gpu.memory_used_mib
        assert total is None or 0 <= total <= MAX_MEMORY_MIB
        assert used is None or 0 <= used <= MAX_MEMORY_MIB
        if total is not None and used is not None:
            assert used <= total


def test_what_the_box_says_instead_of_a_figure_is_shown_as_such() -> None:
    na = parse_sample("2026/12/06 02:32:06.123, 0, 43310, 49140, 100, [N/A], 67")
    unsupported = parse_sample("2026/12/06 02:32:06.123, 1, 43310, 49140, 97, [Not Supported], 66")
    ok = parse_sample("2026/12/06 02:32:06.123, 2, 43310, 49140, 99, 287.41, 68")
    assert na is not None and unsupported is not None and ok is not None
    assert na.power_w is None and na.said("power.draw") == "[N/A]"
    line = gpu_line([na, unsupported, ok], 200)
    assert "[N/A]" in line and "[Not Supported]" in line and " 0 W" not in line
    assert "power [N/A]" in gpu_line([na, unsupported, ok], 60)  # every GPU in one
    span = GpuSpan(fold((), [na, unsupported, ok]))
    assert span.power_w is None and span.power_unknown == "no power from GPU 0, 1"
    # a wrong unit, a negative or impossible figure, memory past its total: not read
    assert parse_sample("t, 0, 47.6 GiB, 49140, 100, 287, 67") is None  # GiB is no MiB
    assert parse_sample("t, 0, 43310, 49140, 100, 287 mW, 67").power_w is None  # type: ignore[union-attr]
    assert parse_sample("t, 0, 43310, 49140, 250, -3, 67").utilization_pct is None  # type: ignore[union-attr]
    assert parse_sample("t, 0, 59000, 49140, 100, 287, 67") is None


def test_a_power_of_next_to_nothing_divides_nothing_and_half_a_watt_is_not_0_w() -> None:
    """The two cases Hypothesis found on main: a subnormal power (2.2e-309 W) made tokens per
    joule infinite, and 0.5 W read "0 W" (Python rounds halves to even)."""
    idle = "2026/12/06 02:32:06.123, 0, 0.0, 1.0, 0.0, {}, 0.0"
    tiny, half = parse_sample(idle.format("2.225073858507203e-309")), parse_sample(idle.format(0.5))
    assert tiny is not None and half is not None
    for faint in (tiny, half):
        span = GpuSpan(fold((), [faint]))
        assert span.power_w is None and span.tokens_per_joule(1.0) is None
        assert span.power_unknown == "GPU 0 reported under 1 W"
        level = LevelSummary(
            concurrency=1, output_tok_s=1.0, per_request_tok_s=1.0, completed=1, gpu=span
        )
        assert level_energy(level).startswith("tok/J unknown (GPU 0 reported under 1 W)")
    assert "GPU0" in gpu_line([half], 200) and " 1 W" in gpu_line([half], 200)
    assert "0 W" not in gpu_line([half], 200) and "0W" not in gpu_line([half], 60)
    two = parse_sample(idle.format(2.5))
    working = parse_sample(idle.format(287.5))
    assert two is not None and working is not None
    assert " 3 W" in gpu_line([two], 200) and " 288 W" in gpu_line([working], 200)
    span = GpuSpan(fold((), [working]))
    assert span.tokens_per_joule(575.0) == 2.0
    assert span.tokens_per_joule(math.inf) is None and span.tokens_per_joule(math.nan) is None


def test_memory_another_process_holds_is_named_in_the_preflight() -> None:
    from specconsole.core.boxfacts import BoxProbe, foreign_memory
    from specconsole.core.machine.handlers.preflight import PreflightFacts, check_gpus
    from tests.controller.helpers import plan

    gpus = parse_gpus("NVIDIA H100, 81559, 12800\nNVIDIA H100, 81559, 3\n")
    idle = BoxProbe(target="box", gpus=gpus, service_state="inactive")
    text = foreign_memory(idle)
    assert text.startswith("another process holds GPU memory with the service inactive")
    assert "GPU 0 12.5 GiB" in text and "GPU 1" not in text
    (finding,) = check_gpus(PreflightFacts(plan=plan(), extra={"gpus": text}))
    assert finding.check == "gpus" and not finding.blocking
    # the server itself runs: what it holds is its own
    assert foreign_memory(BoxProbe(target="box", gpus=gpus, service_state="running")) == ""


def test_the_report_says_a_levels_power_is_unknown_never_a_partial_sum() -> None:
    from specconsole.core.measure.trials import TrialRecord, TrialStatus
    from specconsole.session.reports.gpu_report import level_rows
    from tests.controller.helpers import plan

    na = parse_sample("2026/12/06 02:32:06.123, 0, 43310, 49140, 100, [N/A], 67")
    ok = parse_sample("2026/12/06 02:32:06.123, 1, 43310, 49140, 99, 287.41, 68")
    assert na is not None and ok is not None
    level = LevelSummary(
        concurrency=4,
        output_tok_s=900.0,
        per_request_tok_s=225.0,
        completed=8,
        gpu=GpuSpan(fold((), [na, ok])),
    )
    record = TrialRecord(
        index=0,
        config=plan().base,
        status=TrialStatus.OK,
        levels=(level,),
        gpu=TrialGpu().with_level(4, [na, ok]),
    )
    ((_, c, _, power, _, _, tpj),) = level_rows([record])
    assert (c, power, tpj) == ("4", "unknown (no power from GPU 0)", "unknown")
