"""What a deploy changes, in words: the flag diff of a trial against the running server, and the
diff pane's rows."""
