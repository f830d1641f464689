"""The trial state machine: ``step(state, event) -> (state, effects)``, pure and table-driven.

Why a pure machine (h11 / sans-I/O style): every decision of the controller (deploy what,
when a crash is a crash, what a resume choice does, when the sweep stops) is made here from
data alone, so it is tested as tables of (state, event) → (state, effects) with no SSH, HTTP,
threads or clocks, and the async runtime (``specconsole.controller``) is a thin interpreter.

Rules:

* All transitions live in ``TRANSITIONS`` (phase × event type → handler) and ``ANYWHERE``
  (event types legal in every phase). Anything else raises ``IllegalTransition`` naming the
  event and the phase; a handler may also raise it when a precondition fails ("nothing is
  deployed", "no plan loaded").
* Outcomes carry the epoch of the effect that caused them. The epoch is bumped whenever a
  trial begins, so answers belonging to an earlier trial (a cancelled deploy, the previous
  server's log stream) are dropped without effect.
* Late outcomes of a cancelled trial that arrive while the controller rests (same epoch) are
  ignored; watch events in resting phases only update what is known about the server.

A trial runs VALIDATING → DEPLOYING → RESTARTING → LOADING (weights, KV cache, CUDA graphs)
→ READY → FLUSHING → BENCHMARKING → RECORDING, then the strategy picks the next one. A fatal
log line, the process exiting or the load timeout moves a trial in LOADING..BENCHMARKING to
CRASHED: the server is stopped (no restart loop), and once it is down the crash is recorded;
under the ``pause`` policy the controller then waits in AWAITING_DECISION for a
``Resume(choice)``.

Where things are: ``table`` (``step`` and the table), ``state`` (the snapshot every view
renders), ``intents`` (what a user may ask and in which phases: ``legal_intents``),
``events`` (every input: the intents and the runtime's outcomes), ``effects``,
``handlers/`` (``intents``, ``pipeline``, ``crash``, ``trial``, …: what each event does) and
``common`` (shared helpers and phase sets).

This package's ``__init__`` imports nothing: the console's first frame loads ``state`` and
``intents`` alone, and the table with its handlers comes with the controller
(``tests/test_startup_imports.py``).
"""
