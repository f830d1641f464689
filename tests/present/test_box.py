"""The box probe as text: one fact a line, the first saying reachable or exactly why not."""

from __future__ import annotations

from specconsole.core.boxfacts import BoxProbe, GpuInfo
from specconsole.core.config.model import ServerConfig
from specconsole.present.box import gpu_text, probe_lines


def test_a_reachable_box_lists_engine_gpus_service_running_config_and_serving() -> None:
    probe = BoxProbe(
        target="gpu-box (ssh 10.0.0.5:22)",
        engine="sglang",
        engine_version="0.5.4",
        engine_version_source="detected",
        engine_version_detail="python3 -c 'import sglang'",
        gpus=(GpuInfo("NVIDIA H100", 81559, 1024), GpuInfo("NVIDIA H100")),
        service="systemd unit sglang.service",
        service_state="running",
        service_detail="active/running",
        running_config=ServerConfig(model_path="/models/q", port=30000),
        running_config_detail="parsed from sglang.service",
        serving=True,
        serving_detail="/health 200 on port 30000",
    )
    assert probe_lines(probe) == [
        "box gpu-box (ssh 10.0.0.5:22): reachable",
        "  engine: sglang 0.5.4 (detected: python3 -c 'import sglang')",
        "  gpu 0: NVIDIA H100 (1,024 / 81,559 MiB used)",
        "  gpu 1: NVIDIA H100",
        "  service: systemd unit sglang.service: running (active/running)",
        "  runs now: /models/q on port 30000: no speculation (parsed from sglang.service)",
        "  serving: /health 200 on port 30000",
    ]


def test_an_unreachable_box_is_one_line_with_the_error() -> None:
    probe = BoxProbe(target="x", reachable=False, error="host key changed", error_kind="host_key")
    assert probe_lines(probe) == ["box x: UNREACHABLE (host_key): host key changed"]
    assert gpu_text(GpuInfo("T4", 15360, None)) == "T4 (? / 15,360 MiB used)"
