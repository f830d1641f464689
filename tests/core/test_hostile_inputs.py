"""The second hostile-input round (issue 27): each class refused with the field and the fix,
never a traceback — nesting (#7), ports and URLs (#8), output paths and missing programs (#9),
control characters and names that reach a shell or a unit (#11), unknown tables (#12), the
simulator's bounds (#13), record numbers and waits (#14), errors that name nothing (#15)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specconsole.cli import main
from specconsole.core.config.bounds import control_char_problem
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import PlanError
from specconsole.core.plans.profile import ProfileError, loads_profile
from specconsole.session.store import Session
from tests.controller.helpers import PLAN_TEXT

ROOT = Path(__file__).resolve().parents[2]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "Traceback" not in text
    return code, text


@pytest.mark.parametrize("command", ["validate", "render"])
@pytest.mark.parametrize(
    "body",
    [
        "extra_args = " + "[" * 5000 + "]" * 5000,
        "env = " + "{a = " * 3000 + "1" + "}" * 3000,
        "extra_args = " + "[" * 40 + "]" * 40,
    ],
    ids=["arrays", "inline tables", "just past the limit"],
)
def test_deep_nesting_is_an_error_not_a_recursion(
    command: str, body: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.toml"
    path.write_text(f'[server]\nmodel_path = "m"\n{body}\n')
    code, text = run([command, str(path)], capsys)
    assert code == 2 and "more than 32 deep" in text


def test_deep_nesting_in_a_plan_a_profile_and_a_session_record(tmp_path: Path) -> None:
    deep = "x = " + "[" * 5000 + "]" * 5000
    with pytest.raises(PlanError, match="more than 32 deep"):
        loads_plan(PLAN_TEXT + f"\n[ui]\n{deep}\n")
    with pytest.raises(ProfileError, match="more than 32 deep"):
        loads_profile(f"[host]\n{deep}\n")
    session = Session.create(tmp_path, loads_plan(PLAN_TEXT))
    session.trials_path.write_text("[" * 100_000 + "]" * 100_000 + "\n{}\n")
    with pytest.raises(Exception, match="more than 32 deep") as caught:
        session.load_trials()
    assert not isinstance(caught.value, RecursionError)


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_the_simulators_port_is_bounded(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = run(["sim", "--port", port], capsys)
    assert code != 0 and "port must be 0-65535" in text


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--ladder", "10000000000000"], "--ladder = 10000000000000 is above the limit"),
        (["--ladder", "0"], "--ladder must be greater than 0"),
        (["--output-len", "1e13"], "--output-len"),
        (["--input-len", "-4"], "--input-len must be greater than 0"),
        (
            [
                "--model-path",
                "/m",
                "--speculative-algorithm",
                "EAGLE3",
                "--speculative-num-steps",
                "100000000",
                "--speculative-eagle-topk",
                "1",
                "--speculative-num-draft-tokens",
                "4",
            ],
            "above the simulator's limit of 64",
        ),
        (
            [
                "--model-path",
                "/m",
                "--speculative-algorithm",
                "EAGLE3",
                "--speculative-num-steps",
                "-3",
                "--speculative-eagle-topk",
                "1",
                "--speculative-num-draft-tokens",
                "4",
            ],
            "--speculative-num-steps -3: must be",
        ),
        # issue 44: refused even where the engine would ignore it (no algorithm named)
        (["--speculative-num-steps", "-3"], "--speculative-num-steps -3: must be a finite"),
        (["--mem-fraction-static", "7"], "a share of GPU memory is at most 1"),
        (["--max-running-requests", "-64"], "--max-running-requests -64: must be"),
    ],
)
def test_sim_predict_is_bounded(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = run(["sim", "predict", *argv], capsys)
    assert code == 2 and expected in text


def test_outputs_that_are_folders_are_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = run(["bench", "--output-file", str(tmp_path), "http://127.0.0.1:1"], capsys)
    assert code == 2 and "is a folder" in text
    profile = tmp_path / "p.toml"
    profile.write_text('[host]\ntransport = "local"\n')
    code, text = run(["import", str(profile), "-o", str(tmp_path)], capsys)
    assert code == 1 and "-o" in text and "is a folder" in text


def test_import_without_sh_on_the_path_names_the_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text('[host]\ntransport = "local"\n')
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, text = run(["import", str(profile)], capsys)
    assert code == 1 and "cannot start sh on this machine" in text and "PATH" in text


@pytest.mark.parametrize("char", ["\x85", "\u2028", "\u2029", "\x9b", "\x1b", "\u202e", "\x00"])
def test_every_line_breaking_or_disguising_character_is_a_control_character(char: str) -> None:
    assert control_char_problem(f"/models/a{char}b")


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('[service]\nunit = "a\\nb.service"', "[service] unit"),
        ('[service]\nunit = "-x.service"', "is not a systemd unit name"),
        ('[service]\nunit = "a b.service"', "is not a systemd unit name"),
        ('[host]\ntransport = "ssh"\nalias = "-oProxyCommand=sh"', "starts with '-'"),
        ('[host]\ntransport = "ssh"\nalias = "box; rm -rf /"', "not an ssh Host alias"),
        ('[host]\ntransport = "ssh"\nhostname = "127.0.0.1; rm -rf /"', "not a hostname"),
        ('[host]\ntransport = "ssh"\nalias = "box\\u2028x"', "control character"),
        ('[host]\ntransport = "ssh"\nalias = "b"\nuser = "root -x"', "not a login name"),
        ('[host]\ntransport = "ssh"\nalias = "b"\nconnect_timeout = inf', "finite"),
        ('[host]\ntransport = "ssh"\nalias = "b"\nconnect_timeout = nan', "finite"),
        ("[service]\nkeep_backups = 100000000", "above the limit"),
        ('[service]\nsecret_env = ["A B"]', "neither a variable name nor a --flag"),
    ],
)
def test_names_that_reach_a_shell_or_a_unit_are_refused(table: str, expected: str) -> None:
    with pytest.raises(ProfileError, match=r"fix|not|limit|finite") as caught:
        loads_profile(table)
    assert expected in str(caught.value)


def test_a_server_host_that_is_a_shell_word_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[server]\nmodel_path = "m"\nhost = "127.0.0.1; rm -rf /"\n')
    code, text = run(["validate", str(path)], capsys)
    assert code == 1 and "host:" in text and "fix:" in text


def test_a_misspelt_table_is_named_with_the_closest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(PLAN_TEXT.replace("[sweep]", "[sweeep]", 1))
    for command in ("validate", "render"):
        code, text = run([command, str(path)], capsys)
        assert code == 2 and "unknown key 'sweeep'; did you mean 'sweep'?" in text


@pytest.mark.parametrize(
    ("index", "expected"),
    [(-1, "index -1 is not a trial number"), (10**12, "is not a trial number"), (0, "twice")],
)
def test_records_with_impossible_indexes_are_refused_by_report_and_resume(
    index: int, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from specconsole.core.machine.state import TrialRecord, TrialStatus

    plan = loads_plan(PLAN_TEXT)
    session = Session.create(tmp_path, plan)
    session.append_trial(TrialRecord(index=0, config=plan.base, status=TrialStatus.OK))
    line = json.loads(session.trials_path.read_text().splitlines()[0])
    line["index"] = index
    with open(session.trials_path, "a") as out:
        out.write(json.dumps(line) + "\n")
    for command in (["report", str(session.path)], ["resume", str(session.path)]):
        code, text = run(command, capsys)
        assert code != 0 and expected in text and "record 2" in text, text


def test_rollback_wait_is_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = run(["rollback", str(tmp_path), "--wait", "-5"], capsys)
    assert code == 2 and "--wait must be greater than 0" in text


def test_a_binary_dataset_names_the_file_and_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "prompts.jsonl"
    data.write_bytes(b'{"prompt": "hi"}\n\xff\xfe\x00binary\n')
    for source in (f"jsonl:{data}", f"sharegpt:{data}"):
        code, text = run(["bench", "--dataset", source, "http://127.0.0.1:1"], capsys)
        assert code == 2 and str(data) in text and "not UTF-8" in text


def test_the_shipped_optimize_example_validates(capsys: pytest.CaptureFixture[str]) -> None:
    code, text = run(["validate", str(ROOT / "examples" / "optimize-sweep.toml")], capsys)
    assert code == 0, text
    assert "optimize skips them" in text or " OK " in text


def test_resume_names_a_damaged_session_file_before_asking_for_its_secrets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 44: the session's own files are checked first — a damaged ``session.toml`` is
    named (and rebuilt from the records) before ``resume`` asks for a secret it needs; a
    damaged ``trials.jsonl`` stops it before the secret is asked for at all."""
    monkeypatch.delenv("SPECCONSOLE_API_KEY", raising=False)
    text = PLAN_TEXT.replace(
        "max_running_requests = 64",
        'max_running_requests = 64\nextra_args = ["--api-key", "s3cret-value"]',
    )
    session = Session.create(tmp_path, loads_plan(text))
    meta = session.path / "session.toml"
    meta.write_text(meta.read_text() + "garbage = [\n")
    code, out = run(["resume", str(session.path)], capsys)
    assert code != 0 and "s3cret-value" not in out
    damaged, secret = out.find("session.toml"), out.find("SPECCONSOLE_API_KEY")
    assert 0 <= damaged < secret, out
    (session.path / "trials.jsonl").write_text('{"index": 0, trunc\n{"also": "bad"}\n')
    code, out = run(["resume", str(session.path)], capsys)
    assert code != 0 and "trials.jsonl: line 1" in out and "SPECCONSOLE_API_KEY" not in out
