"""The SGLang face: everything the simulated box shows of SGLang (``python -m
sglang.launch_server``) — its flags (:mod:`.args`), its rules onto the box (:mod:`.resolve`,
its adaptive config file :mod:`.adaptive`), its log lines and fatal texts (:mod:`.log`), its
server's life (:mod:`.server`, the statistics lines :mod:`.steps`), its HTTP API
(:mod:`.http`, the native stream :mod:`.generate`); :mod:`.face` binds them
(``FACE``, registered in :data:`specconsole.sim.facetable.FACES`)."""
