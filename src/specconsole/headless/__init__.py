"""The headless front end: sweeps run from scripts, CI or an unwatched tmux pane, with
progress as lines and the outcome as an exit code (the console's sibling: ``specconsole.ui``)."""
