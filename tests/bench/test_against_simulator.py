"""End to end against the simulator (a real process): measured rates match its predict()."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from specconsole.bench.runner import ThreadedBenchmarkRunner
from specconsole.core.ports import BenchApi, BenchSpec
from specconsole.sim.faces.sglang.args import parse_argv
from specconsole.sim.faces.sglang.resolve import resolve
from specconsole.sim.forecast import predict
from specconsole.sim.physics.model import Prediction
from specconsole.sim.physics.textkind import TextKind
from specconsole.sim.profile import load_default_profile
from tests.fixtures.sim import DEFAULT_FLAGS, SimProcess, running_simulator

pytestmark = pytest.mark.serial  # figures against the model

INPUT_LEN = 256
OUTPUT_LEN = 128


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with running_simulator() as process:
        yield process


def prediction(concurrency: int) -> Prediction:
    profile = load_default_profile()
    args = resolve(parse_argv(list(DEFAULT_FLAGS)), profile)
    # Random word prompts draft as the simulator's "random" kind (docs/simulator.md).
    return predict(args, concurrency, INPUT_LEN, OUTPUT_LEN, profile, kind=TextKind.RANDOM)


@pytest.mark.slow
async def test_rates_match_the_simulators_prediction(sim: SimProcess) -> None:
    # Random prompts: the simulator counts one token per word, so the prompt is exactly
    # INPUT_LEN tokens as predict() assumes. Two measured waves at c = 32.
    # Default request count: max(8, 4c) per level.
    spec = BenchSpec(ladder=(1, 32), input_len=INPUT_LEN, output_len=OUTPUT_LEN, prompts="random")
    result = await ThreadedBenchmarkRunner().run(spec, sim.base_url)
    assert not result.partial, result.error
    for concurrency, requests in ((1, 8), (32, 128)):
        level = result.level(concurrency)
        assert level is not None and level.completed == requests and level.failed == 0
        expected = prediction(concurrency)
        assert level.total_input_tokens == requests * INPUT_LEN
        assert level.mean_request_tok_s == pytest.approx(expected.per_request_tok_s, rel=0.03)
        assert level.output_throughput == pytest.approx(expected.aggregate_tok_s, rel=0.03)
        assert level.accept_length == pytest.approx(expected.accept_length, rel=0.1)
        assert level.request_accept_length == pytest.approx(expected.accept_length, rel=0.1)
        print(
            f"c={concurrency}: per-request {level.mean_request_tok_s:.2f} vs "
            f"{expected.per_request_tok_s:.2f}, aggregate {level.output_throughput:.1f} vs "
            f"{expected.aggregate_tok_s:.1f}"
        )
    assert result.single_request_tok_s > result.level(32).mean_decode_tok_s  # type: ignore[union-attr]
    assert result.peak_aggregate_tok_s == result.level(32).output_throughput  # type: ignore[union-attr]


@pytest.mark.slow
@pytest.mark.parametrize("api", [BenchApi.COMPLETIONS, BenchApi.CHAT])
async def test_openai_apis_against_the_simulator(sim: SimProcess, api: BenchApi) -> None:
    spec = BenchSpec(
        ladder=(4,), requests_per_level=8, input_len=64, output_len=32, prompts="random", api=api
    )
    result = await ThreadedBenchmarkRunner().run(spec, sim.base_url)
    level = result.levels[0]
    assert level.completed == 8 and level.total_output_tokens == 8 * 32
    assert level.latency_ms["mean_itl_ms"] > 0 and level.accept_length is not None


@pytest.mark.slow
async def test_stalled_streams_fail_as_timeouts_in_both_clients() -> None:
    from specconsole.bench.remote_runner import RemoteBenchmarkRunner
    from specconsole.remote.transport.local import LocalTransport

    spec = BenchSpec(
        ladder=(2,),
        requests_per_level=2,
        warmup_requests=0,
        output_len=50,
        prompts="random",
        input_len=16,
        request_timeout_s=0.5,
    )
    with running_simulator("--sim-stall-after-tokens", "5") as stalled:
        for runner in (ThreadedBenchmarkRunner(), RemoteBenchmarkRunner(LocalTransport())):
            result = await runner.run(spec, stalled.base_url)
            assert result.levels[0].errors == {"timeout": 2}
            assert result.error is not None and "timeout x2" in result.error
