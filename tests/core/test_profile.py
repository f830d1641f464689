"""The [host]/[service] profile parser: defaults, and errors that name the key and the fix."""

from __future__ import annotations

import pytest

from specconsole.core.plans.profile import (
    ProfileError,
    ServiceKind,
    TransportKind,
    UnitScope,
    loads_profile,
)


def test_defaults_are_local_process() -> None:
    profile = loads_profile("")
    assert profile.host.transport is TransportKind.LOCAL
    assert profile.service.kind is ServiceKind.PROCESS


def test_full_ssh_systemd_profile() -> None:
    profile = loads_profile(
        """
[host]
transport = "ssh"
alias = "gpu-box"
user = "ubuntu"
port = 2222
identity_files = "~/.ssh/id_ed25519"
proxy_jump = "bastion"
connect_timeout = 5

[service]
kind = "systemd"
unit = "sglang.service"
scope = "user"
"""
    )
    assert profile.host.target() == "gpu-box"
    assert profile.host.identity_files == ("~/.ssh/id_ed25519",)
    assert profile.host.connect_timeout == 5.0
    assert profile.service.scope is UnitScope.USER
    assert profile.service.resolved_unit_dir() == "~/.config/systemd/user"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[host]\ntransport = "telnet"', "[host] transport = 'telnet' is not valid"),
        ('[host]\ntransport = "ssh"', "needs alias"),
        ('[host]\nport = "22"', "[host] port must be an integer"),
        ("[host]\nport = 70000", "between 1 and 65535"),
        ("[host]\nhots = 1", "[host] unknown key 'hots'"),
        ("[host]\nconnect_timeout = 0", "[host] connect_timeout must be greater than 0"),
        ("[service]\nsudo = 1", "[service] sudo must be true or false"),
        ('[service]\nkind = "k8s"', "[service] kind = 'k8s' is not valid"),
        ('[service]\nunit = "sglang"', "must be a unit name ending in .service"),
        ('[service]\nscope = "global"', "[service] scope"),
        ("[service]\nstop_timeout = true", "not a boolean"),
        ("host = 3", "[host] must be a table"),
        ("[host", "not valid TOML"),
    ],
)
def test_errors_name_the_key(text: str, needle: str) -> None:
    with pytest.raises(ProfileError) as info:
        loads_profile(text)
    assert needle in str(info.value)
