"""How a configuration becomes a running server and back: the launch command, the systemd unit
(reading a user's unit, its ExecStart and secrets, writing the managed one), a batch job's
script, and a plan imported from a running unit."""
