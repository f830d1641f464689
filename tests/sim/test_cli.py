"""``specconsole sim``: the predict table and the passthrough to the simulator's parser."""

from __future__ import annotations

import pytest

from specconsole.cli import main


def test_sim_predict_calibration_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "predict", "--calibration", "--ladder", "1,64"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[1]: line for line in out.splitlines() if line.startswith("steps")}
    assert "load fails: not_enough_memory" in rows["10"]
    assert "c=64" in out and rows["3"].split()[2] == "349078"


def test_sim_predict_one_config_and_bad_ladder(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "sim",
                "predict",
                "--tp-size",
                "4",
                "--speculative-algorithm",
                "EAGLE3",
                "--ladder",
                "1,8",
            ]
        )
        == 0
    )
    assert "@ c=" in capsys.readouterr().out
    assert main(["sim", "predict", "--ladder", "x"]) == 2
    said = capsys.readouterr()
    assert "--ladder 'x' is not a number" in said.out + said.err  # argparse's usage error


def test_sim_predict_calibration_of_the_vllm_face(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "predict", "--calibration", "vllm", "--ladder", "1,64"]) == 0
    out = capsys.readouterr().out
    assert "llama3.1-8b-eagle3-1xh100-vllm.toml" in out
    rows = [line for line in out.splitlines() if line.startswith("K ")]
    assert [r.split()[1] for r in rows] == [str(k) for k in range(1, 9)], out


def test_sim_passthrough_reaches_the_simulator_parser(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "--port", "not-a-number"]) == 2
    assert "--port" in capsys.readouterr().err
