"""The box probe as plain data: parsing nvidia-smi, the session table, and the machine
carrying the probe in ``ControllerState.box`` (in every phase and epoch)."""

from __future__ import annotations

from dataclasses import replace

import tomli_w

from specconsole.core.boxfacts import BoxProbe, GpuInfo, parse_gpus, probe_table
from specconsole.core.config.model import ServerConfig
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import ConnectionState, ControllerState, Phase
from specconsole.core.machine.table import step
from tests.controller.helpers import Driver


def test_parse_gpus_reads_units_and_plain_numbers_and_skips_noise() -> None:
    text = (
        "NVIDIA H100 80GB HBM3, 81559, 1024\n"
        "NVIDIA A10G, 23028 MiB, 0 MiB\n"
        "\n"
        "No devices were found\n"
        "Tesla T4, [N/A], [N/A]\n"
    )
    assert parse_gpus(text) == (
        GpuInfo("NVIDIA H100 80GB HBM3", 81559, 1024),
        GpuInfo("NVIDIA A10G", 23028, 0),
        GpuInfo("Tesla T4", None, None),
    )
    assert parse_gpus("") == ()


def test_a_name_with_a_comma_keeps_it() -> None:
    assert parse_gpus("Weird, GPU, 10, 2") == (GpuInfo("Weird, GPU", 10, 2),)


def _probe(**kw: object) -> BoxProbe:
    base = BoxProbe(
        target="gpu-box (ssh 127.0.0.1:2222)",
        at=5.0,
        engine="sglang",
        engine_version="0.5.4",
        engine_version_source="detected",
        gpus=(GpuInfo("NVIDIA H100", 81559, 10),),
        service="systemd unit sglang.service",
        service_state="running",
        service_detail="active/running",
        running_config=ServerConfig(model_path="/m", env=(("HF_TOKEN", "<redacted>"),)),
        running_config_detail="parsed from sglang.service",
        serving=True,
        serving_detail="/health 200",
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def test_probe_table_is_toml_ready_and_keeps_only_what_it_has() -> None:
    table = probe_table(_probe())
    tomli_w.dumps(table)  # serialisable as it is
    assert table["reachable"] is True and table["serving"] is True
    assert table["gpus"] == [
        {"name": "NVIDIA H100", "memory_total_mib": 81559, "memory_used_mib": 10}
    ]
    assert table["running_config"]["model_path"] == "/m"
    assert table["running_config"]["env"] == {"HF_TOKEN": "<redacted>"}
    down = probe_table(
        BoxProbe(target="x", reachable=False, error="cannot resolve", error_kind="unreachable")
    )
    assert down == {
        "target": "x",
        "at": 0.0,
        "reachable": False,
        "error": "cannot resolve",
        "error_kind": "unreachable",
    }
    unasked = probe_table(_probe(serving=None, running_config=None, gpus=()))
    assert "serving" not in unasked and "running_config" not in unasked and unasked["gpus"] == []


def test_the_machine_carries_the_probe_and_marks_the_connection() -> None:
    d = Driver()
    d.send(ev.BoxProbed(probe=_probe()))
    assert d.state.box == _probe()
    assert d.state.connection is ConnectionState.CONNECTED
    assert d.state.notice is None and d.effects == ()


def test_an_unreachable_box_is_said_at_once() -> None:
    d = Driver()
    probe = BoxProbe(
        target="no-such-host.invalid",
        reachable=False,
        error="cannot connect to no-such-host.invalid: Name or service not known",
        error_kind="unreachable",
    )
    d.send(ev.BoxProbed(probe=probe))
    assert d.state.box is probe and d.state.connection is ConnectionState.LOST
    assert d.state.notice is not None and d.state.notice.level == "error"
    assert "Name or service not known" in d.state.notice.text


def test_a_probe_holds_in_any_phase_and_epoch() -> None:
    d = Driver()
    d.to_phase(Phase.BENCHMARKING)
    state = replace(d.state, connection=ConnectionState.RECONNECTING)
    new, effects = step(state, ev.BoxProbed(probe=_probe(), epoch=state.epoch + 7, at=1.0))
    assert new.box == _probe() and effects == ()
    assert new.phase is Phase.BENCHMARKING
    assert new.connection is ConnectionState.RECONNECTING  # a live state is not overwritten
    assert ControllerState().box is None
