"""The machine's handlers by concern, each a pure function of (state, event): the trial's pipeline,
loading and its watch, measuring, a crash, a decision deferred, speculation off, GPU telemetry
and the pre-flight. ``core.machine.table`` routes each event to one."""
