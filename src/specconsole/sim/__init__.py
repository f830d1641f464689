"""The simulated SGLang GPU box.

There is no GPU on the machines that run the demo, the tests and the benchmarks, yet all of
them must exercise exactly the code paths a real SGLang server exercises: a process started
with SGLang's flags, a log followed line by line, HTTP endpoints streamed over a socket. This
package is that stand-in. It is split so the physics can be used without any I/O:

- :mod:`specconsole.sim.profile` — the typed, TOML-loaded description of a model on a box;
- :mod:`specconsole.sim.args` — SGLang's argument rules (auto defaults, warnings, errors);
- :mod:`specconsole.sim.physics.model` — the memory model (KV capacity, load failures) and the
  performance model (accept length, step time, ``predict``);
- :mod:`specconsole.sim.faces.sglang_log` — SGLang's log lines, in its exact formats;
- :mod:`specconsole.sim.faces.sglang_server` — the simulated server's life (load sequence,
scheduler,
  faults, dying like SGLang); :mod:`specconsole.sim.faces.sglang_http` its HTTP API (starlette) and
  :mod:`specconsole.sim.faces.streams` its streamed answers; :mod:`specconsole.sim.process` the
  process (uvicorn) — imported only when the process runs.
"""
