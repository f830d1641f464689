"""How commands reach the box: this machine's shell or an SSH connection (asyncssh, loaded only when
used), with OpenSSH's config and hints."""
