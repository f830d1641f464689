"""The sweep plan: what to try, where, how to measure it and what "best" means.

``plan`` is the model, ``parse`` and ``tables`` read and write the TOML file, ``profile`` the
``[host]`` / ``[service]`` tables, ``pool`` several boxes, ``placeholders`` what is resolved at
run time, ``objective`` and ``goalparse`` the objective and its constraints, ``decoding`` the
bytes of a file turned into text with an error a person can act on.
"""
