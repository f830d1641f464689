"""Issue 33 #6/#7: the SSH dead ends of a first contact name the next command — the
fingerprint check for an untrusted key (``[HOST]:PORT`` off port 22), the ``Host`` entries an
ssh config has when an alias does not resolve."""

from __future__ import annotations

from pathlib import Path

from specconsole.remote.transport.sshhints import SshEntry, host_key_fix, lookup, unknown_alias_hint

CONFIG = """\
# my boxes
Host gpu-box gpu
    HostName 10.0.0.5
    Port 2222
    User ubuntu

Host bastion
    HostName=bastion.example.org

Host *.lab
    Port 2200
"""


def test_an_alias_is_looked_up_as_ssh_reads_it(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(CONFIG)
    assert lookup("gpu-box", str(config)) == SshEntry("10.0.0.5", 2222, True)
    assert lookup("gpu", str(config)) == SshEntry("10.0.0.5", 2222, True)
    assert lookup("bastion", str(config)).hostname == "bastion.example.org"
    node = lookup("node1.lab", str(config))
    assert (node.hostname, node.port, node.found) == ("node1.lab", 2200, False)


def test_an_untrusted_key_names_the_fingerprint_check_and_the_bracketed_name() -> None:
    fix = host_key_fix("10.0.0.5", 2222)
    assert "ssh-keyscan -p 2222 10.0.0.5" in fix and "ssh-keygen -lf" in fix
    assert "ssh-keygen -R '[10.0.0.5]:2222'" in fix and "First contact" in fix
    assert "ssh-keygen -R '10.0.0.5'" in host_key_fix("10.0.0.5", 22)


def test_a_mistyped_alias_names_the_hosts_the_config_has(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(CONFIG)
    reason = "[Errno -2] Name or service not known"
    hint = unknown_alias_hint("gpu-bx", reason, str(config))
    assert f"{config} has no Host gpu-bx either" in hint
    assert "gpu-box, gpu, bastion" in hint and "Did you mean 'gpu-box'?" in hint
    assert unknown_alias_hint("gpu-box", reason, str(config)) == ""  # it is there
    assert unknown_alias_hint("gpu-bx", "Connection refused", str(config)) == ""  # resolved
    assert "no ssh config" in unknown_alias_hint("gpu-bx", reason, "")
