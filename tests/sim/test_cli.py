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


def test_sim_predict_schedule(capsys: pytest.CaptureFixture[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert main(["sim", "predict", "--schedule"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0] + " " + line.split()[1]: line.split() for line in out.splitlines()}
    schedule = next(v for k, v in rows.items() if k.startswith("schedule 1-2:5,3-8:4,9+:3"))
    steps3, steps5 = rows["steps 3"], rows["steps 5"]
    # c=1 as steps 5, c=16..64 as steps 3 (columns: name, range, capacity, accept, c=1 ..)
    assert schedule[4] == steps5[4] and schedule[6:9] == steps3[6:9]
    assert "none" in out
    # a schedule file on disk, predicted as the simulated server would run it
    path = tmp_path / "adaptive.json"
    path.write_text('{"1": {"candidate_steps": [5]}, "9": {"candidate_steps": [3]}}')
    argv = ["sim", "predict", "--tp-size", "4", "--speculative-algorithm", "EAGLE3",
            "--speculative-num-steps", "5", "--speculative-eagle-topk", "1",
            "--mem-fraction-static", "0.88", "--cuda-graph-max-bs", "64",
            "--max-running-requests", "64", "--speculative-adaptive",
            "--speculative-adaptive-config", str(path), "--ladder", "1,64"]  # fmt: skip
    assert main(argv) == 0
    config = capsys.readouterr().out.splitlines()[-1].split()
    assert config[3] == steps5[4] and config[4] == steps3[8]


def test_a_reader_that_goes_away_ends_the_command_quietly() -> None:
    """``specconsole sim predict … | head -1``: no traceback, the shell's SIGPIPE status."""
    import subprocess
    import sys

    run = subprocess.run(
        f"{sys.executable} -m specconsole sim predict --calibration | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        executable="/bin/bash",
    )
    assert run.stdout.startswith("profile "), run.stdout
    assert "Traceback" not in run.stderr and "BrokenPipe" not in run.stderr, run.stderr
