"""Inline secrets of the user's unit (issue 33 #8): found in ``Environment=`` and in
``ExecStart=``'s secret flags, and moved — only those bytes — to a 0600 file the unit then
references; the moved unit runs exactly what the original ran."""

from __future__ import annotations

from specconsole.core.launch.systemd import parse_unit
from specconsole.core.launch.unit_read import UnitContext
from specconsole.core.launch.unit_secrets import inline_secrets, move_inline_secrets

ENV_FILE = "/var/backups/specconsole/sglang.service-user-env"
UNIT = """\
[Unit]
Description=x

[Service]
Environment=HF_HOME=/data HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz012345
Environment="WANDB_API_KEY=abc def"
Environment=NOTE=plain
ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m \\
    # a comment: --api-key not-this-one \\
    --api-key sk-live-123456 \\
    --admin-api-key=adm-99999 \\
    --served-model-name ${NAME} \\
    --port 30000
Restart=no
"""


def test_inline_secrets_are_found_by_name_flag_and_shape() -> None:
    found = inline_secrets(UNIT)
    assert [(s.name, s.line, s.variable) for s in found] == [
        ("HF_TOKEN", 5, "HF_TOKEN"),
        ("WANDB_API_KEY", 6, "WANDB_API_KEY"),
        ("--api-key", 10, "SPECCONSOLE_API_KEY"),
        ("--admin-api-key", 11, "SPECCONSOLE_ADMIN_API_KEY"),
    ]
    assert inline_secrets(UNIT, ("NOTE",))[2].name == "NOTE"  # the user's mark


def test_the_move_keeps_what_runs_and_every_other_byte() -> None:
    moved = move_inline_secrets(UNIT, ENV_FILE)
    assert moved is not None
    for value in moved.values:
        assert value not in moved.text
    kept = [line for line in UNIT.splitlines() if not any(v in line for v in moved.values)]
    assert all(line in moved.text.splitlines() for line in kept)
    assert f"EnvironmentFile={ENV_FILE}\nExecStart=" in moved.text
    context = UnitContext(env_files={ENV_FILE: moved.env_file})
    before = parse_unit(UNIT.replace("${NAME}", "n"))
    after = parse_unit(moved.text.replace("${NAME}", "n"), context)
    assert after.extra_args == before.extra_args
    assert dict(after.env) == {"HF_HOME": "/data", "NOTE": "plain"}
    assert move_inline_secrets(moved.text, ENV_FILE) is None  # nothing left to move


def test_a_unit_without_inline_secrets_is_left_alone() -> None:
    plain = "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m\n"
    assert inline_secrets(plain) == () and move_inline_secrets(plain, ENV_FILE) is None
