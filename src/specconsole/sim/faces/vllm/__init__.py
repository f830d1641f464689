"""The vLLM face: everything the simulated box shows of vLLM (``vllm serve MODEL``, releases
0.11.0 and 0.34.0) — its command line and rules onto the box (:mod:`.args`), its server's life
(:mod:`.server`), its log texts (:mod:`.text`) and fatal texts (:mod:`.fatal`), its HTTP API
(:mod:`.http`); :mod:`.face` binds them (``FACE``, registered in
:data:`specconsole.sim.facetable.FACES`)."""
