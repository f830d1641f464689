"""The console's box panel and the header's connection word, from the state alone."""

from __future__ import annotations

import dataclasses

from specconsole.core.boxfacts import BoxProbe
from specconsole.core.machine.state import ConnectionState, ControllerState
from specconsole.present.box import box_panel, box_shown, connection_word


def test_connecting_then_the_probe_then_the_live_connection() -> None:
    state = ControllerState(labels=(("host", "gpu-box"),))
    assert connection_word(state) == "connecting…"
    assert box_panel(state).headline == "box gpu-box: connecting… (probing the box)"
    assert box_panel(state).ok is None and box_shown(state)
    probe = BoxProbe(
        target="gpu-box (ssh)",
        engine="sglang",
        service="systemd unit sglang.service",
        service_state="running",
        serving=True,
        serving_detail="/health 200",
    )
    up = dataclasses.replace(state, box=probe, connection=ConnectionState.CONNECTED)
    view = box_panel(up)
    assert view.ok is True and view.headline == "box gpu-box (ssh): reachable"
    assert "service: systemd unit sglang.service: running ()" in view.lines
    assert "serving: /health 200" in view.lines
    assert connection_word(up) == "connected"
    again = dataclasses.replace(up, connection=ConnectionState.RECONNECTING)
    assert connection_word(again) == "reconnecting"


def test_an_unreachable_box_is_shown_even_during_a_trial() -> None:
    probe = BoxProbe(target="x", reachable=False, error="Name not known", error_kind="unreachable")
    state = ControllerState(box=probe, connection=ConnectionState.LOST)
    assert connection_word(state) == "unreachable"
    view = box_panel(state)
    assert view.ok is False and "UNREACHABLE (unreachable): Name not known" in view.headline
    assert box_shown(state)
