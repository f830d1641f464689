"""The simulated GPU box: a stand-in for SGLang and vLLM servers where there is no GPU.

There is no GPU on the machines that run the demo, the tests and the benchmarks, yet all of
them must exercise exactly the code paths a real server exercises: a process started with its
engine's flags, a log followed line by line, HTTP endpoints streamed over a socket. This
package is that stand-in, laid out like ``engines/``:

- :mod:`specconsole.sim.faces` — a package per imitated engine (``sglang/``, ``vllm/``)
  holding everything that face imitates: its argument reading and rules onto the box, its log
  lines and fatal texts, its server's life, its HTTP surface;
- :mod:`specconsole.sim.physics` — the shared, pure physics over the launch a face resolves
  (:mod:`~specconsole.sim.physics.launch`): memory plan, speed model, acceptance, adaptive
  controller, latency, rate model; it never imports a face;
- :mod:`specconsole.sim.box` and :mod:`specconsole.sim.scheduler` — the box every face runs;
  :mod:`specconsole.sim.profile` — the TOML description of a model on a box;
- :mod:`specconsole.sim.facetable` — the registry of faces; :mod:`specconsole.sim.forecast` —
  what a deployed configuration would do, resolved through its face; :mod:`specconsole.sim.process`
  — the process (uvicorn), imported only when it runs (the optional ``sim`` extra:
  :mod:`specconsole.sim.serverlibs`).
"""
